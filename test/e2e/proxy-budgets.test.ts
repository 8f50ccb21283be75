// Token budgets that hold, through the official SDKs against the loopback fake provider: calls whose usage never
// arrives are charged what was streamed, usage is always asked for, answers over 16 MiB are counted, parallel calls
// hold their share of the budget before going upstream (SQLite and PostgreSQL), and a stream that outruns its
// budget ends with the provider's own error event.
import Anthropic from '@anthropic-ai/sdk';
import { Mistral } from '@mistralai/mistralai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatChunks, fakeReplyPieces } from '../../fixtures/fake-provider.js';
import { type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';
import { estimateTokens } from '../../src/proxy/metering.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { type Store, usageMonth } from '../../src/store/types.js';
import { usePostgres } from '../_support/postgres.js';
import { type ProxyRig, startProxyRig } from '../_support/proxy-rig.js';

const server = usePostgres();
let h: ProxyHarness;

beforeAll(async () => {
  h = await startProxyHarness();
});
afterAll(async () => {
  await h.close();
});

let projects = 0;
/** A project of its own for each test, with `budget` tokens a month (null: none), and clients pointed at it. */
async function project(store: Store, base: string, key: string, budget: number | null) {
  const id = `proj_budget${String(++projects).padStart(5, '0')}`;
  await store.createProject({ id, orgId: 'acme', name: 'budget', createdAt: Date.now(), monthlyTokenBudget: budget });
  const sdkBase = `${base}/v2/${id}/`;
  return {
    id,
    sdkBase,
    openai: new OpenAI({ baseURL: sdkBase, apiKey: key, maxRetries: 0 }),
    anthropic: new Anthropic({ baseURL: sdkBase, apiKey: key, maxRetries: 0 }),
    mistral: new Mistral({ serverURL: sdkBase, apiKey: key, retryConfig: { strategy: 'none' } }),
    used: () => store.getProjectUsage(id, usageMonth(Date.now())),
  };
}

async function rowOf(store: Store, projectId: string, model: string) {
  for (let i = 0; i < 300; i++) {
    const row = (await store.listRequestLog(projectId, { limit: 100 })).find((r) => r.model === model);
    if (row) return row;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`expected a log row for ${model}`);
}

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
const sent = (row: { requestBody: string }) => estimateTokens(Buffer.byteLength(row.requestBody));

describe('a call whose final usage never comes is charged what was streamed', () => {
  it('OpenAI: a client that reads part of a stream and leaves pays its prompt and the deltas it got', async () => {
    const p = await project(h.store, h.base, h.acmeKey, null);
    // The fake streams the role chunk, 'Echo:', ' one', ' two', then nothing: the usage chunk never comes.
    const stream = await p.openai.chat.completions.create({
      model: 'provider-a:stall-after-4',
      messages: [{ role: 'user', content: 'one two three four' }],
      stream: true,
    });
    const deltas: string[] = [];
    for await (const chunk of stream) {
      deltas.push(chunk.choices[0]?.delta.content ?? '');
      if (deltas.length === 4) break;
    }
    expect(deltas.join('')).toBe('Echo: one two');
    const row = await rowOf(h.store, p.id, 'provider-a:stall-after-4');
    expect(row).toMatchObject({ status: 0, error: 'client closed the connection' });
    expect([row.tokensIn, row.tokensOut]).toEqual([sent(row), estimateTokens(Buffer.byteLength('Echo: one two'), 3)]);
    expect(await p.used()).toBe(row.tokensIn! + row.tokensOut!);
  });

  it('Anthropic: output beyond message_start counts, not only the input', async () => {
    const p = await project(h.store, h.base, h.acmeKey, null);
    // message_start (input 4, output 1), content_block_start, ping, then three deltas and nothing more.
    const stream = await p.anthropic.messages.create({
      model: 'provider-c:stall-after-6',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'one two three four' }],
      stream: true,
    });
    let text = '';
    let events = 0;
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
      if (++events === 5) break; // ping is not handed to the caller
    }
    expect(text).toBe('Echo: one two');
    const row = await rowOf(h.store, p.id, 'provider-c:stall-after-6');
    expect([row.tokensIn, row.tokensOut]).toEqual([4, estimateTokens(Buffer.byteLength('Echo: one two'), 3)]);
  });

  it('Mistral: a stream left before its last chunk (which carries the usage) counts too', async () => {
    const p = await project(h.store, h.base, h.acmeKey, null);
    const controller = new AbortController();
    const stream = await p.mistral.chat.stream(
      { model: 'provider-b:stall-after-4', messages: [{ role: 'user', content: 'one two three four' }] },
      { signal: controller.signal },
    );
    let text = '';
    let chunks = 0;
    for await (const event of stream) {
      const content = event.data.choices[0]?.delta.content;
      if (typeof content === 'string') text += content;
      if (++chunks === 4) break;
    }
    controller.abort();
    expect(text).toBe('Echo: one two');
    const row = await rowOf(h.store, p.id, 'provider-b:stall-after-4');
    expect([row.tokensIn, row.tokensOut]).toEqual([sent(row), estimateTokens(Buffer.byteLength('Echo: one two'), 3)]);
  });

  it('a stream the upstream cuts is charged what it sent', async () => {
    const p = await project(h.store, h.base, h.acmeKey, null);
    const stream = await p.openai.chat.completions.create({
      model: 'provider-a:cut',
      messages: [{ role: 'user', content: 'hello there' }],
      stream: true,
    });
    await expect(
      (async () => {
        for await (const chunk of stream) void chunk;
      })(),
    ).rejects.toThrow('provider-a closed the connection mid-response');
    const row = await rowOf(h.store, p.id, 'provider-a:cut');
    expect([row.tokensIn, row.tokensOut]).toEqual([sent(row), estimateTokens(Buffer.byteLength('Echo: hello'), 2)]);
  });
});

