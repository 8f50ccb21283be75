// Failed authentications and organization rates on each place the counts live, with real servers as `svc serve`
// starts them: one on SQLite (counts in its memory), two replicas on one PostgreSQL database, two on their own SQLite
// files sharing one Redis. Wrong keys and wrong /metrics tokens count per client address, counted first and decided
// after (200 at once: exactly the limit answer 401), and never refuse a valid key; all the keys of an organization
// share its rate, across replicas.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { type RunningServer, type ServerOptions, startServer } from '../../src/server/app.js';
import { usePostgres } from '../_support/postgres.js';
import { useRedis } from '../_support/redis.js';

const pgServer = usePostgres();
const redis = useRedis();
const dir = mkdtempSync(join(tmpdir(), 'svc-auth-limits-'));
const kFailedAuthLimit = 20;
const kToken = 'metrics-token-for-auth-limits';

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The servers of one backend; `two` is `one` where there is only one (SQLite alone). */
interface Replicas {
  one: RunningServer;
  two: RunningServer;
  close(): Promise<void>;
  /** A new organization with `keys` API keys, known to both replicas. */
  tenant(org: string, keys: number, limits: { requestsPerMinute?: number; orgRequestsPerMinute?: number }): Promise<string[]>;
}

function options(name: string, extra: ServerOptions): ServerOptions {
  return {
    dataDir: join(dir, name),
    port: 0,
    logLevel: 'silent',
    metricsToken: kToken,
    // Tests name their client address with X-Forwarded-For (from a loopback peer), so that each has its own tally.
    trustProxy: 'loopback',
    rateLimit: { failedAuthPerWindow: kFailedAuthLimit },
    proxy: false,
    ...extra,
  };
}

async function sqliteAlone(): Promise<Replicas> {
  const one = await startServer(options('sqlite', {}));
  return {
    one,
    two: one,
    close: () => one.close(),
    async tenant(org, keys, limits) {
      await one.service.createOrganization(org);
      await one.service.setOrgLimits(org, limits);
      const made = [];
      for (let i = 0; i < keys; i += 1) made.push((await one.service.createApiKey(org)).key);
      return made;
    },
  };
}

async function postgresReplicas(): Promise<Replicas> {
  const database = await pgServer.cluster.createDatabase();
  const shared = { database, artifactsDir: join(dir, 'pg-models') };
  const one = await startServer(options('pg-one', shared));
  const two = await startServer(options('pg-two', shared));
  return {
    one,
    two,
    close: async () => {
      await one.close();
      await two.close();
    },
    async tenant(org, keys, limits) {
      await one.service.createOrganization(org);
      await two.service.setOrgLimits(org, limits);
      const made = [];
      for (let i = 0; i < keys; i += 1) made.push((await (i % 2 === 0 ? one : two).service.createApiKey(org)).key);
      return made;
    },
  };
}

async function redisReplicas(): Promise<Replicas> {
  const one = await startServer(options('redis-one', { redis: redis.server.url }));
  const two = await startServer(options('redis-two', { redis: redis.server.url }));
  return {
    one,
    two,
    close: async () => {
      await one.close();
      await two.close();
    },
    // Each replica has its own SQLite file: the same records are written to both.
    async tenant(org, keys, limits) {
      for (const server of [one, two]) {
        await server.service.createOrganization(org);
        await server.service.setOrgLimits(org, limits);
      }
      const made = [];
      for (let i = 0; i < keys; i += 1) {
        const { key, id } = await one.service.createApiKey(org);
        const [record] = (await one.service.store.listApiKeys(org)).filter((r) => r.id === id);
        await two.service.store.insertApiKey(record);
        made.push(key);
      }
      return made;
    },
  };
}

