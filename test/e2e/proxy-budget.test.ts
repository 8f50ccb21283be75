// Monthly token budgets through the official SDKs: a spent budget stops the project's calls before any reaches the
// provider, in each provider's error shape, until the operator raises it; last month's usage does not count.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { officialClients, type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';
import { usageMonth } from '../../src/store/types.js';

let h: ProxyHarness;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  h = await startProxyHarness();
  ({ openai, anthropic } = officialClients(h));
});
afterAll(async () => {
  await h.close();
});

const messages = [{ role: 'user' as const, content: 'count my tokens' }];
// The fake provider's usage for these messages: 3 words in, 'Echo:' + 3 words out.
const kCallTokens = 3 + 4;

async function caught(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('monthly token budgets', () => {
  it('403 budget_exceeded in each provider shape once the month used the budget, with no upstream call', async () => {
    const now = Date.now();
    const month = usageMonth(now);
    const lastMonth = usageMonth(Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 0));
    // Last month's calls count against last month only.
    await h.store.insertRequestLog({
      projectId: h.projectId, keyId: h.acmeKeyId, provider: 'provider-a', model: 'provider-a:old', stream: false, status: 200,
      ttfbMs: 1, totalMs: 1, tokensIn: 1_000_000, tokensOut: 0, error: null, requestBody: '{}', responseBody: '{}',
      createdAt: Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1) - 1,
    });
    expect(await h.store.getProjectUsage(h.projectId, lastMonth)).toBe(1_000_000);
    await h.store.setProjectBudget(h.projectId, 2 * kCallTokens);

    await openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages });
    await h.rowFor('provider-a:gpt-fake');
    expect(await h.store.getProjectUsage(h.projectId, month)).toBe(kCallTokens);
    // Under budget still: a stream goes through and counts (the proxy asks for its usage).
    const stream = await openai.chat.completions.create({ model: 'provider-a:gpt-stream', messages, stream: true });
    for await (const chunk of stream) void chunk;
    await h.rowFor('provider-a:gpt-stream');
    expect(await h.store.getProjectUsage(h.projectId, month)).toBe(2 * kCallTokens);

    const upstreamCalls = h.fake.requests.length;
    const message = `The project '${h.projectId}' has used ${2 * kCallTokens} of its ${2 * kCallTokens} proxy tokens for ${month} (UTC); the budget starts again next month, or the operator can raise it`;
    const openaiError = await caught(openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages }));
    expect(openaiError).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(openaiError.error).toEqual({ message, type: 'permission_error', param: null, code: 'budget_exceeded' });
    const streamError = await caught(openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages, stream: true }));
    expect(streamError).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const anthropicError = await caught(anthropic.messages.create({ model: 'provider-c:claude-fake', max_tokens: 8, messages }));
    expect(anthropicError).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(anthropicError.error).toEqual({ type: 'error', error: { type: 'permission_error', message } });
    const mistralResponse = await fetch(`${h.sdkBase}v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${h.acmeKey}` },
      body: JSON.stringify({ model: 'provider-b:mistral-fake', messages }),
    });
    expect(mistralResponse.status).toBe(403);
    expect(await mistralResponse.json()).toEqual({ object: 'error', message, type: 'permission_error', param: null, code: '403' });
    expect(h.fake.requests.length).toBe(upstreamCalls);

    // The operator raises the budget (or removes it): calls go through again.
    await h.store.setProjectBudget(h.projectId, 3 * kCallTokens);
    const completion = await openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages });
    expect(completion.usage?.total_tokens).toBe(kCallTokens);
    expect(h.fake.requests.length).toBe(upstreamCalls + 1);
    await h.store.setProjectBudget(h.projectId, null);
  });
});
