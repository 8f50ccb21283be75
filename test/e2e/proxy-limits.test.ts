// What a tenant cannot do to the proxy or learn from it: store megabytes in the request log for free, crash a route
// with a deeply nested body, read another provider's rate-limit headers, or see the operator's provider key when the
// provider refuses it.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kFakeKeys } from '../../fixtures/fake-provider.js';
import { officialClients, type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';
import { kBodiesNotKept } from '../../src/store/proxy-ledger.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { usageMonth } from '../../src/store/types.js';
import { startProxyRig } from '../_support/proxy-rig.js';

let h: ProxyHarness;
// Small limits so that a few calls reach them: 1,000 body bytes a call, 2,500 a project.
let small: ProxyHarness;

beforeAll(async () => {
  h = await startProxyHarness();
  small = await startProxyHarness({ requestLog: { maxBodyBytes: 1000, maxProjectBodyBytes: 2500 } }, h.fake);
});
afterAll(async () => {
  await small.close();
  await h.close();
});

async function post(harness: ProxyHarness, path: string, body: string, extra: Record<string, string> = {}) {
  return fetch(`${harness.sdkBase}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${harness.acmeKey}`, ...extra },
    body,
  });
}

const chat = (model: string, content: string, extra: object = {}) =>
  JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content }], ...extra });

describe('request-log body limits', () => {
  it('keeps at most maxBodyBytes of a call, shared by the request and the response', async () => {
    const response = await post(small, 'chat/completions', chat('provider-a:capped', 'word '.repeat(2000)));
    expect(response.status).toBe(200);
    const row = await small.rowFor('provider-a:capped');
    expect(Buffer.byteLength(row.requestBody)).toBe(500);
    expect(Buffer.byteLength(row.responseBody)).toBe(500);
    expect(row.tokensIn).toBe(2000);
  });

  it('keeps a whole answer when the operator allows more than the default', async () => {
    const large = await startProxyHarness({ requestLog: { maxBodyBytes: 400_000 } }, h.fake);
    try {
      const content = 'word '.repeat(30_000).trim();
      expect((await post(large, 'chat/completions', chat('provider-a:roomy', content))).status).toBe(200);
      const row = await large.rowFor('provider-a:roomy');
      expect(JSON.parse(row.requestBody).messages[0].content).toBe(content);
      expect(JSON.parse(row.responseBody).choices[0].message.content).toBe(`Echo: ${content}`);
    } finally {
      await large.close();
    }
  });

  it('keeps at most 2 KiB of a call the upstream rejected, which costs no tokens', async () => {
    const response = await post(h, 'chat/completions', chat('provider-a:fail-500', 'x'.repeat(100_000)));
    expect(response.status).toBe(500);
    const row = await h.rowFor('provider-a:fail-500');
    expect([row.tokensIn, row.tokensOut]).toEqual([null, null]);
    expect(Buffer.byteLength(row.requestBody) + Buffer.byteLength(row.responseBody)).toBeLessThanOrEqual(2048);
    expect(row.error).toBe('provider-a answered 500: fake provider failure 500');
  });

  it("keeps bodies until the project's log holds maxProjectBodyBytes, then metadata and tokens only, until pruning frees room", async () => {
    const projectId = 'proj_logcap00001';
    await small.store.createProject({ id: projectId, orgId: 'acme', name: 'cap', createdAt: Date.now(), monthlyTokenBudget: null });
    const base = `${small.base}/v2/${projectId}/`;
    const call = (model: string) =>
      fetch(`${base}chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${small.acmeKey}` },
        body: chat(model, 'word '.repeat(300)),
      });
    for (let i = 0; i < 4; i++) {
      expect((await call(`provider-a:cap-${i}`)).status).toBe(200);
      await small.logRows(i + 1, projectId);
    }
    const rows = (await small.store.listRequestLog(projectId, { limit: 10 })).reverse();
    const bytes = rows.map((r) => Buffer.byteLength(r.requestBody) + Buffer.byteLength(r.responseBody));
    // Each call keeps 1,000 bytes: two fit in 2,500, the third and fourth keep none.
    expect(bytes.slice(0, 2)).toEqual([1000, 1000]);
    expect(rows.slice(2).map((r) => [r.requestBody, r.responseBody])).toEqual([
      [kBodiesNotKept, kBodiesNotKept],
      [kBodiesNotKept, kBodiesNotKept],
    ]);
    expect(rows.map((r) => r.tokensIn)).toEqual([300, 300, 300, 300]);
    expect(await small.store.getProjectUsage(projectId, usageMonth(Date.now()))).toBe(4 * (300 + 301));

    // Retention prunes the two oldest rows: their bytes no longer count, and the next call keeps its bodies.
    expect(await small.store.pruneRequestLog(projectId, { olderThan: 0, keepNewest: 2, limit: 100 })).toBe(2);
    expect((await call('provider-a:cap-after-prune')).status).toBe(200);
    await small.logRows(3, projectId);
    const [newest] = await small.store.listRequestLog(projectId, { limit: 1 });
    expect(Buffer.byteLength(newest.requestBody) + Buffer.byteLength(newest.responseBody)).toBe(1000);
  });
});

