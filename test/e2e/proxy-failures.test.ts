// Failures as the official SDKs see them: access errors, spent budgets, upstream errors, timeouts, cut streams,
// disconnects.
import { createServer } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { Mistral } from '@mistralai/mistralai';
import { SDKError } from '@mistralai/mistralai/models/errors';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatChunks } from '../../fixtures/fake-provider.js';
import { officialClients, type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';
import { usageMonth } from '../../src/store/types.js';

let h: ProxyHarness;
let openai: OpenAI;
let mistral: Mistral;
let anthropic: Anthropic;

beforeAll(async () => {
  h = await startProxyHarness();
  ({ openai, mistral, anthropic } = officialClients(h));
});
afterAll(async () => {
  await h.close();
});

const messages = [{ role: 'user' as const, content: 'hello there' }];

async function caught(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

async function drain(iterable: AsyncIterable<unknown>, seen: unknown[] = []): Promise<unknown[]> {
  for await (const item of iterable) seen.push(item);
  return seen;
}

describe('access', () => {
  it('401 without a key or with an unknown one, in the openai shape', async () => {
    const unknown = new OpenAI({ baseURL: h.sdkBase, apiKey: 'svc_not_a_key', maxRetries: 0 });
    const error = await caught(unknown.chat.completions.create({ model: 'provider-a:x', messages }));
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error.error).toEqual({ message: 'Invalid API key', type: 'authentication_error', param: null, code: 'authentication' });
    const response = await fetch(`${h.sdkBase}chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({
      error: {
        message: "Missing API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'",
        type: 'authentication_error',
        param: null,
        code: 'authentication',
      },
    });
  });

  it('403 when the organization has no proxy access, with how to get it', async () => {
    const globex = new OpenAI({ baseURL: `${h.base}/v2/${h.globexProjectId}/`, apiKey: h.globexKey, maxRetries: 0 });
    const error = await caught(globex.chat.completions.create({ model: 'provider-a:x', messages }));
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(error.message).toBe("403 The organization 'globex' has no proxy access; request access from the operator");
  });

  it("404 alike on another organization's project and on an unknown one, in the anthropic shape", async () => {
    const other = new Anthropic({ baseURL: `${h.base}/v2/${h.globexProjectId}/`, apiKey: h.acmeKey, maxRetries: 0 });
    const foreign = await caught(other.messages.create({ model: 'provider-c:x', max_tokens: 8, messages }));
    expect(foreign).toBeInstanceOf(Anthropic.NotFoundError);
    expect(foreign.error).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: "The project 'proj_globex00001' does not exist" },
    });
    const missing = new Anthropic({ baseURL: `${h.base}/v2/proj_nothere0000/`, apiKey: h.acmeKey, maxRetries: 0 });
    const notFound = await caught(missing.messages.create({ model: 'provider-c:x', max_tokens: 8, messages }));
    expect(notFound).toBeInstanceOf(Anthropic.NotFoundError);
    expect(notFound.error).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: "The project 'proj_nothere0000' does not exist" },
    });
  });

  it('400 naming the known prefixes when the model has none the route serves', async () => {
    const error = await caught(openai.chat.completions.create({ model: 'gpt-4o', messages }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.error).toEqual({
      message: "model 'gpt-4o' has no known provider prefix; known prefixes: provider-a:, provider-b:",
      type: 'invalid_request_error',
      param: 'model',
      code: 'invalid_request',
    });
    const wrongRoute = await caught(anthropic.messages.create({ model: 'provider-a:gpt-4o', max_tokens: 8, messages }));
    expect(wrongRoute).toBeInstanceOf(Anthropic.BadRequestError);
    expect(wrongRoute.error.error.message).toBe(
      'provider-a models are served on /v2/{project_id}/chat/completions, not on this route; this route takes provider-c:',
    );
    const anthropicModel = await caught(openai.chat.completions.create({ model: 'provider-c:claude-x', messages }));
    expect(anthropicModel).toBeInstanceOf(OpenAI.BadRequestError);
    expect(anthropicModel.error.message).toBe(
      'provider-c models are served on /v2/{project_id}/v1/messages, not on this route; this route takes provider-a:, provider-b:',
    );
    const mistralError = await caught(mistral.chat.complete({ model: 'mistral-small', messages }));
    expect(mistralError).toBeInstanceOf(SDKError);
    expect(mistralError.statusCode).toBe(400);
    expect(JSON.parse(mistralError.body)).toEqual({
      object: 'error',
      message: "model 'mistral-small' has no known provider prefix; known prefixes: provider-a:, provider-b:",
      type: 'invalid_request_error',
      param: 'model',
      code: '400',
    });
  });
});

describe('request bodies', () => {
  it("413 over the body limit and 400 for a body that is not JSON, in the client's error shape", async () => {
    const small = await startProxyHarness({ bodyLimit: 1024 });
    try {
      const client = new Anthropic({ baseURL: small.sdkBase, apiKey: small.acmeKey, maxRetries: 0 });
      const error = await caught(
        client.messages.create({ model: 'provider-c:x', max_tokens: 8, messages: [{ role: 'user', content: 'x'.repeat(2000) }] }),
      );
      expect(error).toBeInstanceOf(Anthropic.APIError);
      expect(error.status).toBe(413);
      expect(error.error).toEqual({
        type: 'error',
        error: { type: 'request_too_large', message: 'The request body is larger than the limit of 1024 bytes' },
      });
      // A caller without a valid key is turned away before the body is read.
      const stranger = new Anthropic({ baseURL: small.sdkBase, apiKey: 'svc_unknown', maxRetries: 0 });
      const unknown = await caught(
        stranger.messages.create({ model: 'provider-c:x', max_tokens: 8, messages: [{ role: 'user', content: 'x'.repeat(2000) }] }),
      );
      expect(unknown).toBeInstanceOf(Anthropic.AuthenticationError);
      const response = await fetch(`${small.sdkBase}chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${small.acmeKey}` },
        body: '{"model":',
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        error: { message: 'request body must be valid JSON', type: 'invalid_request_error', param: null, code: 'invalid_request' },
      });
    } finally {
      await small.close();
    }
  });
});

describe('upstream errors pass through', () => {
  it("429 keeps retry-after and raises each SDK's rate-limit error", async () => {
    const error = await caught(openai.chat.completions.create({ model: 'provider-a:fail-429', messages }));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.headers.get('retry-after')).toBe('7');
    expect(error.error).toEqual({ message: 'fake provider failure 429', type: 'rate_limit_exceeded', param: null, code: null });
    const streamed = await caught(openai.chat.completions.create({ model: 'provider-a:fail-429', messages, stream: true }));
    expect(streamed).toBeInstanceOf(OpenAI.RateLimitError);
    const anthropicError = await caught(anthropic.messages.create({ model: 'provider-c:fail-429', max_tokens: 8, messages }));
    expect(anthropicError).toBeInstanceOf(Anthropic.RateLimitError);
    expect(anthropicError.headers.get('retry-after')).toBe('7');
    const mistralError = await caught(mistral.chat.complete({ model: 'provider-b:fail-429', messages }));
    expect(mistralError).toBeInstanceOf(SDKError);
    expect(mistralError.statusCode).toBe(429);
    expect(mistralError.headers.get('retry-after')).toBe('7');
    expect(await h.rowFor('provider-b:fail-429')).toMatchObject({
      provider: 'provider-b',
      status: 429,
      error: 'provider-b answered 429: fake provider failure 429',
    });
  });

  it("500 raises the SDK's server error", async () => {
    const error = await caught(anthropic.messages.create({ model: 'provider-c:fail-500', max_tokens: 8, messages }));
    expect(error).toBeInstanceOf(Anthropic.InternalServerError);
    expect(error.status).toBe(500);
    expect(error.error).toEqual({ type: 'error', error: { type: 'api_error', message: 'fake provider failure 500' } });
  });

  it('504 when the upstream sends nothing within the timeout', async () => {
    const error = await caught(openai.chat.completions.create({ model: 'provider-a:hang', messages }));
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(504);
    expect(error.error).toEqual({
      message: 'provider-a sent nothing for 1000 ms',
      type: 'timeout_error',
      param: null,
      code: 'upstream_timeout',
    });
    const closed = await h.fake.closed('hang');
    expect(closed.closedEarly).toBe(true);
  });

  it('502 when the upstream is unreachable', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const down = await startProxyHarness({ providers: { 'provider-a': { url: `http://127.0.0.1:${port}/v1`, key: 'k' } } });
    try {
      const client = new OpenAI({ baseURL: down.sdkBase, apiKey: down.acmeKey, maxRetries: 0 });
      const error = await caught(client.chat.completions.create({ model: 'provider-a:x', messages }));
      expect(error).toBeInstanceOf(OpenAI.InternalServerError);
      expect(error.status).toBe(502);
      expect(error.error).toEqual({
        message: 'provider-a is unreachable (ECONNREFUSED)',
        type: 'upstream_error',
        param: null,
        code: 'upstream_error',
      });
      const [row] = await down.logRows(1);
      expect(row).toMatchObject({ status: 502, error: 'provider-a is unreachable (ECONNREFUSED)', tokensIn: null, tokensOut: null });
    } finally {
      await down.close();
    }
  });
});

describe('streams', () => {
  it('sends : ping comments while the first upstream byte is late, then the stream exactly as sent', async () => {
    const response = await fetch(`${h.sdkBase}chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${h.acmeKey}` },
      body: JSON.stringify({ model: 'provider-a:slow-350', messages, stream: true }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('x-accel-buffering')).toBe('no');
    const text = await response.text();
    const pings = /^(: ping\n\n)+/.exec(text)![0];
    expect(pings.length / ': ping\n\n'.length).toBeGreaterThanOrEqual(2);
    const usage = { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 };
    expect(text.slice(pings.length)).toBe(chatChunks('a', 'slow-350', ['Echo:', ' hello', ' there'], usage, false).join(''));

    const stream = await openai.chat.completions.create({ model: 'provider-a:slow-350', messages, stream: true });
    const deltas = (await drain(stream)).map((chunk: any) => chunk.choices[0]?.delta.content ?? '');
    expect(deltas.join('')).toBe('Echo: hello there');
  });

  it('an upstream error that comes after the pings ends the stream with an error event', async () => {
    const stream = await openai.chat.completions.create({ model: 'provider-a:slow-300-then-fail-500', messages, stream: true });
    const error = await caught(drain(stream));
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.error).toEqual({
      message: 'provider-a answered 500: fake provider failure 500',
      type: 'api_error',
      param: null,
      code: 'upstream_error',
    });
    expect(await h.rowFor('provider-a:slow-300-then-fail-500')).toMatchObject({
      status: 200,
      stream: true,
      error: 'provider-a answered 500: fake provider failure 500',
    });
  });

  it('a stream the upstream cuts ends with an error event each SDK raises', async () => {
    const seen: any[] = [];
    const stream = await openai.chat.completions.create({ model: 'provider-a:cut', messages, stream: true });
    const error = await caught(drain(stream, seen));
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.error).toEqual({
      message: 'provider-a closed the connection mid-response',
      type: 'upstream_error',
      param: null,
      code: 'upstream_error',
    });
    expect(seen.map((chunk) => chunk.choices[0].delta.content)).toEqual(['', 'Echo:', ' hello']);

    const anthropicStream = await anthropic.messages.create({ model: 'provider-c:cut', max_tokens: 8, messages, stream: true });
    const anthropicError = await caught(drain(anthropicStream));
    expect(anthropicError).toBeInstanceOf(Anthropic.APIError);
    expect(anthropicError.error).toEqual({
      type: 'error',
      error: { type: 'api_error', message: 'provider-c closed the connection mid-response' },
    });

    // The Mistral SDK has no typed in-stream error: the Mistral-shaped error event fails its chunk schema.
    const mistralSeen: any[] = [];
    const mistralStream = await mistral.chat.stream({ model: 'provider-b:cut', messages });
    const mistralError = await caught(drain(mistralStream, mistralSeen));
    expect(mistralError.name).toBe('ZodError');
    expect(mistralSeen.map((event) => event.data.choices[0].delta.content)).toEqual(['', 'Echo:', ' hello']);

    for (const provider of ['provider-a', 'provider-b', 'provider-c']) {
      expect(await h.rowFor(`${provider}:cut`)).toMatchObject({
        status: 200,
        stream: true,
        error: `${provider} closed the connection mid-response`,
      });
    }
  });

  it('a stream whose upstream hangs before its first byte ends with a timeout error event', async () => {
    const stream = await anthropic.messages.create({ model: 'provider-c:hang', max_tokens: 8, messages, stream: true });
    const error = await caught(drain(stream));
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error.error).toEqual({ type: 'error', error: { type: 'timeout_error', message: 'provider-c sent nothing for 1000 ms' } });
  });

  it('a client that disconnects aborts the upstream request', async () => {
    const controller = new AbortController();
    const response = await fetch(`${h.sdkBase}chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${h.acmeKey}` },
      body: JSON.stringify({ model: 'provider-a:stall', messages, stream: true }),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    let received = '';
    while (!received.includes(' hello')) received += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const upstream = await h.fake.closed('stall');
    expect(upstream.closedEarly).toBe(true);
    expect(await h.rowFor('provider-a:stall')).toMatchObject({ status: 0, stream: true, error: 'client closed the connection' });
  });
});