/** `GET path` at a server, as the client at `client` (a loopback address, through X-Forwarded-For). */
function get(server: RunningServer, path: string, bearer: string, client: string): Promise<Response> {
  return fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${bearer}`, 'x-forwarded-for': client } });
}

async function message(response: Response): Promise<string> {
  return ((await response.json()) as { error: { message: string } }).error.message;
}

// Whole seconds left in a one-minute window that began a few seconds ago at most, on a loaded machine.
const kRetryAfter = /^(5\d|60)$/;
const kFailedMessage = new RegExp(
  `^Too many failed authentications from this address \\(${kFailedAuthLimit} per minute\\); retry in (5\\d|60) s$`,
);

describe.each([
  ['SQLite, one server', sqliteAlone],
  ['PostgreSQL, two replicas', postgresReplicas],
  ['Redis, two replicas', redisReplicas],
])('%s', (_name, start) => {
  let replicas: Replicas;
  const at = (i: number) => (i % 2 === 0 ? replicas.one : replicas.two);

  it('starts', async () => {
    replicas = await start();
  });

  it('200 bad keys at once from one address: exactly the limit answer 401, the rest 429; valid keys among them all get in', async () => {
    const [good] = await replicas.tenant('flooded', 1, {});
    const client = '127.0.0.2';
    const bad = Array.from({ length: 200 }, (_, i) => get(at(i), '/v2/models', `svc_wrong_${i}`, client));
    const valid = Array.from({ length: 10 }, (_, i) => get(at(i), '/v2/models', good, client));
    const [badAnswers, validAnswers] = await Promise.all([Promise.all(bad), Promise.all(valid)]);
    const statuses = badAnswers.map((r) => r.status);
    expect(statuses.filter((s) => s === 401).length).toBe(kFailedAuthLimit);
    expect(statuses.filter((s) => s === 429).length).toBe(200 - kFailedAuthLimit);
    const refused = badAnswers.find((r) => r.status === 429)!;
    expect(refused.headers.get('retry-after')).toMatch(kRetryAfter);
    expect(await message(refused)).toMatch(kFailedMessage);
    expect(validAnswers.map((r) => r.status)).toEqual(Array(10).fill(200));
    // And after the flood, at either replica.
    for (const server of [replicas.one, replicas.two]) expect((await get(server, '/v2/models', good, client)).status).toBe(200);
    expect((await get(replicas.two, '/v2/models', 'svc_wrong_after', client)).status).toBe(429);
    // Another client address has its own tally.
    expect((await get(replicas.two, '/v2/models', 'svc_wrong_elsewhere', '127.0.0.3')).status).toBe(401);
  });

  it('wrong /metrics tokens count with wrong keys, per address; the right token still scrapes', async () => {
    const [good] = await replicas.tenant('scraped', 1, {});
    const client = '127.0.0.4';
    for (let i = 0; i < kFailedAuthLimit - 1; i += 1) {
      const answer = await get(at(i), '/metrics', `wrong-token-${i}`, client);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer');
    }
    // The last failure the address may make, with a wrong key; then tokens and keys alike are refused.
    expect((await get(replicas.one, '/v2/models', 'svc_wrong', client)).status).toBe(401);
    const refused = await get(replicas.two, '/metrics', 'wrong-token-again', client);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(kRetryAfter);
    expect(await refused.json()).toEqual({
      error: { message: expect.stringMatching(kFailedMessage), type: 'rate_limit_error', param: null, code: 'rate_limited' },
    });
    expect((await get(replicas.one, '/v2/models', 'svc_wrong_too', client)).status).toBe(429);
    // The right token and a valid key from that address are served.
    for (const server of [replicas.one, replicas.two]) {
      const scrape = await get(server, '/metrics', kToken, client);
      expect(scrape.status).toBe(200);
      expect(await scrape.text()).toContain('svc_rate_limited_total{kind="failed_authentication"}');
      expect((await get(server, '/v2/models', good, client)).status).toBe(200);
    }
  });

  it("a second key of an organization gets no fresh allowance: the organization's rate holds across its keys and replicas", async () => {
    const [first, second] = await replicas.tenant('two-keys', 2, { requestsPerMinute: 3 });
    const client = '127.0.0.5';
    const answers = [];
    for (let i = 0; i < 3; i += 1) answers.push(await get(at(i), '/v2/models', first, client));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    const refused = await get(replicas.two, '/v2/models', second, client);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-limit-requests')).toBe('3');
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(refused.headers.get('retry-after')).toMatch(kRetryAfter);
    expect(await message(refused)).toMatch(
      /^Rate limit reached: the API keys of 'two-keys' together may send 3 requests per minute; retry in (5\d|60) s$/,
    );
  });

  it("with an organization rate above the key rate, each key keeps its own and all of them the organization's", async () => {
    const [first, second] = await replicas.tenant('org-rpm', 2, { requestsPerMinute: 3, orgRequestsPerMinute: 5 });
    const client = '127.0.0.6';
    const firsts = [];
    for (let i = 0; i < 4; i += 1) firsts.push(await get(at(i), '/v2/models', first, client));
    expect(firsts.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    // The headers tell the nearer limit: the key's, then the organization's once it is closer.
    expect(firsts.map((r) => r.headers.get('x-ratelimit-remaining-requests'))).toEqual(['2', '1', '0', '0']);
    expect(await message(firsts[3])).toMatch(
      /^Rate limit reached: an API key of 'org-rpm' may send 3 requests per minute; retry in (5\d|60) s$/,
    );
    // The key refused for its own rate spent none of the organization's: the second key has 5 - 3 left.
    const seconds = [];
    for (let i = 0; i < 3; i += 1) seconds.push(await get(at(i + 1), '/v2/models', second, client));
    expect(seconds.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(seconds.map((r) => [r.headers.get('x-ratelimit-limit-requests'), r.headers.get('x-ratelimit-remaining-requests')])).toEqual([
      ['5', '1'],
      ['5', '0'],
      ['5', '0'],
    ]);
    expect(await message(seconds[2])).toMatch(
      /^Rate limit reached: the API keys of 'org-rpm' together may send 5 requests per minute; retry in (5\d|60) s$/,
    );
  });

  it('stops', async () => {
    await replicas?.close();
  });
});
