// The real `svc serve` start-up, on a real PostgreSQL and a real Redis that takes a password: no password reaches
// its output, whether it sits in the URL's user information (holding `@` and `:`), in `?password=`, or in the Redis
// URL, through the start-up line, the request log lines, a lost Redis connection and the shutdown.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { redactDatabaseUrl } from '../../src/service/open.js';
import { exited, serve } from '../_support/cli.js';
import { usePostgres } from '../_support/postgres.js';
import { useRedis } from '../_support/redis.js';

const postgres = usePostgres();
const redis = useRedis();
const dir = mkdtempSync(join(tmpdir(), 'svc-serve-credentials-'));
// The throwaway cluster trusts loopback: any password is taken, so the URL may carry the awkward ones.
const kUserInfoPassword = 'pg-s3cr@t:w0rd';
const kQueryPassword = 'qu3ry-s3cret';
const kRedisPassword = 'r3d@s-p4ss';
const kEnv = { SVC_DATABASE_URL: '', SVC_REDIS_URL: '', SVC_LOG_LEVEL: 'info' };

beforeAll(async () => {
  const client = createClient({ url: redis.server.url });
  await client.connect();
  await client.configSet('requirepass', kRedisPassword);
  await client.quit();
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** `svc serve` on `database`, one request answered and one refused, Redis lost and back, then SIGTERM: all it printed. */
async function serveAndStop(database: string): Promise<string> {
  const { port } = redis.server;
  const started = await serve(
    ['--data', dir, '--database', database, '--redis', `redis://default:${kRedisPassword}@127.0.0.1:${port}`],
    kEnv,
  );
  try {
    expect((await fetch(`${started.url}/health`)).status).toBe(200);
    expect((await fetch(`${started.url}/v2/models`, { headers: { authorization: 'Bearer svc_wrong' } })).status).toBe(401);
    await redis.server.stop();
    await expect.poll(() => started.output(), { timeout: 20_000 }).toContain('went away');
    await redis.server.restart();
    const client = createClient({ url: redis.server.url });
    await client.connect();
    await client.configSet('requirepass', kRedisPassword);
    await client.quit();
  } finally {
    started.child.kill('SIGTERM');
    await exited(started.child);
  }
  return started.output();
}

describe('svc serve', () => {
  it('never prints a password from the database or Redis URL', async () => {
    const base = new URL(await postgres.cluster.createDatabase());
    const inUserInfo = `postgres://postgres:${kUserInfoPassword}@${base.host}${base.pathname}`;
    const inQuery = `postgres://postgres@${base.host}${base.pathname}?application_name=svc&password=${kQueryPassword}`;
    for (const database of [inUserInfo, inQuery]) {
      const output = await serveAndStop(database);
      expect(output).toContain(`database: ${redactDatabaseUrl(database)}`);
      expect(output).toContain('svc: SIGTERM, shutting down');
      for (const secret of [kUserInfoPassword, kQueryPassword, kRedisPassword, 'pg-s3cr', 'w0rd', 'r3d@s', 's-p4ss']) {
        expect(output).not.toContain(secret);
      }
    }
  }, 120_000);

  it('redacts every form a password takes in a connection string', () => {
    expect(redactDatabaseUrl(`postgres://svc:${kUserInfoPassword}@db.internal:5432/svc`)).toBe('postgres://svc:***@db.internal:5432/svc');
    expect(redactDatabaseUrl(`postgres://svc@db/svc?sslmode=require&password=${kQueryPassword}&sslpassword=x`)).toBe(
      'postgres://svc@db/svc?sslmode=require&password=***&sslpassword=***',
    );
    expect(redactDatabaseUrl(`redis://:${kRedisPassword}@cache:6379/0`)).toBe('redis://:***@cache:6379/0');
    expect(redactDatabaseUrl(`rediss://default:${kRedisPassword}@cache:6380`)).toBe('rediss://default:***@cache:6380');
    expect(redactDatabaseUrl("host=db user=svc password='a b@c' dbname=svc")).toBe('host=db user=svc password=*** dbname=svc');
    // What is no secret stays: a user alone, a host and port, a URL without credentials.
    expect(redactDatabaseUrl('postgres://svc@db.internal:5432/svc')).toBe('postgres://svc@db.internal:5432/svc');
    expect(redactDatabaseUrl('svc listening on http://127.0.0.1:8080 (database: postgres://db/svc)')).toBe(
      'svc listening on http://127.0.0.1:8080 (database: postgres://db/svc)',
    );
  });
});