describe('deeply nested bodies', () => {
  const deep = (depth: number, model: string) =>
    `{"model":"${model}","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"metadata":${'['.repeat(depth)}${']'.repeat(depth)}}`;
  const message = 'request body must not nest objects and arrays more than 128 deep';

  it.each([
    ['chat/completions', 'provider-a:deep', { error: { message, type: 'invalid_request_error', param: null, code: 'invalid_request' } }],
    ['v1/chat/completions', 'provider-b:deep', { object: 'error', message, type: 'invalid_request_error', param: null, code: '400' }],
    ['v1/messages', 'provider-c:deep', { type: 'error', error: { type: 'invalid_request_error', message } }],
  ])('%s: an 8,000-deep body is 400 in the provider shape, and nothing goes upstream', async (path, model, expected) => {
    const before = h.fake.requests.length;
    const response = await post(h, path, deep(8000, model));
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual(expected);
    expect(h.fake.requests.length).toBe(before);
  });

  it('a body nested up to the bound goes through', async () => {
    const response = await post(h, 'chat/completions', deep(125, 'provider-a:deep-ok'));
    expect(response.status).toBe(200);
    expect(h.fake.requests.at(-1)!.body.model).toBe('deep-ok');
  });
});

describe("each provider's own rate-limit headers", () => {
  const openaiNames = ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'];

  it('Anthropic: anthropic-ratelimit-requests-*, the reset as an RFC 3339 time', async () => {
    const before = Date.now();
    const { data, response } = await officialClients(h)
      .anthropic.messages.create({ model: 'provider-c:limits', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'Echo: hi' }]);
    expect(response.headers.get('anthropic-ratelimit-requests-limit')).toBe('600');
    expect(Number(response.headers.get('anthropic-ratelimit-requests-remaining'))).toBeLessThan(600);
    const reset = response.headers.get('anthropic-ratelimit-requests-reset')!;
    expect(reset).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Date.parse(reset)).toBeGreaterThan(before);
    expect(Date.parse(reset)).toBeLessThanOrEqual(before + 61_000);
    for (const name of openaiNames) expect(response.headers.get(name)).toBeNull();
  });

  it('Mistral: x-ratelimit-{limit,remaining}-req-minute', async () => {
    const response = await post(h, 'v1/chat/completions', chat('provider-b:limits', 'hi'));
    expect(response.status).toBe(200);
    expect(response.headers.get('x-ratelimit-limit-req-minute')).toBe('600');
    expect(Number(response.headers.get('x-ratelimit-remaining-req-minute'))).toBeLessThan(600);
    for (const name of openaiNames) expect(response.headers.get(name)).toBeNull();
  });

  it('OpenAI: its own names, unchanged', async () => {
    const response = await post(h, 'chat/completions', chat('provider-a:limits', 'hi'));
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('600');
    expect(response.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?s$/);
  });

  it("a 429 on the Anthropic route carries Anthropic's names and retry-after", async () => {
    const limited = await startProxyHarness({}, h.fake);
    try {
      await limited.store.setOrgLimits('acme', { requestsPerMinute: 1 });
      const anthropic = officialClients(limited).anthropic;
      await anthropic.messages.create({ model: 'provider-c:first', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
      const response = await post(limited, 'v1/messages', chat('provider-c:second', 'hi'));
      expect(response.status).toBe(429);
      expect(response.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBeNull();
      expect(((await response.json()) as { error: { type: string } }).error.type).toBe('rate_limit_error');
    } finally {
      await limited.close();
    }
  });
});

describe("the provider refusing the operator's key", () => {
  let wrongKey: ProxyHarness;
  beforeAll(async () => {
    wrongKey = await startProxyHarness(
      {
        providers: {
          'provider-a': { url: h.fake.urls.a, key: 'sk-wrong-operator-key-a' },
          'provider-b': { url: h.fake.urls.b, key: 'sk-wrong-operator-key-b' },
          'provider-c': { url: h.fake.urls.c, key: 'sk-ant-wrong-operator-key-c' },
        },
      },
      h.fake,
    );
  });
  afterAll(async () => {
    await wrongKey.close();
  });
  const neutral = (provider: string) => `${provider} refused this service's credentials; the operator must fix its provider settings`;

  it('401: each SDK gets 502 in its shape with a neutral message; the log keeps the detail', async () => {
    const { openai, anthropic, mistral } = officialClients(wrongKey);
    const openaiError = await openai.chat.completions
      .create({ model: 'provider-a:refused', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(openaiError).toBeInstanceOf(OpenAI.InternalServerError);
    expect(openaiError.status).toBe(502);
    expect(openaiError.error).toEqual({ message: neutral('provider-a'), type: 'upstream_error', param: null, code: 'upstream_error' });
    const anthropicError = await anthropic.messages
      .create({ model: 'provider-c:refused', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(anthropicError).toBeInstanceOf(Anthropic.InternalServerError);
    expect(anthropicError.error).toEqual({ type: 'error', error: { type: 'api_error', message: neutral('provider-c') } });
    const mistralError = await mistral.chat
      .complete({ model: 'provider-b:refused', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(mistralError.statusCode).toBe(502);
    expect(String(mistralError.body)).toContain(neutral('provider-b'));

    const row = await wrongKey.rowFor('provider-c:refused');
    expect(row).toMatchObject({ status: 502, error: 'provider-c answered 401: fake provider: bad operator key' });
  });

  it('403 quoting the key, streamed after pings: an error event with the neutral message, no key anywhere', async () => {
    const response = await post(h, 'chat/completions', chat('provider-a:slow-250-then-fail-403', 'hi', { stream: true }));
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(text).toContain(JSON.stringify(neutral('provider-a')));
    expect(text).not.toContain('sk-');
    const row = await h.rowFor('provider-a:slow-250-then-fail-403');
    expect(row.error).toBe('provider-a answered 403: The key [redacted] has no access to this model on org-operator');
    expect(row.responseBody).not.toContain(kFakeKeys.a);

    const plain = await post(h, 'v1/chat/completions', chat('provider-b:fail-403', 'hi'));
    expect(plain.status).toBe(502);
    expect(await plain.text()).not.toContain(kFakeKeys.b);
  });

  it('the server log gets a warning with the detail, the key redacted', async () => {
    const lines: string[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'svc-proxy-warn-'));
    const rig = await startProxyRig(SqliteStore.open(dir), h.fake, undefined, {}, lines);
    try {
      const project = 'proj_warned00001';
      await rig.store.createProject({ id: project, orgId: 'acme', name: 'w', createdAt: Date.now(), monthlyTokenBudget: null });
      const response = await fetch(`${rig.base}/v2/${project}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': rig.key },
        body: chat('provider-c:fail-leak', 'hi'),
      });
      expect(response.status).toBe(502);
      const warnings = lines.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((l) => l.level === 40);
      expect(warnings.map((w) => w.msg)).toEqual([
        "the proxy's provider-c key was refused: provider-c answered 401: Incorrect API key provided: [redacted]. Header was Bearer [redacted]",
      ]);
      expect(lines.join('\n')).not.toContain(kFakeKeys.c);
    } finally {
      await rig.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
