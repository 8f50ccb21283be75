// Requests per minute per API key on /v2, the proxy and the hub, on a real server: OpenAI's header names on every answer,
// 429 in each route's error shape, the official openai client backing off by itself and then succeeding, operator
// overrides read per request, and failed authentication limited per client address without refusing a valid key.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Anthropic from '@anthropic-ai/sdk';
import Fastify, { type FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';

import { type FakeProvider, kFakeKeys, startFakeProvider } from '../../fixtures/fake-provider.js';
import { startProxyHarness } from '../../fixtures/proxy-harness.js';
import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { hubRoutes } from '../../src/server/hub-routes.js';
import { SvcMetrics } from '../../src/server/metrics.js';
import { proxyRoutes } from '../../src/server/proxy-routes.js';
import { durationText } from '../../src/server/rate-limit.js';
import { svcRoutes } from '../../src/server/routes.js';
import { kDefaultOrgLimits } from '../../src/service/limits.js';
import { SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';

// Long enough that a test's few requests fall in one window even on a loaded machine, short enough to wait out.
const kWindowMs = 4_000;
const kFailedAuthLimit = 3;

let dir: string;
let fake: FakeProvider;
let store: SqliteStore;
let service: SvcService;
let app: FastifyInstance;
let base: string;
const keys: Record<string, string> = {};
const projects: Record<string, string> = {};
let metrics: SvcMetrics;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-limits-'));
  fake = await startFakeProvider();
  store = SqliteStore.open(dir);
  service = new SvcService({ store, runtime: new WordCountRuntime(join(dir, 'hub')) });
  metrics = new SvcMetrics({ service });
  // One organization per test, so that each starts with fresh counts.
  for (const org of ['retry', 'shapes', 'shared', 'override']) {
    await service.createOrganization(org);
    await service.setProxyAccess(org, true);
    keys[org] = (await service.createApiKey(org)).key;
    projects[org] = (await service.createProject(org, 'chat')).id;
  }
  app = Fastify({ forceCloseConnections: true });
  app.get('/health', async () => ({ ok: true }));
  await app.register(svcRoutes, {
    prefix: '/v2',
    service,
    rateLimit: { windowMs: kWindowMs, failedAuthPerWindow: kFailedAuthLimit },
    proxy: proxyRoutes,
    proxyOptions: {
      providers: {
        'provider-a': { url: fake.urls.a, key: kFakeKeys.a },
        'provider-b': { url: fake.urls.b, key: kFakeKeys.b },
        'provider-c': { url: fake.urls.c, key: kFakeKeys.c },
      },
      env: {},
    },
  });
  // The hub shares the service's limits (set by the /v2 plugin, registered first).
  await app.register(hubRoutes, { prefix: '/hub', service });
  base = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
});

