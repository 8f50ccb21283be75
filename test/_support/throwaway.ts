// A throwaway server (PostgreSQL cluster, Redis) for one test file.
import { afterAll, beforeAll } from 'vitest';

/** Starts a server before the calling test file's tests and stops it after them; `current` is it, once started. */
export function useStarted<T extends { stop(): Promise<void> }>(start: () => Promise<T>): { readonly current: T } {
  let started: T | undefined;
  beforeAll(async () => {
    started = await start();
  });
  afterAll(async () => {
    await started?.stop();
  });
  return {
    get current(): T {
      if (started === undefined) throw new Error('the server is not started yet: read it inside a hook or a test');
      return started;
    },
  };
}
