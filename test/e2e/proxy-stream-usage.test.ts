// OpenAI-style streams count their tokens: the proxy asks the upstream for the usage chunk when the client did not,
// and keeps that chunk from such a client; a client that asked gets it as the upstream sent it.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatChunks, fakeReplyPieces } from '../../fixtures/fake-provider.js';
import { officialClients, type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';

let h: ProxyHarness;
let openai: OpenAI;

beforeAll(async () => {
  h = await startProxyHarness();
  ({ openai } = officialClients(h));
});
afterAll(async () => {
  await h.close();
});

const content = 'stream me some usage';
const messages = [{ role: 'user' as const, content }];
const pieces = fakeReplyPieces(content);
const usage = { prompt_tokens: 4, completion_tokens: pieces.length, total_tokens: 4 + pieces.length };

async function rawStream(model: string, extra: Record<string, unknown> = {}): Promise<string> {
  const response = await fetch(`${h.sdkBase}chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${h.acmeKey}` },
    body: JSON.stringify({ model: `provider-a:${model}`, messages, stream: true, ...extra }),
  });
  expect(response.status).toBe(200);
  return response.text();
}

describe('usage of OpenAI-style streams', () => {
  it('asks the upstream for usage, logs it, and sends a client that did not ask exactly the stream without it', async () => {
    const text = await rawStream('quiet');
    expect(h.fake.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
    expect(text).toBe(chatChunks('a', 'quiet', pieces, usage, false).join(''));
    expect(await h.rowFor('provider-a:quiet')).toMatchObject({ stream: true, status: 200, tokensIn: 4, tokensOut: pieces.length, error: null });

    // Through the SDK: no chunk without choices reaches the client, the reply is whole.
    const stream = await openai.chat.completions.create({ model: 'provider-a:quiet-sdk', messages, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices.length)).toEqual(Array(pieces.length + 2).fill(1));
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe(pieces.join(''));
    expect(chunks.some((c) => 'usage' in c)).toBe(false);
    expect(await h.rowFor('provider-a:quiet-sdk')).toMatchObject({ tokensIn: 4, tokensOut: pieces.length });
  });

  it('also when the client sent stream_options without include_usage, keeping its other options', async () => {
    const text = await rawStream('declined', { stream_options: { include_usage: false, include_obfuscation: false } });
    expect(h.fake.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true, include_obfuscation: false });
    expect(text).toBe(chatChunks('a', 'declined', pieces, usage, false).join(''));
    expect(await h.rowFor('provider-a:declined')).toMatchObject({ tokensIn: 4, tokensOut: pieces.length });
  });

  it('passes the usage chunk to a client that asked for it', async () => {
    const text = await rawStream('asked', { stream_options: { include_usage: true } });
    expect(h.fake.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
    expect(text).toBe(chatChunks('a', 'asked', pieces, usage, true).join(''));
    expect(await h.rowFor('provider-a:asked')).toMatchObject({ tokensIn: 4, tokensOut: pieces.length });
  });

  it('leaves Mistral streams, which carry usage on their last chunk, as the client sent them', async () => {
    const response = await fetch(`${h.sdkBase}v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${h.acmeKey}` },
      body: JSON.stringify({ model: 'provider-b:mistral-usage', messages, stream: true }),
    });
    expect(await response.text()).toBe(chatChunks('b', 'mistral-usage', pieces, usage, false).join(''));
    expect(h.fake.requests.at(-1)!.body.stream_options).toBeUndefined();
    expect(await h.rowFor('provider-b:mistral-usage')).toMatchObject({ tokensIn: 4, tokensOut: pieces.length });
  });
});
