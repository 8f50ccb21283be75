// Limits across replicas through Redis: two `svc serve --redis` processes, each on a SQLite data directory of its
// own (the same organization and key stored in both), share a key's request count and an address's failed
// authentications through one real redis-server, and nothing else. Redis stopped: 503 overloaded. Redis unreachable
// at the start: the server does not start, and says which URL it could not reach.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freePort } from '../../fixtures/postgres-cluster.js';
import type { StartedProcess } from '../../fixtures/serve-process.js';
import { openService } from '../../src/service/open.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { exited, serve, svc } from '../_support/cli.js';
import { useRedis } from '../_support/redis.js';
import { expectAddressLockedOut, expectCountsUnavailable, expectFourthRejected, models } from '../_support/replica-limits.js';

const redis = useRedis();
const dir = mkdtempSync(join(tmpdir(), 'svc-replica-redis-'));
const kFailedAuthLimit = 2;
// Neither variable from the calling shell: the flags alone say where the data and the counts are.
const kEnv = { SVC_DATABASE_URL: '', SVC_REDIS_URL: '', SVC_LOG_LEVEL: 'warn' };
let key: string;
let keyId: string;
let one: StartedProcess;
let two: StartedProcess;

/** The organization `rpm` (3 requests a minute) and one API key, stored alike in both data directories. */
async function sameTenantIn(first: string, second: string): Promise<void> {
  const service = openService(first, []);
  try {
    await service.createOrganization('rpm');
    await service.setOrgLimits('rpm', { requestsPerMinute: 3 });
    key = (await service.createApiKey('rpm')).key;
    const [record] = await service.store.listApiKeys('rpm');
    keyId = record.id;
    const copy = SqliteStore.open(second);
    try {
      await copy.createOrganization('rpm');
      await copy.setOrgLimits('rpm', { requestsPerMinute: 3 });
      await copy.insertApiKey(record);
    } finally {
      await copy.close();
    }
  } finally {
    await service.close();
  }
}

const flags = (name: string) => ['--data', join(dir, name), '--redis', redis.server.url, '--failed-auth-limit', String(kFailedAuthLimit)];

beforeAll(async () => {
  await sameTenantIn(join(dir, 'one'), join(dir, 'two'));
  one = await serve(flags('one'), kEnv);
  two = await serve(flags('two'), kEnv);
});

afterAll(async () => {
  for (const replica of [one, two]) {
    if (replica === undefined) continue;
    replica.child.kill('SIGTERM');
    await exited(replica.child);
  }
  rmSync(dir, { recursive: true, force: true });
});

/** A count as Redis holds it. */
async function redisCount(name: string): Promise<string | null> {
  const client = createClient({ url: redis.server.url });
  await client.connect();
  try {
    return await client.get(name);
  } finally {
    await client.close();
  }
}

describe('two replicas on their own SQLite files, sharing one Redis', () => {
  it('logs where the counts are', () => {
    expect(one.output()).toContain(`(data: ${join(dir, 'one')}, request counts: ${redis.server.url})`);
  });

  it("share a key's count: with 3 requests a minute, the 4th is 429 wherever it lands, with OpenAI's headers", async () => {
    await expectFourthRejected(one, two, key, 'rpm');
    // The count is Redis's: four requests counted under the key's id, in neither process.
    expect(await redisCount(`svc:rl:${keyId}`)).toBe('4');
    expect((await models(one, key)).status).toBe(429);
  });

  it("share an address's failed authentications: bad keys at one replica refuse the address's bad keys at the other", async () => {
    // The key spent its own rate in the test above.
    await expectAddressLockedOut(one, two, key, kFailedAuthLimit, true);
    // Counted first, then decided: the refused bad key is counted too.
    expect(await redisCount('svc:rl:127.0.0.1')).toBe(String(kFailedAuthLimit + 1));
  });

  // Last: it stops the file's Redis.
  it('answer 503 overloaded with retry-after once Redis is stopped, neither a 500 nor an unlimited request', async () => {
    await redis.server.stop();
    for (const replica of [one, two]) {
      await expectCountsUnavailable(await models(replica, key), 'Redis');
      // Said once in the replica's log (as a warning), not once per reconnection attempt.
      const lostLines = () =>
        replica
          .output()
          .split('\n')
          .filter((line) => line.includes('went away'));
      // The line comes through the child's stdout, which may trail the HTTP answer.
      for (let i = 0; i < 50 && lostLines().length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
      const lost = lostLines();
      expect(lost.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual([
        `Redis at ${redis.server.url} went away; requests answer 503 until it is back`,
      ]);
    }
  });
});

describe('a Redis that cannot be reached at the start', () => {
  it('stops svc serve with exit code 1 and a message naming the URL', async () => {
    const port = await freePort();
    const url = `redis://:secret@127.0.0.1:${port}`;
    const result = await svc(['serve', '--port', '0', '--data', join(dir, 'unreachable'), '--redis', url], kEnv);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      `svc serve: The request counts' Redis at redis://:***@127.0.0.1:${port} could not be reached: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
  });

  it('refuses a URL that is not redis:// with exit code 1', async () => {
    const result = await svc(['serve', '--port', '0', '--data', join(dir, 'wrong'), '--redis', 'http://127.0.0.1:6379'], kEnv);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe("svc serve: --redis must be a redis:// or rediss:// URL; got 'http://127.0.0.1:6379'");
  });
});
