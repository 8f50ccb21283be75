// `npm run bench -- store [--requests N] [--concurrency N] [--jobs N] [--database URL] [--redis URL]`: what the store
// costs a replica, SQLite and PostgreSQL side by side in one process. The predict path's store calls (API key by
// hash, the organization's limits, the model, and on PostgreSQL the shared request counts: what every
// POST /v2/predict asks the store) at concurrency 1 and N, and the job queue's claim + finish cycle. Then the
// shared request count's round trip alone (one per request), PostgreSQL's upsert beside Redis's MULTI. PostgreSQL and
// Redis are throwaway local servers unless --database (an empty database: the bench fills it) or --redis names one.
// Over loopback, so remote servers add their round trips.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { startPostgres } from '../fixtures/postgres-cluster.js';
import { startRedis } from '../fixtures/redis-server.js';
import { PostgresStore } from '../src/store/postgres.js';
import { RedisRequestCounter } from '../src/store/redis-counts.js';
import { SqliteStore } from '../src/store/sqlite.js';
import type { RequestCounter, Store } from '../src/store/types.js';
import { intOption } from './_common.js';

const kOrgs = 100;
const kHash = (n: number) => n.toString(16).padStart(64, '0');
const kModel = (n: number) => `svc-small-${n.toString(16).padStart(12, '0')}`;

function stringOption(args: readonly string[], name: string): string | undefined {
  const at = args.indexOf(`--${name}`);
  return at < 0 ? undefined : args[at + 1];
}

async function fill(store: Store, jobs: number): Promise<void> {
  for (let n = 0; n < kOrgs; n += 1) {
    const org = `org-${n}`;
    await store.createOrganization(org);
    await store.insertApiKey({ id: `key_${n}`, orgId: org, hash: kHash(n), prefix: 'svc_bench', createdAt: 0, revokedAt: null });
  }
  const examples = Array.from({ length: 20 }, (_, i) => ({ text: `example ${i}`, label: i % 2 === 0, label_text: 'positive' }));
  for (let n = 0; n < jobs; n += 1) {
    await store.createModelWithJob(
      {
        id: kModel(n),
        orgId: `org-${n % kOrgs}`,
        baseModel: 'svc-small',
        taskType: 'binary-classification',
        labelText: 'positive',
        status: 'training',
        error: null,
        createdAt: n,
        updatedAt: n,
      },
      examples,
      {},
    );
  }
}

/**
 * The store calls of one predict request. On PostgreSQL they include the request limits' shared counts (the
 * address's failed logins read, the key's request counted); SQLite's counts are in the process's memory.
 */
async function predictReads(store: Store, n: number, models: number): Promise<void> {
  await store.requestCounter?.readRequestCount('127.0.0.1');
  const key = await store.findApiKeyByHash(kHash(n % kOrgs));
  await store.getOrgLimits(key!.orgId);
  await store.requestCounter?.countRequest(key!.id, 60_000);
  await store.getModel(kModel(n % models));
}

interface Timing {
  perSec: number;
  p50: number;
  p99: number;
}

/** `call(n)` for n = 0 .. requests - 1, `concurrency` at a time. */
async function timed(call: (n: number) => Promise<unknown>, requests: number, concurrency: number): Promise<Timing> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const n = next++;
        const start = performance.now();
        await call(n);
        latencies.push(performance.now() - start);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return { perSec: requests / seconds, p50: latencies[latencies.length >> 1], p99: latencies[Math.floor(latencies.length * 0.99)] };
}

async function claimCycles(store: Store, jobs: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < jobs; i += 1) {
    const job = await store.claimNextJob(Date.now(), { maxRunningJobs: 1, holder: 'bench', leaseMs: 30_000 });
    await store.setJobState(job!.modelId, 'done', Date.now());
  }
  return jobs / ((performance.now() - t0) / 1000);
}