afterAll(async () => {
  metrics.close();
  await app.close();
  await fake.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const messages = [{ role: 'user' as const, content: 'hello' }];
const limitHeaders = (response: { headers: Headers }) => ({
  limit: response.headers.get('x-ratelimit-limit-requests'),
  remaining: response.headers.get('x-ratelimit-remaining-requests'),
  reset: response.headers.get('x-ratelimit-reset-requests'),
});

async function get(path: string, key: string | null): Promise<Response> {
  return fetch(`${base}${path}`, { headers: key === null ? {} : { authorization: `Bearer ${key}` } });
}

describe('requests per minute per key', () => {
  it('the openai client gets 429 with retry-after, waits, retries by itself and succeeds', async () => {
    await service.setOrgLimits('retry', { requestsPerMinute: 2 });
    const seen: Array<{ status: number; headers: Headers; body: unknown }> = [];
    const openai = new OpenAI({
      baseURL: `${base}/v2/${projects.retry}/`,
      apiKey: keys.retry,
      maxRetries: 3,
      // The SDK's own fetch, watched: every answer it got, retries included.
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        if (response.status === 200) {
          seen.push({ status: 200, headers: response.headers, body: null });
          return response;
        }
        // The SDK reads no body it will retry: read it here, and hand the SDK the same answer.
        const text = await response.text();
        seen.push({ status: response.status, headers: response.headers, body: JSON.parse(text) });
        return new Response(text, { status: response.status, headers: response.headers });
      },
    });
    const upstreamBefore = fake.requests.length;
    const started = Date.now();
    for (let i = 0; i < 3; i++) {
      const completion = await openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages });
      expect(completion.choices[0].message.content).toBe('Echo: hello');
    }
    const statuses = seen.map((r) => r.status);
    expect(statuses.slice(0, 3)).toEqual([200, 200, 429]);
    expect(statuses.at(-1)).toBe(200);
    expect(statuses.slice(3).every((s) => s === 429 || s === 200)).toBe(true);
    // The SDK waited for the window to end, as retry-after said.
    expect(Date.now() - started).toBeGreaterThanOrEqual(Number(seen[2].headers.get('retry-after-ms')));
    // Rejected calls never reached the provider.
    expect(fake.requests.length - upstreamBefore).toBe(3);

    expect(limitHeaders(seen[0])).toMatchObject({ limit: '2', remaining: '1' });
    expect(limitHeaders(seen[1])).toMatchObject({ limit: '2', remaining: '0' });
    const rejected = seen[2];
    expect(limitHeaders(rejected)).toMatchObject({ limit: '2', remaining: '0' });
    const retryAfterMs = Number(rejected.headers.get('retry-after-ms'));
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(kWindowMs);
    expect(rejected.headers.get('retry-after')).toBe(String(Math.ceil(retryAfterMs / 1000)));
    expect(rejected.headers.get('x-ratelimit-reset-requests')).toBe(durationText(retryAfterMs));
    expect(rejected.body).toEqual({
      error: {
        message: `Rate limit reached: an API key of 'retry' may send 2 requests per ${kWindowMs} ms; retry in ${Math.ceil(retryAfterMs / 1000)} s`,
        type: 'rate_limit_error',
        param: null,
        code: 'rate_limited',
      },
    });
  });

  it("answers 429 in each route's error shape: /v2, and the Anthropic shape on its proxy route", async () => {
    await service.setOrgLimits('shapes', { requestsPerMinute: 1 });
    expect((await get('/v2/models', keys.shapes)).status).toBe(200);
    const v2 = await get('/v2/models', keys.shapes);
    expect(v2.status).toBe(429);
    expect(v2.headers.get('retry-after')).toMatch(/^[1-4]$/);
    expect(((await v2.json()) as { error: { type: string; code: string } }).error).toMatchObject({
      type: 'rate_limit_error',
      code: 'rate_limited',
    });

    const anthropic = new Anthropic({ baseURL: `${base}/v2/${projects.shapes}/`, apiKey: keys.shapes, maxRetries: 0 });
    const error = await anthropic.messages.create({ model: 'provider-c:claude-fake', max_tokens: 8, messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect((error as { error: unknown }).error).toEqual({
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: expect.stringMatching(/^Rate limit reached: an API key of 'shapes' may send 1 requests per 4000 ms; retry in [1-4] s$/),
      },
    });
  });

  it('counts a key once across /v2, the proxy and the hub, and leaves the host app and public routes alone', async () => {
    await service.setOrgLimits('shared', { requestsPerMinute: 4 });
    expect(limitHeaders(await get('/v2/models', keys.shared))).toMatchObject({ limit: '4', remaining: '3' });
    const hub = await get('/hub/api/models/shared/svc-small-000000000000', keys.shared);
    expect(hub.status).toBe(404);
    expect(limitHeaders(hub)).toMatchObject({ limit: '4', remaining: '2' });
    const log = await get(`/v2/${projects.shared}/requests`, keys.shared);
    expect(log.status).toBe(200);
    expect(limitHeaders(log)).toMatchObject({ limit: '4', remaining: '1' });
    const proxied = await fetch(`${base}/v2/${projects.shared}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.shared}` },
      body: JSON.stringify({ model: 'provider-a:gpt-fake', messages, stream: true }),
    });
    expect(proxied.status).toBe(200);
    expect(limitHeaders(proxied)).toMatchObject({ limit: '4', remaining: '0' });
    await proxied.text();
    expect((await get('/v2/models', keys.shared)).status).toBe(429);

    const health = await get('/health', keys.shared);
    expect(health.status).toBe(200);
    expect(limitHeaders(health)).toEqual({ limit: null, remaining: null, reset: null });
    expect((await get('/v2/openapi.json', null)).status).toBe(200);
  });

  it("reads the operator's override per request; an organization without one has the default", async () => {
    expect(limitHeaders(await get('/v2/models', keys.override))).toMatchObject({ limit: String(kDefaultOrgLimits.requestsPerMinute) });
    await service.setOrgLimits('override', { requestsPerMinute: 50 });
    expect(limitHeaders(await get('/v2/models', keys.override))).toMatchObject({ limit: '50', remaining: '48' });
    await service.setOrgLimits('override', { requestsPerMinute: null });
    expect(limitHeaders(await get('/v2/models', keys.override))).toMatchObject({
      limit: String(kDefaultOrgLimits.requestsPerMinute),
      remaining: String(kDefaultOrgLimits.requestsPerMinute - 3),
    });
  });
});

