// A real HTTP server on 127.0.0.1 that answers like the three providers' APIs, streaming or not.
// Failures are chosen by the model name the client sends (after the proxy strips the prefix), so tests
// can run them through the official SDKs and concurrently:
//   fail-500, fail-429 (retry-after: 7), slow-<ms> (headers after <ms>), slow-<ms>-then-<failure>, cut (connection
//   dropped mid-body), hang (never answers), stall (a stream that sends two content chunks, then nothing),
//   fail-leak (401 quoting the operator's key, as providers do), fail-huge (500 whose JSON message is 8 MB).
// Every answer carries the operator's account headers (openai-organization, rate limits), which the proxy must drop.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const kFakeKeys = Object.freeze({ a: 'sk-fake-a-operator', b: 'sk-fake-b-operator', c: 'sk-fake-c-operator' });

/** Headers about the operator's provider account, sent with every answer. */
export const kAccountHeaders = Object.freeze({
  'openai-organization': 'org-operator',
  'openai-project': 'proj-operator',
  'x-ratelimit-remaining-requests': '4999',
  'anthropic-organization-id': 'operator-org-id',
  server: 'fake-provider/1.0',
});

export interface RecordedRequest {
  provider: 'a' | 'b' | 'c';
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** Set when the connection closed before the fake had finished answering. */
  closedEarly: boolean;
}

export interface FakeProvider {
  /** Base URLs as the proxy's provider settings take them. */
  urls: { a: string; b: string; c: string };
  requests: RecordedRequest[];
  /** Resolves when the request for `model` has closed (early or not). */
  closed(model: string): Promise<RecordedRequest>;
  close(): Promise<void>;
}

/** The reply the fake gives: the last user message echoed back, in pieces that stream one per event. */
export function fakeReplyPieces(lastUserMessage: string): string[] {
  return ['Echo:', ...lastUserMessage.split(' ').filter(Boolean).map((word) => ` ${word}`)];
}

function lastUserText(body: Record<string, unknown>): string {
  const messages = (body.messages ?? []) as Array<{ role: string; content: unknown }>;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return (last.content as Array<{ text?: string }>).map((part) => part.text ?? '').join('');
}

/** Prompt tokens: whitespace-separated words across all messages, so tests can assert exact counts. */
function promptTokens(body: Record<string, unknown>): number {
  const messages = (body.messages ?? []) as Array<{ content: unknown }>;
  return messages
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join(' ')
    .split(/\s+/)
    .filter(Boolean).length;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function errorBody(provider: 'a' | 'b' | 'c', status: number, message: string): unknown {
  if (provider === 'c') return { type: 'error', error: { type: status === 429 ? 'rate_limit_error' : 'api_error', message } };
  if (provider === 'b') return { object: 'error', message, type: status === 429 ? 'rate_limited' : 'internal_error', param: null, code: String(status) };
  return { error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'server_error', param: null, code: null } };
}

export function chatChunks(provider: 'a' | 'b', model: string, pieces: string[], usage: object, includeUsage: boolean): string[] {
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1_700_000_000, model };
  const chunk = (delta: object, finish: string | null, extra: object = {}) =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  const events = [chunk({ role: 'assistant', content: '' }, null)];
  for (const piece of pieces) events.push(chunk({ content: piece }, null));
  // Mistral puts usage on the last choice chunk; OpenAI sends a separate empty-choices chunk when asked.
  if (provider === 'b') events.push(chunk({ content: '' }, 'stop', { usage }));
  else {
    events.push(chunk({}, 'stop'));
    if (includeUsage) events.push(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
  }
  events.push('data: [DONE]\n\n');
  return events;
}

function messageEvents(model: string, pieces: string[], inputTokens: number): string[] {
  const event = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  return [
    event('message_start', {
      message: {
        id: 'msg_fake', type: 'message', role: 'assistant', model, content: [], stop_reason: null,
        stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: 1 },
      },
    }),
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    event('ping', {}),
    ...pieces.map((text) => event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
    event('content_block_stop', { index: 0 }),
    event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: pieces.length } }),
    event('message_stop', {}),
  ];
}