/**
 * The shared request count alone, as every limited request makes it: one round trip, over 100 keys (one per
 * organization's key) so that concurrent calls mostly count different keys, as different callers would.
 */
async function countRoundTrips(counters: [string, RequestCounter][], requests: number, concurrency: number): Promise<void> {
  const results: Record<string, { one: Timing; many: Timing }> = {};
  for (const [name, counter] of counters) {
    const count = (n: number) => counter.countRequest(`key_${n % kOrgs}`, 60_000);
    await timed(count, 500, concurrency);
    results[name] = { one: await timed(count, requests, 1), many: await timed(count, requests, concurrency) };
    const { one, many } = results[name];
    console.log(
      `${name.padEnd(8)} request count: ${one.perSec.toFixed(0)} req/s at concurrency 1 (p50 ${one.p50.toFixed(3)} ms, p99 ${one.p99.toFixed(3)} ms), ` +
        `${many.perSec.toFixed(0)} req/s at ${concurrency} (p50 ${many.p50.toFixed(3)} ms, p99 ${many.p99.toFixed(3)} ms)`,
    );
  }
  const { postgres, redis } = results;
  console.log(
    `redis / postgres request count: ${(redis.one.perSec / postgres.one.perSec).toFixed(2)}x at concurrency 1, ` +
      `${(redis.many.perSec / postgres.many.perSec).toFixed(2)}x at ${concurrency}`,
  );
}

export async function run(args: string[]): Promise<void> {
  const requests = intOption(args, 'requests', 5000);
  const concurrency = intOption(args, 'concurrency', 16);
  const jobs = intOption(args, 'jobs', 500);
  const given = stringOption(args, 'database');
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-store-'));
  const givenRedis = stringOption(args, 'redis');
  const cluster = given === undefined ? await startPostgres() : undefined;
  const redisServer = givenRedis === undefined ? await startRedis() : undefined;
  const postgres = await PostgresStore.open(given ?? (await cluster!.createDatabase()));
  const stores: [string, Store][] = [
    ['sqlite', SqliteStore.open(dir)],
    ['postgres', postgres],
  ];
  const redis = await RedisRequestCounter.connect(givenRedis ?? redisServer!.url);
  try {
    const rows: Record<string, number>[] = [];
    for (const [name, store] of stores) {
      await fill(store, jobs);
      // Warm up: statements prepared, connections open, pages cached.
      const predict = (n: number) => predictReads(store, n, jobs);
      await timed(predict, 500, concurrency);
      const one = await timed(predict, requests, 1);
      const many = await timed(predict, requests, concurrency);
      const claims = await claimCycles(store, jobs);
      rows.push({ one: one.perSec, oneP50: one.p50, oneP99: one.p99, many: many.perSec, manyP50: many.p50, manyP99: many.p99, claims });
      console.log(
        `${name.padEnd(8)} predict reads: ${one.perSec.toFixed(0)} req/s at concurrency 1 (p50 ${one.p50.toFixed(3)} ms, p99 ${one.p99.toFixed(3)} ms), ` +
          `${many.perSec.toFixed(0)} req/s at ${concurrency} (p50 ${many.p50.toFixed(3)} ms, p99 ${many.p99.toFixed(3)} ms); ` +
          `claim + finish: ${claims.toFixed(0)} jobs/s`,
      );
    }
    const [sqlite, postgresRow] = rows;
    console.log(
      `postgres / sqlite: ${(postgresRow.one / sqlite.one).toFixed(2)}x at concurrency 1, ${(postgresRow.many / sqlite.many).toFixed(2)}x at ${concurrency}, ` +
        `${(postgresRow.claims / sqlite.claims).toFixed(2)}x claims`,
    );
    await countRoundTrips(
      [
        ['postgres', postgres.requestCounter],
        ['redis', redis],
      ],
      requests,
      concurrency,
    );
  } finally {
    for (const [, store] of stores) await store.close();
    await redis.close();
    await cluster?.stop();
    await redisServer?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
