// The throwaway Redis server (fixtures/redis-server.ts), one per test file.
import { afterAll, beforeAll } from 'vitest';

import { type RedisServer, startRedis } from '../../fixtures/redis-server.js';

export { type RedisServer, startRedis } from '../../fixtures/redis-server.js';

/** One server for the calling test file: started before its tests, stopped after them. */
export function useRedis(): { readonly server: RedisServer } {
  const holder: { server: RedisServer } = { server: undefined as unknown as RedisServer };
  beforeAll(async () => {
    holder.server = await startRedis();
  });
  afterAll(async () => {
    await holder.server?.stop();
  });
  return holder;
}