function completeBody(provider: 'a' | 'b' | 'c', model: string, pieces: string[], inputTokens: number): unknown {
  const text = pieces.join('');
  if (provider === 'c') {
    return {
      id: 'msg_fake', type: 'message', role: 'assistant', model, content: [{ type: 'text', text }],
      stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: pieces.length },
    };
  }
  return {
    id: 'chatcmpl-fake', object: 'chat.completion', created: 1_700_000_000, model,
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: inputTokens, completion_tokens: pieces.length, total_tokens: inputTokens + pieces.length },
  };
}

const kRoutes: Record<string, 'a' | 'b' | 'c'> = {
  '/openai/v1/chat/completions': 'a',
  '/mistral/v1/chat/completions': 'b',
  '/anthropic/v1/messages': 'c',
};

export async function startFakeProvider(): Promise<FakeProvider> {
  const requests: RecordedRequest[] = [];
  const waiters = new Map<string, (r: RecordedRequest) => void>();
  const closedModels = new Map<string, RecordedRequest>();

  const server = http.createServer(async (req, res) => {
    const provider = kRoutes[req.url ?? ''];
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    const record: RecordedRequest = { provider, path: req.url ?? '', headers: req.headers, body, closedEarly: false };
    requests.push(record);
    const model = String(body.model);
    res.on('close', () => {
      record.closedEarly = !res.writableFinished;
      closedModels.set(model, record);
      waiters.get(model)?.(record);
    });
    if (!provider) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such route"}');
      return;
    }
    const expectedAuth = provider === 'c' ? req.headers['x-api-key'] : req.headers.authorization;
    const key = kFakeKeys[provider];
    if (expectedAuth !== (provider === 'c' ? key : `Bearer ${key}`)) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify(errorBody(provider, 401, 'fake provider: bad operator key')));
      return;
    }
    const fail = (status: number, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_fake', ...kAccountHeaders, ...headers });
      res.end(JSON.stringify(errorBody(provider, status, `fake provider failure ${status}`)));
    };
    const slow = /^slow-(\d+)(?:-then-(.+))?$/.exec(model);
    if (slow) await sleep(Number(slow[1]));
    const failure = slow?.[2] ?? model;
    if (failure === 'fail-500') return fail(500);
    if (failure === 'fail-429') return fail(429, { 'retry-after': '7' });
    if (failure === 'hang') return;
    if (failure === 'fail-leak') {
      res.writeHead(401, { 'content-type': 'application/json', ...kAccountHeaders });
      res.end(JSON.stringify(errorBody(provider, 401, `Incorrect API key provided: ${key}. Header was Bearer ${key}`)));
      return;
    }
    if (failure === 'fail-huge') {
      res.writeHead(500, { 'content-type': 'application/json', ...kAccountHeaders });
      res.write('{"error":{"message":"');
      const mb = Buffer.alloc(1 << 20, 'x');
      for (let i = 0; i < 8 && !res.destroyed; i++) if (!res.write(mb)) await new Promise((r) => res.once('drain', r));
      res.end('","type":"server_error"}}');
      return;
    }

    const pieces = fakeReplyPieces(lastUserText(body));
    const inputTokens = promptTokens(body);
    if (body.stream === true) {
      const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
      const events =
        provider === 'c'
          ? messageEvents(model, pieces, inputTokens)
          : chatChunks(provider, model, pieces, { prompt_tokens: inputTokens, completion_tokens: pieces.length, total_tokens: inputTokens + pieces.length }, includeUsage);
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': 'req_fake', 'set-cookie': 'upstream=1', ...kAccountHeaders });
      for (const [i, event] of events.entries()) {
        if ((model === 'cut' || model === 'stall') && i === 3) {
          if (model === 'cut') res.socket?.destroy();
          return; // stall: keep the connection open and say nothing more
        }
        res.write(event);
        await tick();
      }
      res.end();
      return;
    }
    const text = JSON.stringify(completeBody(provider, model, pieces, inputTokens));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-request-id': 'req_fake', ...kAccountHeaders });
    if (model === 'cut') {
      res.write(text.slice(0, 20));
      await tick();
      res.socket?.destroy();
      return;
    }
    res.end(text);
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    urls: { a: `${base}/openai/v1`, b: `${base}/mistral`, c: `${base}/anthropic` },
    requests,
    closed(model) {
      const done = closedModels.get(model);
      if (done) return Promise.resolve(done);
      return new Promise((resolve) => waiters.set(model, resolve));
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
