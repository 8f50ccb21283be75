// The request limits' shared counts on a real PostgreSQL database: two stores (two replicas) on one database count
// one key together, concurrent requests each get their own count, windows end and start again, and ended windows'
// rows are deleted.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PostgresStore } from '../../src/store/postgres.js';
import { usePostgres } from '../_support/postgres.js';

const server = usePostgres();
let url: string;
let one: PostgresStore;
let two: PostgresStore;

beforeAll(async () => {
  url = await server.cluster.createDatabase();
  [one, two] = [await PostgresStore.open(url), await PostgresStore.open(url)];
});

afterAll(async () => {
  await one.close();
  await two.close();
});

async function rows(): Promise<Array<{ key: string; count: number }>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('SELECT key, count::int AS count FROM request_counts ORDER BY key')).rows;
  } finally {
    await client.end();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('PostgresRequestCounter', () => {
  it('counts a key once across two stores on one database, the window ending when the first request started it', async () => {
    const windowMs = 60_000;
    const first = await one.requestCounter.countRequest('key_shared', windowMs);
    expect(first.count).toBe(1);
    expect(first.resetInMs).toBe(windowMs);
    const second = await two.requestCounter.countRequest('key_shared', windowMs);
    expect(second.count).toBe(2);
    expect(second.resetInMs).toBeGreaterThan(0);
    expect(second.resetInMs).toBeLessThanOrEqual(windowMs);
    const read = await one.requestCounter.readRequestCount('key_shared');
    expect(read.count).toBe(2);
    expect(await two.requestCounter.readRequestCount('key_never_seen')).toEqual({ count: 0, resetInMs: 0 });
    // Reading counts nothing.
    expect((await one.requestCounter.readRequestCount('key_shared')).count).toBe(2);
  });

  it('gives 40 concurrent requests from both stores the counts 1 to 40, each once', async () => {
    const counted = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? one : two).requestCounter.countRequest('key_burst', 60_000)),
    );
    expect(counted.map((c) => c.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  });

  it('starts a key again at 1 once its window ended, and deletes the rows of ended windows', async () => {
    const windowMs = 300;
    expect((await one.requestCounter.countRequest('addr_short', windowMs)).count).toBe(1);
    expect((await one.requestCounter.countRequest('addr_short', windowMs)).count).toBe(2);
    await sleep(windowMs + 50);
    expect(await two.requestCounter.readRequestCount('addr_short')).toEqual({ count: 0, resetInMs: 0 });
    const again = await two.requestCounter.countRequest('addr_short', windowMs);
    expect(again).toEqual({ count: 1, resetInMs: windowMs });

    await sleep(windowMs + 50);
    // The ended window of addr_short goes with the next count, from either store; live windows stay.
    expect((await one.requestCounter.countRequest('addr_other', windowMs)).count).toBe(1);
    expect(await rows()).toEqual([
      { key: 'addr_other', count: 1 },
      { key: 'key_burst', count: 40 },
      { key: 'key_shared', count: 2 },
    ]);
    expect(await one.requestCounter.pruneRequestCounts()).toBe(0);
  });
});