describe('failed authentication per client address', () => {
  it('after the limit of bad keys, the address gets 429 for its bad keys, while a good key from it still gets in', async () => {
    // One tally per address across the /v2 routes, the hub and the proxy.
    const paths = ['/v2/models', '/hub/acme/svc-small-000000000000/resolve/main/config.json', `/v2/${projects.retry}/requests`];
    for (const [i, path] of paths.entries()) {
      const response = await get(path, `svc_wrong_${i}`);
      expect(response.status).toBe(401);
    }
    expect(paths.length).toBe(kFailedAuthLimit);
    const proxy = await fetch(`${base}/v2/${projects.retry}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer svc_wrong_again' },
      body: JSON.stringify({ model: 'provider-a:gpt-fake', messages }),
    });
    expect(proxy.status).toBe(429);
    const body = (await proxy.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(
      new RegExp(`^Too many failed authentications from this address \\(${kFailedAuthLimit} per ${kWindowMs} ms\\); retry in [1-4] s$`),
    );
    expect(proxy.headers.get('retry-after')).toMatch(/^[1-4]$/);
    expect((await get('/v2/models', 'svc_wrong_once_more')).status).toBe(429);
    // Another client behind the same address (a NAT, a proxy) with its valid key is not locked out.
    expect((await get('/v2/models', keys.override)).status).toBe(200);

    // The window ends and the address may fail again.
    await new Promise((resolve) => setTimeout(resolve, Number(proxy.headers.get('retry-after-ms'))));
    expect((await get('/v2/models', 'svc_wrong_after')).status).toBe(401);
  });
});

/**
 * A store two servers share, as replicas would share one on a database: here one Map in this process. It
 * implements the `@fastify/rate-limit` store interface in full (fixed windows, like its in-memory store).
 */
function sharedStore(): { Store: FastifyRateLimitStoreCtor; keys: Set<string> } {
  const windows = new Map<string, { current: number; start: number }>();
  const keys = new Set<string>();
  type Callback = (error: Error | null, result?: { current: number; ttl: number }) => void;
  class Store implements FastifyRateLimitStore {
    incr(key: string, callback: Callback, timeWindow: number): void {
      const now = Date.now();
      keys.add(key);
      const open = windows.get(key);
      const window = open !== undefined && open.start + timeWindow > now ? open : { current: 0, start: now };
      window.current += 1;
      windows.set(key, window);
      callback(null, { current: window.current, ttl: window.start + timeWindow - now });
    }
    read(key: string, callback: Callback, timeWindow: number): void {
      const now = Date.now();
      const open = windows.get(key);
      if (open === undefined || open.start + timeWindow <= now) callback(null, { current: 0, ttl: 0 });
      else callback(null, { current: open.current, ttl: open.start + timeWindow - now });
    }
    child(): FastifyRateLimitStore {
      return this;
    }
  }
  return { Store, keys };
}

describe('a store shared by several servers', () => {
  it("counts for all of them: failed authentications at one server refuse the address's bad keys at the other", async () => {
    const { Store, keys: seen } = sharedStore();
    const rateLimit = { store: Store, windowMs: kWindowMs, failedAuthPerWindow: 2 };
    const [one, two] = [await startProxyHarness({ rateLimit }), await startProxyHarness({ rateLimit })];
    try {
      const ask = (base: string, key: string) => fetch(`${base}requests`, { headers: { authorization: `Bearer ${key}` } });
      expect((await ask(one.sdkBase, one.acmeKey)).status).toBe(200);
      expect((await ask(one.sdkBase, 'svc_wrong_1')).status).toBe(401);
      expect((await ask(one.sdkBase, 'svc_wrong_2')).status).toBe(401);
      const locked = await ask(two.sdkBase, 'svc_wrong_3');
      expect(locked.status).toBe(429);
      expect(((await locked.json()) as { error: { message: string } }).error.message).toMatch(
        /^Too many failed authentications from this address \(2 per 4000 ms\); retry in [1-4] s$/,
      );
      expect((await ask(two.sdkBase, two.acmeKey)).status).toBe(200);
      // The store saw each server's key, their organization's count and the address both servers share.
      expect([...seen].sort()).toEqual([one.acmeKeyId, two.acmeKeyId, 'org:acme', '127.0.0.1'].sort());
    } finally {
      await one.close();
      await two.close();
    }
  });
});

describe('metrics', () => {
  it('counts every rejection by the limit that made it', async () => {
    const text = await metrics.registry.getSingleMetricAsString('svc_rate_limited_total');
    const counted = (kind: string) => Number(new RegExp(`svc_rate_limited_total\\{kind="${kind}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    // The tests above were turned away by the per-key rate and by the per-address failed logins.
    expect(counted('requests')).toBeGreaterThan(0);
    expect(counted('failed_authentication')).toBeGreaterThan(0);
  });
});

describe('durationText', () => {
  it("writes OpenAI's reset durations", () => {
    expect([durationText(850), durationText(1500), durationText(59_998), durationText(60_000), durationText(61_250)]).toEqual([
      '850ms',
      '1.5s',
      '59.998s',
      '1m0s',
      '1m1.25s',
    ]);
  });
});
