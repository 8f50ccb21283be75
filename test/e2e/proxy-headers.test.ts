// What crosses the proxy besides bodies: the headers each provider gets, the headers the client gets back, the log's
// error column, and an upstream error body too large to keep.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { kFakeKeys } from '../../fixtures/fake-provider.js';
import { type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';

let h: ProxyHarness;
beforeAll(async () => {
  h = await startProxyHarness();
});
afterAll(async () => {
  await h.close();
});

// Everything a client might send: credentials, cookies, account scoping, forwarding and tracing, SDK telemetry.
const kClientHeaders = {
  accept: 'application/json',
  'user-agent': 'hostile/1.0',
  cookie: 'session=client',
  'openai-organization': 'org-client',
  'openai-project': 'proj-client',
  'openai-beta': 'assistants=v2',
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'tools-2024-04-04',
  'x-forwarded-for': '10.0.0.1',
  forwarded: 'for=10.0.0.1',
  'x-stainless-os': 'Linux',
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  'proxy-authorization': 'Basic eDp5',
  'x-amz-security-token': 'token',
};

async function post(path: string, model: string, extra: Record<string, string> = {}, stream = false) {
  return fetch(`${h.sdkBase}${path}`, {
    method: 'POST',
    headers: { ...kClientHeaders, ...extra, authorization: `Bearer ${h.acmeKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream } : {}) }),
  });
}

describe('headers', () => {
  it.each([
    [
      'provider-a',
      'chat/completions',
      'a',
      ['accept', 'user-agent', 'openai-beta', 'content-type', 'content-length', 'accept-encoding', 'authorization'],
    ],
    [
      'provider-b',
      'v1/chat/completions',
      'b',
      ['accept', 'user-agent', 'content-type', 'content-length', 'accept-encoding', 'authorization'],
    ],
    [
      'provider-c',
      'v1/messages',
      'c',
      ['accept', 'user-agent', 'anthropic-version', 'anthropic-beta', 'content-type', 'content-length', 'accept-encoding', 'x-api-key'],
    ],
  ] as const)('%s gets only the headers its API reads, and the operator key', async (provider, path, letter, expected) => {
    const response = await post(path, `${provider}:headers-${letter}`);
    expect(response.status).toBe(200);
    const seen = h.fake.requests.find((r) => r.body.model === `headers-${letter}`)!;
    const { host: _host, connection: _connection, ...headers } = seen.headers;
    expect(Object.keys(headers).sort()).toEqual([...expected].sort());
    expect(headers[letter === 'c' ? 'x-api-key' : 'authorization']).toBe(letter === 'c' ? kFakeKeys.c : `Bearer ${kFakeKeys[letter]}`);
    expect(headers['user-agent']).toBe('hostile/1.0');
  });

  it("returns only what a client needs, never the operator's account headers", async () => {
    for (const stream of [false, true]) {
      const response = await post('chat/completions', `provider-a:back-${stream}`, {}, stream);
      await response.text();
      const names = [...response.headers.keys()].filter(
        (name) => !['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(name),
      );
      // The x-ratelimit-*-requests headers are the proxy's own, about the client's key (the upstream's were dropped).
      const ours = ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'];
      expect(names.sort()).toEqual(
        stream
          ? ['cache-control', 'content-type', 'x-accel-buffering', ...ours, 'x-request-id']
          : ['content-length', 'content-type', ...ours, 'x-request-id'],
      );
      expect(response.headers.get('x-ratelimit-limit-requests')).toBe('600');
    }
    const limited = await post('chat/completions', 'provider-a:fail-429');
    expect([limited.status, limited.headers.get('retry-after'), limited.headers.get('openai-organization')]).toEqual([429, '7', null]);
  });
});

describe('errors', () => {
  it("redacts the log's error column like the bodies", async () => {
    const response = await post('chat/completions', 'provider-a:fail-leak');
    expect(response.status).toBe(502);
    expect(await response.text()).not.toContain('sk-');
    const row = await h.rowFor('provider-a:fail-leak');
    expect(row.error).toBe('provider-a answered 401: Incorrect API key provided: [redacted]. Header was Bearer [redacted]');
    expect(row.responseBody).not.toContain(kFakeKeys.a);
  });

  it('keeps only the start of an upstream error body that comes after the pings', async () => {
    const response = await post('chat/completions', 'provider-a:slow-250-then-fail-huge', {}, true);
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(text.length).toBeLessThan(2_000);
    const row = await h.rowFor('provider-a:slow-250-then-fail-huge');
    expect(row.error).toBe(`provider-a answered 500: {"error":{"message":"${'x'.repeat(179)}...`);
  });
});