describe('usage is always asked for', () => {
  it.each([
    ['a string', 'yes'],
    ['an array', [true]],
    ['a number', 1],
    ['include_usage not true', { include_usage: 'yes' }],
  ])(
    'also when stream_options is %s: the upstream is asked, the client gets its stream without the usage chunk',
    async (_, streamOptions) => {
      const p = await project(h.store, h.base, h.acmeKey, null);
      const content = 'count this stream';
      const model = `odd-options-${JSON.stringify(streamOptions).replace(/\W/g, '')}`;
      const response = await fetch(`${p.sdkBase}chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${h.acmeKey}` },
        body: JSON.stringify({
          model: `provider-a:${model}`,
          messages: [{ role: 'user', content }],
          stream: true,
          stream_options: streamOptions,
        }),
      });
      const pieces = fakeReplyPieces(content);
      const usage = { prompt_tokens: 3, completion_tokens: pieces.length, total_tokens: 3 + pieces.length };
      expect(await response.text()).toBe(chatChunks('a', model, pieces, usage, false).join(''));
      expect(h.fake.requests.find((r) => r.body.model === model)!.body.stream_options).toEqual({ include_usage: true });
      expect(await rowOf(h.store, p.id, `provider-a:${model}`)).toMatchObject({ tokensIn: 3, tokensOut: pieces.length, error: null });
    },
  );
});

describe('answers over 16 MiB', () => {
  it('are read for their usage from the end of the body', async () => {
    const p = await project(h.store, h.base, h.acmeKey, null);
    const completion = await p.openai.chat.completions.create({
      model: 'provider-a:huge-17',
      messages: [{ role: 'user', content: 'big one' }],
    });
    expect(completion.choices[0].message.content!.length).toBe(17 * 1024 * 1024);
    const row = await rowOf(h.store, p.id, 'provider-a:huge-17');
    expect([row.tokensIn, row.tokensOut]).toEqual([2, 1234]);
  });
});

// 20 calls at once on a 1,000-token budget: each asks for its prompt's estimate plus max_tokens (100), and the fake
// answers after 700 ms (so that every call has taken its hold, or been refused, before any ends, even on a loaded
// machine) with 50 + 51 tokens. Before holds, every call passed the check (nothing was spent yet) and the project
// spent 2,020.
async function race(store: Store, base: string, key: string): Promise<void> {
  const p = await project(store, base, key, 1000);
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, () =>
      p.openai.chat.completions.create({ model: 'provider-a:slow-700', max_tokens: 100, messages: [{ role: 'user', content: words(50) }] }),
    ),
  );
  const answered = results.filter((r) => r.status === 'fulfilled');
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  expect(answered.length).toBeGreaterThan(0);
  expect(refused.length).toBeGreaterThan(0);
  for (const { reason } of refused) {
    expect(reason).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(reason.error.code).toBe('budget_exceeded');
  }
  for (let i = 0; i < 300 && (await store.listRequestLog(p.id, { limit: 100 })).length < answered.length; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const used = await p.used();
  expect(used).toBe(answered.length * 101);
  expect(used).toBeLessThanOrEqual(1000);
  // Every hold was given back with its row: what is left can be reserved whole.
  const at = Date.now();
  const left = await store.proxyLedger.reserve({
    projectId: p.id,
    month: usageMonth(at),
    budget: 1000,
    want: 1000,
    at,
    expiresAt: at + 1000,
  });
  expect([left.granted, left.held]).toEqual([1000 - used, 0]);
}

