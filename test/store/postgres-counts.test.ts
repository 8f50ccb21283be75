// The request limits' shared counts on a real PostgreSQL database: two stores (two replicas) on one database pass
// the counter contract, and ended windows' rows are deleted.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PostgresStore } from '../../src/store/postgres.js';
import { usePostgres } from '../_support/postgres.js';
import { requestCounterContract, sleep } from './counter-contract.js';

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

requestCounterContract('PostgresRequestCounter', () => ({ one: one.requestCounter, two: two.requestCounter }));

describe('PostgresRequestCounter', () => {
  // After the contract's tests, whose keys these rows are.
  it('deletes the rows of ended windows', async () => {
    const windowMs = 300;
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
