// The request-counter contract: every RequestCounter backend runs these same tests (test/store/postgres-counts.test.ts,
// test/store/redis-counts.test.ts) with two counters on one backend, as two replicas see it. Backend-specific
// behaviour (how ended windows go away) stays in each backend's own file. The keys used here: key_shared, key_burst,
// addr_short.
import { describe, expect, it } from 'vitest';

import type { RequestCounter } from '../../src/store/types.js';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function requestCounterContract(name: string, counters: () => { one: RequestCounter; two: RequestCounter }): void {
  describe(`${name}: the RequestCounter contract`, () => {
    it('counts a key once across two counters on one backend, the window ending when the first request started it', async () => {
      const { one, two } = counters();
      const windowMs = 60_000;
      const first = await one.countRequest('key_shared', windowMs);
      expect(first).toEqual({ count: 1, resetInMs: windowMs });
      const second = await two.countRequest('key_shared', windowMs);
      expect(second.count).toBe(2);
      expect(second.resetInMs).toBeGreaterThan(0);
      expect(second.resetInMs).toBeLessThanOrEqual(windowMs);
      const read = await one.readRequestCount('key_shared');
      expect(read.count).toBe(2);
      expect(await two.readRequestCount('key_never_seen')).toEqual({ count: 0, resetInMs: 0 });
      // Reading counts nothing.
      expect((await one.readRequestCount('key_shared')).count).toBe(2);
    });

    it('gives 40 concurrent requests from both counters the counts 1 to 40, each once', async () => {
      const { one, two } = counters();
      const counted = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? one : two).countRequest('key_burst', 60_000)));
      expect(counted.map((c) => c.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    });

    it('starts a key again at 1 once its window ended', async () => {
      const { one, two } = counters();
      const windowMs = 300;
      expect((await one.countRequest('addr_short', windowMs)).count).toBe(1);
      expect((await one.countRequest('addr_short', windowMs)).count).toBe(2);
      await sleep(windowMs + 50);
      expect(await two.readRequestCount('addr_short')).toEqual({ count: 0, resetInMs: 0 });
      const again = await two.countRequest('addr_short', windowMs);
      expect(again).toEqual({ count: 1, resetInMs: windowMs });
    });
  });
}