describe('parallel calls hold their share before going upstream', () => {
  it('on SQLite: 20 calls on a 1,000-token budget spend at most 1,000', async () => {
    await race(h.store, h.base, h.acmeKey);
  });

  it('on PostgreSQL, two replicas: 20 calls on a 1,000-token budget spend at most 1,000', async () => {
    const url = await server.cluster.createDatabase();
    const rigs: ProxyRig[] = [];
    try {
      rigs.push(await startProxyRig(await PostgresStore.open(url), h.fake));
      rigs.push(await startProxyRig(await PostgresStore.open(url), h.fake, rigs[0].key));
      // Both replicas on one project: half the calls go to each.
      const p = await project(rigs[0].store, rigs[0].base, rigs[0].key, 1000);
      const clients = rigs.map((rig) => new OpenAI({ baseURL: `${rig.base}/v2/${p.id}/`, apiKey: rig.key, maxRetries: 0 }));
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          clients[i % 2].chat.completions.create({
            model: 'provider-a:slow-700',
            max_tokens: 100,
            messages: [{ role: 'user', content: words(50) }],
          }),
        ),
      );
      const answered = results.filter((r) => r.status === 'fulfilled').length;
      expect(answered).toBeGreaterThan(0);
      expect(answered).toBeLessThan(20);
      for (let i = 0; i < 300 && (await rigs[0].store.listRequestLog(p.id, { limit: 100 })).length < answered; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(await p.used()).toBe(answered * 101);
      expect(await p.used()).toBeLessThanOrEqual(1000);
      // And the same race through one replica.
      await race(rigs[1].store, rigs[1].base, rigs[1].key);
    } finally {
      for (const rig of rigs) await rig.close();
    }
  });
});

describe('a stream that outruns its budget', () => {
  it("OpenAI: ends with the dialect's error event, budget_exceeded, and stops the upstream", async () => {
    const p = await project(h.store, h.base, h.acmeKey, 20);
    // Events 5 ms apart: the stream is still under way when the budget runs out.
    const stream = await p.openai.chat.completions.create({
      model: 'provider-a:drip-5-outrun',
      messages: [{ role: 'user', content: words(30) }],
      stream: true,
    });
    const deltas: string[] = [];
    const error = await (async () => {
      try {
        for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta.content ?? '');
      } catch (caught) {
        return caught as InstanceType<typeof OpenAI.APIError>;
      }
      throw new Error('expected the stream to fail');
    })();
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.error).toMatchObject({ type: 'permission_error', code: 'budget_exceeded' });
    // 21 deltas are one more than the budget: the stream ends there (or with the events that came in the same
    // read), not after all 31.
    const text = deltas.filter((d) => d !== '');
    expect(text.length).toBeGreaterThanOrEqual(21);
    expect(text.length).toBeLessThan(31);
    const row = await rowOf(h.store, p.id, 'provider-a:drip-5-outrun');
    expect(row.error).toMatch(/^The project 'proj_budget\d+' has used \d+ of its 20 proxy tokens/);
    expect(row.tokensOut).toBeGreaterThanOrEqual(21);
    expect((await h.fake.closed('drip-5-outrun')).closedEarly).toBe(true);
  });

  it('Anthropic: ends with an error event once the reported input and the deltas pass the budget', async () => {
    const p = await project(h.store, h.base, h.acmeKey, 25);
    const stream = await p.anthropic.messages.create({
      model: 'provider-c:drip-5-outrun-c',
      max_tokens: 64,
      messages: [{ role: 'user', content: words(20) }],
      stream: true,
    });
    const pieces: string[] = [];
    const error = await (async () => {
      try {
        for await (const event of stream) {
          if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') pieces.push(event.delta.text);
        }
      } catch (caught) {
        return caught as Error;
      }
      throw new Error('expected the stream to fail');
    })();
    expect(error.message).toContain('proxy tokens');
    // Input 20 (message_start), then a delta at a time: the 6th takes the call past 25, well before all 21.
    expect(pieces.length).toBeGreaterThanOrEqual(6);
    expect(pieces.length).toBeLessThan(21);
    expect(pieces).toEqual(fakeReplyPieces(words(20)).slice(0, pieces.length));
    const row = await rowOf(h.store, p.id, 'provider-c:drip-5-outrun-c');
    expect(row.tokensIn).toBe(20);
    expect(row.tokensOut).toBeGreaterThanOrEqual(6);
  });
});
