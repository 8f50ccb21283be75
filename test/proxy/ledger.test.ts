// The proxy ledger on both stores: budget holds granted atomically (two stores on one database reserving at once
// never grant the same tokens), grown, given back with the log row that counts the call, lapsed when their process
// died; and the per-project count of stored body bytes, which pruning lowers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres.js';
import { kBodiesNotKept } from '../../src/store/proxy-ledger.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { RequestLogRow, Store } from '../../src/store/types.js';
import { usePostgres } from '../_support/postgres.js';

const server = usePostgres();
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const backends: [string, () => Promise<[Store, Store]>][] = [
  [
    'SQLite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'svc-ledger-'));
      dirs.push(dir);
      return [SqliteStore.open(dir), SqliteStore.open(dir)];
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const url = await server.cluster.createDatabase();
      return [await PostgresStore.open(url), await PostgresStore.open(url)];
    },
  ],
];

const month = '2026-11';
const at = Date.UTC(2026, 10, 20);
const row = (projectId: string, tokensIn: number, body = '{}'): Omit<RequestLogRow, 'id'> => ({
  projectId,
  keyId: 'key_1',
  provider: 'provider-a',
  model: 'provider-a:m',
  stream: false,
  status: 200,
  ttfbMs: 1,
  totalMs: 2,
  tokensIn,
  tokensOut: 0,
  error: null,
  requestBody: body,
  responseBody: body,
  createdAt: at,
});

describe.each(backends)('the proxy ledger on %s', (_, open) => {
  it('grants at most what is left, counting live holds, and gives a hold back with the row that counts the call', async () => {
    const [store, other] = await open();
    try {
      const ask = (want: number, s: Store = store) =>
        s.proxyLedger.reserve({ projectId: 'proj_1', month, budget: 1000, want, at, expiresAt: at + 60_000 });
      const first = await ask(600);
      expect(first).toMatchObject({ granted: 600, used: 0, held: 0 });
      expect(await ask(600, other)).toMatchObject({ granted: 400, used: 0, held: 600 });
      expect(await ask(1)).toEqual({ id: null, granted: 0, used: 0, held: 1000 });
      // The first call used 250: its hold goes back in the same write, and 350 of it is free again.
      await store.insertRequestLog(row('proj_1', 250), { reservationId: first.id });
      expect(await store.getProjectUsage('proj_1', month)).toBe(250);
      expect(await ask(1000)).toMatchObject({ granted: 350, used: 250, held: 400 });
    } finally {
      await store.close();
      await other.close();
    }
  });

  it('grows a hold while room is left, and a hold whose process died lapses', async () => {
    const [store, other] = await open();
    try {
      const hold = await store.proxyLedger.reserve({ projectId: 'proj_2', month, budget: 100, want: 30, at, expiresAt: at + 1000 });
      expect(await store.proxyLedger.extend(hold.id!, { budget: 100, want: 50, at, expiresAt: at + 1000 })).toBe(50);
      expect(await store.proxyLedger.extend(hold.id!, { budget: 100, want: 50, at, expiresAt: at + 1000 })).toBe(20);
      expect(await store.proxyLedger.extend(hold.id!, { budget: 100, want: 50, at, expiresAt: at + 1000 })).toBe(0);
      // Past its lapse, the hold no longer counts (nor grows).
      const later = at + 1001;
      expect(await other.proxyLedger.extend(hold.id!, { budget: 100, want: 5, at: later, expiresAt: later + 1000 })).toBe(0);
      expect(
        await other.proxyLedger.reserve({ projectId: 'proj_2', month, budget: 100, want: 100, at: later, expiresAt: later + 1000 }),
      ).toMatchObject({ granted: 100, held: 0 });
    } finally {
      await store.close();
      await other.close();
    }
  });

  it('20 holds taken at once from two stores never grant more than the budget', async () => {
    const [store, other] = await open();
    try {
      const holds = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? store : other).proxyLedger.reserve({
            projectId: 'proj_3',
            month,
            budget: 1000,
            want: 150,
            at,
            expiresAt: at + 60_000,
          }),
        ),
      );
      const granted = holds.map((h) => h.granted);
      expect(granted.reduce((a, b) => a + b, 0)).toBe(1000);
      expect(granted.filter((g) => g === 150).length).toBe(6);
      expect(granted.filter((g) => g === 100).length).toBe(1);
    } finally {
      await store.close();
      await other.close();
    }
  });

  it("counts each project's stored body bytes against its cap; pruning gives them back", async () => {
    const [store, other] = await open();
    try {
      const body = 'x'.repeat(100); // 200 bytes a row
      await store.insertRequestLog(row('proj_4', 1, body), { maxProjectBodyBytes: 500 });
      await other.insertRequestLog(row('proj_4', 1, body), { maxProjectBodyBytes: 500 });
      await store.insertRequestLog(row('proj_4', 1, body), { maxProjectBodyBytes: 500 });
      await store.insertRequestLog(row('proj_5', 1, body), { maxProjectBodyBytes: 500 });
      const kept = (await store.listRequestLog('proj_4', { limit: 10 })).reverse().map((r) => r.requestBody);
      expect(kept).toEqual([body, body, kBodiesNotKept]);
      expect((await store.listRequestLog('proj_5', { limit: 10 }))[0].requestBody).toBe(body);
      // All of the project's tokens count, kept bodies or not.
      expect(await store.getProjectUsage('proj_4', month)).toBe(3);
      expect(await store.pruneRequestLog('proj_4', { olderThan: 0, keepNewest: 1, limit: 10 })).toBe(2);
      await other.insertRequestLog(row('proj_4', 1, body), { maxProjectBodyBytes: 500 });
      await store.insertRequestLog(row('proj_4', 1, body), { maxProjectBodyBytes: 500 });
      await store.insertRequestLog(row('proj_4', 1, body), { maxProjectBodyBytes: 500 });
      expect((await store.listRequestLog('proj_4', { limit: 10 })).reverse().map((r) => r.requestBody)).toEqual([
        kBodiesNotKept,
        body,
        body,
        kBodiesNotKept,
      ]);
    } finally {
      await store.close();
      await other.close();
    }
  });
});
