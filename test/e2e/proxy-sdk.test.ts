// The three official SDKs, unchanged, against the proxy routes: replies, exact stream reassembly, usage (streams
// included), log rows.
import Anthropic from '@anthropic-ai/sdk';
import { Mistral } from '@mistralai/mistralai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatChunks, fakeReplyPieces, kFakeKeys } from '../../fixtures/fake-provider.js';
import { officialClients, type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';

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

const question = 'is this proxy transparent';
const reply = 'Echo: is this proxy transparent';
// Fake usage: prompt tokens = words in the messages, output tokens = streamed pieces ('Echo:' + 4 words).
const tokensOut = 5;

describe('provider A through the openai SDK', () => {
  it('answers in choices[0].message with usage, strips the prefix, and uses the operator key', async () => {
    const before = h.fake.requests.length;
    const completion = await openai.chat.completions.create({
      model: 'provider-a:gpt-fake',
      messages: [{ role: 'user', content: question }],
    });
    expect(completion.choices[0].message).toEqual({ role: 'assistant', content: reply });
    expect(completion.usage).toEqual({ prompt_tokens: 4, completion_tokens: tokensOut, total_tokens: 9 });

    const upstream = h.fake.requests[before];
    expect(upstream.path).toBe('/openai/v1/chat/completions');
    expect(upstream.body.model).toBe('gpt-fake');
    expect(upstream.headers.authorization).toBe(`Bearer ${kFakeKeys.a}`);
    expect(JSON.stringify(upstream.headers)).not.toContain(h.acmeKey);

    const [row] = await h.logRows(1);
    expect(row).toMatchObject({
      projectId: h.projectId,
      keyId: h.acmeKeyId,
      provider: 'provider-a',
      model: 'provider-a:gpt-fake',
      stream: false,
      status: 200,
      tokensIn: 4,
      tokensOut,
      error: null,
    });
    expect(JSON.parse(row.requestBody)).toEqual({ model: 'provider-a:gpt-fake', messages: [{ role: 'user', content: question }] });
    expect(JSON.parse(row.responseBody).choices[0].message.content).toBe(reply);
    expect(row.ttfbMs).toBeGreaterThan(0);
    expect(row.totalMs).toBeGreaterThanOrEqual(row.ttfbMs!);
  });

  it('streams chunk by chunk, reassembled exactly, with the final usage chunk captured', async () => {
    const stream = await openai.chat.completions.create({
      model: 'provider-a:gpt-fake',
      messages: [{ role: 'user', content: question }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let usage: unknown = null;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
      if (chunk.usage) usage = chunk.usage;
    }
    expect(deltas).toEqual(['Echo:', ' is', ' this', ' proxy', ' transparent']);
    expect(deltas.join('')).toBe(reply);
    expect(usage).toEqual({ prompt_tokens: 4, completion_tokens: tokensOut, total_tokens: 9 });
    const rows = await h.logRows(2);
    expect(rows[0]).toMatchObject({ provider: 'provider-a', stream: true, status: 200, tokensIn: 4, tokensOut, error: null });
    expect(rows[0].responseBody.endsWith('data: [DONE]\n\n')).toBe(true);
  });
});

describe('provider B through the @mistralai/mistralai SDK', () => {
  it('answers in choices[0].message with usage', async () => {
    const completion = await mistral.chat.complete({
      model: 'provider-b:mistral-fake',
      messages: [{ role: 'user', content: question }],
    });
    expect(completion.choices[0].message).toEqual({ role: 'assistant', content: reply, prefix: false });
    expect(completion.usage).toEqual({ promptTokens: 4, completionTokens: tokensOut, totalTokens: 9 });
    const upstream = h.fake.requests.at(-1)!;
    expect(upstream.path).toBe('/mistral/v1/chat/completions');
    expect(upstream.body.model).toBe('mistral-fake');
    expect(upstream.headers.authorization).toBe(`Bearer ${kFakeKeys.b}`);
    const rows = await h.logRows(3);
    expect(rows[0]).toMatchObject({
      provider: 'provider-b',
      model: 'provider-b:mistral-fake',
      stream: false,
      status: 200,
      tokensIn: 4,
      tokensOut,
    });
  });

  it('streams, reassembled exactly, with usage from the last chunk', async () => {
    const stream = await mistral.chat.stream({
      model: 'provider-b:mistral-fake',
      messages: [{ role: 'user', content: question }],
    });
    const deltas: string[] = [];
    for await (const event of stream) {
      const content = event.data.choices[0]?.delta.content;
      if (typeof content === 'string' && content !== '') deltas.push(content);
    }
    expect(deltas.join('')).toBe(reply);
    const rows = await h.logRows(4);
    expect(rows[0]).toMatchObject({ provider: 'provider-b', stream: true, status: 200, tokensIn: 4, tokensOut, error: null });
  });
});

describe('provider C through the @anthropic-ai/sdk SDK', () => {
  it('answers a message with usage, sending the operator key as x-api-key', async () => {
    const message = await anthropic.messages.create({
      model: 'provider-c:claude-fake',
      max_tokens: 64,
      messages: [{ role: 'user', content: question }],
    });
    expect(message.content).toEqual([{ type: 'text', text: reply }]);
    expect(message.usage).toEqual({ input_tokens: 4, output_tokens: tokensOut });
    const upstream = h.fake.requests.at(-1)!;
    expect(upstream.path).toBe('/anthropic/v1/messages');
    expect(upstream.body.model).toBe('claude-fake');
    expect(upstream.headers['x-api-key']).toBe(kFakeKeys.c);
    expect(upstream.headers.authorization).toBeUndefined();
    const rows = await h.logRows(5);
    expect(rows[0]).toMatchObject({ provider: 'provider-c', model: 'provider-c:claude-fake', status: 200, tokensIn: 4, tokensOut });
  });

  it('streams events, reassembled exactly, with usage from message_start and message_delta', async () => {
    const stream = await anthropic.messages.create({
      model: 'provider-c:claude-fake',
      max_tokens: 64,
      messages: [{ role: 'user', content: question }],
      stream: true,
    });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    }
    expect(text).toBe(reply);
    expect(types).toEqual([
      'message_start',
      'content_block_start',
      ...Array(tokensOut).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const rows = await h.logRows(6);
    expect(rows[0]).toMatchObject({ provider: 'provider-c', stream: true, status: 200, tokensIn: 4, tokensOut, error: null });
  });

  it('accepts the key as x-api-key, as the 0.x SDKs send it', async () => {
    const response = await fetch(`${h.sdkBase}v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': h.acmeKey, 'anthropic-version': '2023-06-01', cookie: 'session=abc' },
      body: JSON.stringify({ model: 'provider-c:claude-fake', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { content: unknown }).content).toEqual([{ type: 'text', text: 'Echo: hi' }]);
    const upstream = h.fake.requests.at(-1)!;
    expect(upstream.headers['x-api-key']).toBe(kFakeKeys.c);
    expect(upstream.headers.cookie).toBeUndefined();
    // The client's API version goes through as it chose it.
    expect(upstream.headers['anthropic-version']).toBe('2023-06-01');
  });
});

const content = 'stream me some usage';
const usageMessages = [{ role: 'user' as const, content }];
const pieces = fakeReplyPieces(content);
const usage = { prompt_tokens: 4, completion_tokens: pieces.length, total_tokens: 4 + pieces.length };

async function rawStream(model: string, extra: Record<string, unknown> = {}): Promise<string> {
  const response = await fetch(`${h.sdkBase}chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${h.acmeKey}` },
    body: JSON.stringify({ model: `provider-a:${model}`, messages: usageMessages, stream: true, ...extra }),
  });
  expect(response.status).toBe(200);
  return response.text();
}

// OpenAI-style streams count their tokens: the proxy asks the upstream for the usage chunk when the client did not,
// and keeps that chunk from such a client; a client that asked gets it as the upstream sent it.
describe('usage of OpenAI-style streams', () => {
  it('asks the upstream for usage, logs it, and sends a client that did not ask exactly the stream without it', async () => {
    const text = await rawStream('quiet');
    expect(h.fake.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
    expect(text).toBe(chatChunks('a', 'quiet', pieces, usage, false).join(''));
    expect(await h.rowFor('provider-a:quiet')).toMatchObject({
      stream: true,
      status: 200,
      tokensIn: 4,
      tokensOut: pieces.length,
      error: null,
    });

    // Through the SDK: no chunk without choices reaches the client, the reply is whole.
    const stream = await openai.chat.completions.create({ model: 'provider-a:quiet-sdk', messages: usageMessages, stream: true });
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
      body: JSON.stringify({ model: 'provider-b:mistral-usage', messages: usageMessages, stream: true }),
    });
    expect(await response.text()).toBe(chatChunks('b', 'mistral-usage', pieces, usage, false).join(''));
    expect(h.fake.requests.at(-1)!.body.stream_options).toBeUndefined();
    expect(await h.rowFor('provider-b:mistral-usage')).toMatchObject({ tokensIn: 4, tokensOut: pieces.length });
  });
});
