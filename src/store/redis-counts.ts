import type { RedisClientType } from 'redis';

import { requireOptional } from '../optional-deps.js';
import type { RequestCount, RequestCounter } from './types.js';

/** Every count's key starts with this, so the counts can share a Redis database with other data. */
export const kRedisKeyPrefix = 'svc:rl:';

/**
 * How long a count may take before the request is answered 503: a Redis that stopped answering without closing its
 * connection (a paused host, a network partition) must not hold every request up with it.
 */
const kCommandTimeoutMs = 2000;

/** Waits between reconnection attempts once the first connection was made: 100 ms, doubling, at most 2 s. */
const reconnectDelay = (retries: number) => Math.min(100 * 2 ** retries, 2000);

/** What a counter reports about its connection: lost (with the reason) and back. */
export interface RedisConnectionEvents {
  onLost?(cause: Error): void;
  onBack?(): void;
}

/**
 * The request limits' counts in Redis, shared by every replica that names the same Redis server. A key's window is
 * a Redis key of its own whose TTL is the window: Redis removes ended windows by itself, so nothing is pruned.
 * Each count is one round trip, a `MULTI` of `INCR`, `PEXPIRE NX` (the first request of a window sets its end, later
 * ones leave it) and `PTTL`: atomic, so concurrent requests from all replicas each get their own count.
 *
 * While Redis is away, counts fail at once (no queue of commands waiting for it) and the client reconnects in the
 * background; `close()` ends it.
 *
 * @example
 * ```ts
 * const counter = await RedisRequestCounter.connect('redis://127.0.0.1:6379');
 * await counter.countRequest('key_0123456789ab', 60_000); // { count: 1, resetInMs: 60000 }
 * await counter.countRequest('key_0123456789ab', 60_000); // { count: 2, resetInMs: 59998 }
 * await counter.close();
 * ```
 */
export class RedisRequestCounter implements RequestCounter {
  readonly #client: RedisClientType;

  private constructor(client: RedisClientType) {
    this.#client = client;
  }

  /**
   * Connects to the Redis server at `url` (`redis://[user:password@]host:port[/db]`, or `rediss://` for TLS). The
   * first connection is tried once: a server that cannot be reached rejects here, with the client's reason.
   * The `redis` package (an optional dependency) is loaded only now, so that services without Redis never need it.
   */
  static async connect(url: string, events: RedisConnectionEvents = {}): Promise<RedisRequestCounter> {
    const { createClient } = requireOptional<typeof import('redis')>('redis');
    let connected = false;
    let lost = false;
    const client = createClient({
      url,
      disableOfflineQueue: true,
      socket: { reconnectStrategy: (retries, cause) => (connected ? reconnectDelay(retries) : cause) },
    }) as RedisClientType;
    // Without a listener an 'error' event would end the process; each failed reconnection emits one.
    client.on('error', (error: Error) => {
      if (!connected || lost) return;
      lost = true;
      events.onLost?.(error);
    });
    client.on('ready', () => {
      if (lost) events.onBack?.();
      lost = false;
    });
    await client.connect();
    connected = true;
    return new RedisRequestCounter(client);
  }

  async countRequest(key: string, windowMs: number): Promise<RequestCount> {
    const name = kRedisKeyPrefix + key;
    const [count, started, ttl] = await timed(this.#client.multi().incr(name).pExpire(name, windowMs, 'NX').pTTL(name).exec());
    // PEXPIRE NX answers 1 only when this request opened the window: it ends a whole window from now, and PTTL,
    // read a moment later, could already say one millisecond less.
    return { count: Number(count), resetInMs: Number(started) === 1 ? windowMs : Number(ttl) };
  }

  async readRequestCount(key: string): Promise<RequestCount> {
    const name = kRedisKeyPrefix + key;
    const [count, ttl] = await timed(this.#client.multi().get(name).pTTL(name).exec());
    // PTTL is -2 for a key that does not exist (no open window).
    return count === null || Number(ttl) < 0 ? { count: 0, resetInMs: 0 } : { count: Number(count), resetInMs: Number(ttl) };
  }

  /** Closes the connection, after the commands already sent have been answered. */
  async close(): Promise<void> {
    if (this.#client.isOpen) await this.#client.close();
  }
}

function timed<T>(reply: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${kCommandTimeoutMs} ms`)), kCommandTimeoutMs);
  });
  return Promise.race([reply, late]).finally(() => clearTimeout(timer));
}
