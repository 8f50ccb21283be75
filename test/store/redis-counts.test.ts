// The request limits' shared counts on a real redis-server: two counters (two replicas) on one server pass the
// counter contract; windows are Redis keys under svc:rl: that expire by themselves; an unreachable server fails the
// connection with the client's reason, a hung server fails counts after 2 s, and a server that stops fails counts
// at once until it is back.
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freePort } from '../../fixtures/postgres-cluster.js';
import { RedisRequestCounter } from '../../src/store/redis-counts.js';
import { useRedis } from '../_support/redis.js';
import { requestCounterContract, sleep } from './counter-contract.js';

const redis = useRedis();
let one: RedisRequestCounter;
let two: RedisRequestCounter;
const events: string[] = [];

beforeAll(async () => {
  one = await RedisRequestCounter.connect(redis.server.url, {
    onLost: (cause) => events.push(`lost: ${cause.constructor.name}`),
    onBack: () => events.push('back'),
  });
  two = await RedisRequestCounter.connect(redis.server.url);
});

afterAll(async () => {
  await one?.close();
  await two?.close();
});

/** The counts' keys and their TTLs, read with a client of our own. */
async function keys(): Promise<Array<{ key: string; count: string | null; ttlSet: boolean }>> {
  const client = createClient({ url: redis.server.url });
  await client.connect();
  try {
    const names = (await client.keys('*')).sort();
    return await Promise.all(names.map(async (key) => ({ key, count: await client.get(key), ttlSet: (await client.pTTL(key)) > 0 })));
  } finally {
    await client.close();
  }
}

requestCounterContract('RedisRequestCounter', () => ({ one, two }));

describe('RedisRequestCounter', () => {
  // After the contract's tests, whose keys these are.
  it('keeps each window as a key under svc:rl: whose TTL ends it: ended windows are gone with nothing pruned', async () => {
    await sleep(350);
    expect(await keys()).toEqual([
      { key: 'svc:rl:key_burst', count: '40', ttlSet: true },
      { key: 'svc:rl:key_shared', count: '2', ttlSet: true },
    ]);
  });

  it('rejects a connection to a server that cannot be reached with the reason, without retrying', async () => {
    const port = await freePort();
    await expect(RedisRequestCounter.connect(`redis://127.0.0.1:${port}`)).rejects.toThrow(`connect ECONNREFUSED 127.0.0.1:${port}`);
  });

  it('fails a count that a hung server does not answer after 2 s, and counts again once it answers', async () => {
    redis.server.pause();
    try {
      await expect(one.countRequest('key_hung', 60_000)).rejects.toThrow('Redis did not answer within 2000 ms');
    } finally {
      redis.server.resume();
    }
    // The count sent before the pause was applied when the server woke up: the window holds both.
    expect((await one.countRequest('key_hung', 60_000)).count).toBe(2);
  });

  it('fails counts at once while the server is stopped, and counts again once it is back', async () => {
    expect((await one.countRequest('key_outage', 60_000)).count).toBe(1);
    await redis.server.stop();
    // Refused by the client, not queued until the server is back (nor left to the 2 s answer timeout). The reason
    // depends on where the client is in its reconnection cycle when the count comes: the closed socket, the refused
    // connection, or offline between attempts.
    const kClientReasons = /^(Socket closed unexpectedly|connect ECONNREFUSED 127\.0\.0\.1:\d+|The client is offline)$/;
    await expect(one.countRequest('key_outage', 60_000)).rejects.toThrow(kClientReasons);
    await expect(two.readRequestCount('key_outage')).rejects.toThrow(kClientReasons);
    await redis.server.restart();
    // The client reconnects by itself within its backoff (at most 2 s between attempts).
    let counted: number | undefined;
    for (let i = 0; i < 60 && counted === undefined; i += 1) {
      counted = await one.countRequest('key_outage', 60_000).then(
        (c) => c.count,
        () => undefined,
      );
      if (counted === undefined) await sleep(100);
    }
    // The restarted server is empty: the window starts again.
    expect(counted).toBe(1);
    expect(events).toEqual(['lost: SocketClosedUnexpectedlyError', 'back']);
  });
});
