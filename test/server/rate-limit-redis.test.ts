// The plugins' `rateLimit.redis` in a host app: counts go to a real redis-server under svc:rl: (also for a service on
// PostgreSQL, whose own counts table then stays empty), the connection closes with the app, and wrong settings fail
// the registration with a message that says what to change.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Fastify from 'fastify';
import pg from 'pg';
import { createClient } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';

import { freePort } from '../../fixtures/postgres-cluster.js';
import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { SvcError } from '../../src/errors.js';
import { svcRoutes } from '../../src/server/routes.js';
import { SvcService } from '../../src/service/service.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { usePostgres } from '../_support/postgres.js';
import { useRedis } from '../_support/redis.js';

const redis = useRedis();
const postgres = usePostgres();
const dir = mkdtempSync(join(tmpdir(), 'svc-limits-redis-'));
let services = 0;

/** A service on a SQLite file of its own: the limiter is made once per service. */
function newService(): SvcService {
  services += 1;
  const at = join(dir, String(services));
  return new SvcService({ store: SqliteStore.open(at), runtime: new WordCountRuntime(join(at, 'hub')) });
}

/** The connections the Redis server has, ours included. */
async function connections(): Promise<number> {
  const client = createClient({ url: redis.server.url });
  await client.connect();
  try {
    return (await client.clientList()).length - 1;
  } finally {
    await client.close();
  }
}

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('svcRoutes with rateLimit.redis', () => {
  it('counts a key in Redis and closes its connection with the app', async () => {
    const service = newService();
    await service.createOrganization('acme');
    await service.setOrgLimits('acme', { requestsPerMinute: 2 });
    const { key, id } = await service.createApiKey('acme');
    const app = Fastify();
    try {
      await app.register(svcRoutes, { prefix: '/v2', service, rateLimit: { redis: redis.server.url } });
      expect(await connections()).toBe(1);
      const statuses = [];
      for (let i = 0; i < 3; i += 1) {
        statuses.push((await app.inject({ url: '/v2/models', headers: { authorization: `Bearer ${key}` } })).statusCode);
      }
      expect(statuses).toEqual([200, 200, 429]);
      const client = createClient({ url: redis.server.url });
      await client.connect();
      expect(await client.get(`svc:rl:${id}`)).toBe('3');
      await client.close();
    } finally {
      await app.close();
      await service.close();
    }
    expect(await connections()).toBe(0);
  });

  it("counts in Redis for a service on PostgreSQL too, leaving the database's counts table empty", async () => {
    const url = await postgres.cluster.createDatabase();
    const service = new SvcService({ store: await PostgresStore.open(url), runtime: new WordCountRuntime(join(dir, 'pg-hub')) });
    await service.createOrganization('acme');
    const { key, id } = await service.createApiKey('acme');
    const app = Fastify();
    try {
      await app.register(svcRoutes, { prefix: '/v2', service, rateLimit: { redis: redis.server.url } });
      expect((await app.inject({ url: '/v2/models', headers: { authorization: `Bearer ${key}` } })).statusCode).toBe(200);
      const client = createClient({ url: redis.server.url });
      await client.connect();
      expect(await client.get(`svc:rl:${id}`)).toBe('1');
      await client.close();
      const db = new pg.Client({ connectionString: url });
      await db.connect();
      expect((await db.query('SELECT count(*)::int AS n FROM request_counts')).rows).toEqual([{ n: 0 }]);
      await db.end();
    } finally {
      await app.close();
      await service.close();
    }
  });

  it('fails the registration when Redis cannot be reached, naming the URL without its password', async () => {
    const port = await freePort();
    const service = newService();
    const app = Fastify();
    try {
      const registered = app.register(svcRoutes, { prefix: '/v2', service, rateLimit: { redis: `redis://svc:secret@127.0.0.1:${port}` } });
      const error = await Promise.resolve(registered).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SvcError);
      expect((error as SvcError).message).toBe(
        `The request counts' Redis at redis://svc:***@127.0.0.1:${port} could not be reached: connect ECONNREFUSED 127.0.0.1:${port}`,
      );
    } finally {
      await app.close().catch(() => {});
      await service.close();
    }
  });

  it('refuses a URL that is not redis://, and a store given as well', async () => {
    for (const [rateLimit, message] of [
      [{ redis: 'postgres://db/svc' }, "rateLimit.redis must be a redis:// or rediss:// URL; got 'postgres://db/svc'"],
      [{ redis: redis.server.url, store: class {} as never }, 'rateLimit.store and rateLimit.redis are two places for the counts; set one'],
    ] as const) {
      const service = newService();
      const app = Fastify();
      try {
        const error = await Promise.resolve(app.register(svcRoutes, { prefix: '/v2', service, rateLimit })).then(
          () => null,
          (e: unknown) => e,
        );
        expect((error as Error).message).toBe(message);
      } finally {
        await app.close().catch(() => {});
        await service.close();
      }
    }
  });
});