// Monthly token budgets: a spent budget stops the project's calls before any reaches the provider, in each provider's
// error shape, until the operator raises it; last month's usage does not count. The budget's messages: 3 words in,
// 'Echo:' + 3 words out (the fake provider's usage).
const budgetMessages = [{ role: 'user' as const, content: 'count my tokens' }];
const kCallTokens = 3 + 4;

describe('monthly token budgets', () => {
  it('403 budget_exceeded in each provider shape once the month used the budget, with no upstream call', async () => {
    // A project of its own: the calls above count against the harness's project.
    const projectId = 'proj_budget00001';
    await h.store.createProject({ id: projectId, orgId: 'acme', name: 'budget', createdAt: Date.now(), monthlyTokenBudget: null });
    const sdkBase = `${h.base}/v2/${projectId}/`;
    const openai = new OpenAI({ baseURL: sdkBase, apiKey: h.acmeKey, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: sdkBase, apiKey: h.acmeKey, maxRetries: 0 });
    const now = Date.now();
    const month = usageMonth(now);
    const lastMonth = usageMonth(Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 0));
    // Last month's calls count against last month only.
    await h.store.insertRequestLog({
      projectId,
      keyId: h.acmeKeyId,
      provider: 'provider-a',
      model: 'provider-a:old',
      stream: false,
      status: 200,
      ttfbMs: 1,
      totalMs: 1,
      tokensIn: 1_000_000,
      tokensOut: 0,
      error: null,
      requestBody: '{}',
      responseBody: '{}',
      createdAt: Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1) - 1,
    });
    expect(await h.store.getProjectUsage(projectId, lastMonth)).toBe(1_000_000);
    await h.store.setProjectBudget(projectId, 2 * kCallTokens);

    await openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages: budgetMessages });
    await h.logRows(2, projectId); // last month's row and this one
    expect(await h.store.getProjectUsage(projectId, month)).toBe(kCallTokens);
    // Under budget still: a stream goes through and counts (the proxy asks for its usage).
    const stream = await openai.chat.completions.create({ model: 'provider-a:gpt-stream', messages: budgetMessages, stream: true });
    for await (const chunk of stream) void chunk;
    await h.logRows(3, projectId);
    expect(await h.store.getProjectUsage(projectId, month)).toBe(2 * kCallTokens);

    const upstreamCalls = h.fake.requests.length;
    const message = `The project '${projectId}' has used ${2 * kCallTokens} of its ${2 * kCallTokens} proxy tokens for ${month} (UTC); the budget starts again next month, or the operator can raise it`;
    const openaiError = await caught(openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages: budgetMessages }));
    expect(openaiError).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(openaiError.error).toEqual({ message, type: 'permission_error', param: null, code: 'budget_exceeded' });
    const streamError = await caught(
      openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages: budgetMessages, stream: true }),
    );
    expect(streamError).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const anthropicError = await caught(
      anthropic.messages.create({ model: 'provider-c:claude-fake', max_tokens: 8, messages: budgetMessages }),
    );
    expect(anthropicError).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(anthropicError.error).toEqual({ type: 'error', error: { type: 'permission_error', message } });
    const mistralResponse = await fetch(`${sdkBase}v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${h.acmeKey}` },
      body: JSON.stringify({ model: 'provider-b:mistral-fake', messages: budgetMessages }),
    });
    expect(mistralResponse.status).toBe(403);
    expect(await mistralResponse.json()).toEqual({ object: 'error', message, type: 'permission_error', param: null, code: '403' });
    expect(h.fake.requests.length).toBe(upstreamCalls);

    // The operator raises the budget (or removes it): calls go through again.
    await h.store.setProjectBudget(projectId, 3 * kCallTokens);
    const completion = await openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages: budgetMessages });
    expect(completion.usage?.total_tokens).toBe(kCallTokens);
    expect(h.fake.requests.length).toBe(upstreamCalls + 1);
    await h.store.setProjectBudget(projectId, null);
  });
});
