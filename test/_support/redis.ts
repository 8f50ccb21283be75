// The throwaway Redis server (fixtures/redis-server.ts), one per test file.
import { type RedisServer, startRedis } from '../../fixtures/redis-server.js';
import { useStarted } from './throwaway.js';

export { type RedisServer, startRedis } from '../../fixtures/redis-server.js';

/** One server for the calling test file: started before its tests, stopped after them. */
export function useRedis(): { readonly server: RedisServer } {
  const started = useStarted(startRedis);
  return {
    get server() {
      return started.current;
    },
  };
}
