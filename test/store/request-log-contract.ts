// The store contract's request-log part: the proxy's log rows listed and paged, each project's monthly token usage
// counted with every insert, and retention's pruning by age and by count. contract.ts runs it for every backend.
import { describe, expect, it } from 'vitest';

import { type RequestLogRow, usageMonth } from '../../src/store/types.js';
import { freshStore, type StoreBackend } from './contract-fixtures.js';

/** A proxy log row of proj_1 as the tests insert it; each test changes what it is about. */
function logRow(overrides: Partial<Omit<RequestLogRow, 'id'>> = {}): Omit<RequestLogRow, 'id'> {
  return {
    projectId: 'proj_1',
    keyId: 'key_1',
    provider: 'provider-a',
    model: 'provider-a:m',
    stream: false,
    status: 200,
    ttfbMs: 1,
    totalMs: 2,
    tokensIn: 1,
    tokensOut: 1,
    error: null,
    requestBody: '{}',
    responseBody: '{}',
    createdAt: 0,
    ...overrides,
  };
}

export function requestLogContract(backend: StoreBackend): void {
  describe('the proxy request log', () => {
    const fresh = freshStore(backend);

    it('lists the request log newest first with a cursor', async () => {
      const { store } = fresh;
      const row = logRow({ stream: true, ttfbMs: 1.5, totalMs: 3, tokensIn: 4, tokensOut: 5, createdAt: 1 });
      const ids = [];
      for (let i = 0; i < 3; i += 1) ids.push(await store.insertRequestLog({ ...row, createdAt: i }));
      await store.insertRequestLog({ ...row, projectId: 'proj_2' });
      expect((await store.listRequestLog('proj_1', { limit: 2 })).map((r) => r.id)).toEqual([ids[2], ids[1]]);
      const older = await store.listRequestLog('proj_1', { limit: 2, before: ids[1] });
      expect(older).toEqual([{ ...row, id: ids[0], createdAt: 0 }]);
    });

    it("lists the request log with each body's start and its whole size, a page bounded by bodies read, and reads one row whole", async () => {
      const { store } = fresh;
      // The cut counts characters and the sizes bytes alike on both stores, with two-byte characters too.
      const requestBody = `{"q":"${'é'.repeat(5000)}"}`;
      const row = logRow({ tokensIn: null, tokensOut: null, requestBody, responseBody: 'ok', createdAt: 7 });
      const first = await store.insertRequestLog(row);
      const second = await store.insertRequestLog({ ...row, createdAt: 8 });
      const other = await store.insertRequestLog({ ...row, projectId: 'proj_2' });
      const previews = await store.listRequestLogPreviews('proj_1', { limit: 5, previewChars: 10, maxBodyBytes: 1 << 20 });
      expect(previews).toEqual({
        rows: [second, first].map((id, i) => ({
          ...row,
          id,
          createdAt: 8 - i,
          requestBody: `{"q":"${'é'.repeat(4)}`,
          requestBodyBytes: 10_008,
          responseBodyBytes: 2,
        })),
        more: false,
      });
      // Ended by the limit, or before the row whose bodies would pass the bytes read (the first row always comes).
      const ids = async (options: { limit: number; before?: number; maxBodyBytes: number }) => {
        const page = await store.listRequestLogPreviews('proj_1', { ...options, previewChars: 10 });
        return { ids: page.rows.map((r) => r.id), more: page.more };
      };
      expect(await ids({ limit: 1, maxBodyBytes: 1 << 20 })).toEqual({ ids: [second], more: true });
      // The newest row's bodies are 10,010 bytes: the next row is read only while that is under the bound.
      expect(await ids({ limit: 5, maxBodyBytes: 10_010 })).toEqual({ ids: [second], more: true });
      expect(await ids({ limit: 5, maxBodyBytes: 10_011 })).toEqual({ ids: [second, first], more: false });
      expect(await ids({ limit: 5, maxBodyBytes: 1 })).toEqual({ ids: [second], more: true });
      expect(await ids({ limit: 5, before: second, maxBodyBytes: 1 })).toEqual({ ids: [first], more: false });
      expect(await store.getRequestLog('proj_1', first)).toEqual({ ...row, id: first });
      // Another project's row is not this project's to read.
      expect(await store.getRequestLog('proj_1', other)).toBeNull();
      expect(await store.getRequestLog('proj_2', other)).toEqual({ ...row, id: other, projectId: 'proj_2' });
    });

    it("reads a project's successful rows in a time range and of a model, oldest first, a batch after a cursor", async () => {
      const { store } = fresh;
      const row = logRow({ requestBody: '{"messages":[]}', responseBody: 'data: {}\n\n' });
      const ids: Record<string, number> = {};
      // Created at 10..50; 'fail' is a 502 and 'gone' a call whose client went away (status 0): never read.
      const rows: Array<[string, Partial<Omit<RequestLogRow, 'id'>>]> = [
        ['a10', { createdAt: 10 }],
        ['b20', { createdAt: 20, model: 'provider-b:m' }],
        ['fail', { createdAt: 25, status: 502 }],
        ['gone', { createdAt: 26, status: 0 }],
        ['a30', { createdAt: 30, status: 201 }],
        ['other', { createdAt: 30, projectId: 'proj_2' }],
        ['a40', { createdAt: 40 }],
        ['a50', { createdAt: 50 }],
      ];
      for (const [name, overrides] of rows) ids[name] = await store.insertRequestLog({ ...row, ...overrides });
      const read = async (range: Parameters<typeof store.readRequestLogRange>[1]) =>
        (await store.readRequestLogRange('proj_1', range)).map((r) => Object.keys(ids).find((name) => ids[name] === r.id));
      expect(await read({ limit: 100 })).toEqual(['a10', 'b20', 'a30', 'a40', 'a50']);
      // `since` is inclusive, `until` exclusive.
      expect(await read({ since: 20, until: 50, limit: 100 })).toEqual(['b20', 'a30', 'a40']);
      expect(await read({ model: 'provider-a:m', limit: 100 })).toEqual(['a10', 'a30', 'a40', 'a50']);
      expect(await read({ model: 'provider-a:other', limit: 100 })).toEqual([]);
      // Batches: the last id of one batch is the cursor of the next.
      expect(await read({ model: 'provider-a:m', limit: 2 })).toEqual(['a10', 'a30']);
      expect(await read({ model: 'provider-a:m', afterId: ids.a30, limit: 2 })).toEqual(['a40', 'a50']);
      expect(await read({ model: 'provider-a:m', afterId: ids.a50, limit: 2 })).toEqual([]);
      // Whole rows, bodies included.
      expect(await store.readRequestLogRange('proj_1', { since: 40, until: 41, limit: 1 })).toEqual([
        { ...row, createdAt: 40, id: ids.a40 },
      ]);
      expect((await store.readRequestLogRange('proj_2', { limit: 10 })).map((r) => r.id)).toEqual([ids.other]);
    });

    it("counts each project's tokens per UTC month with every log insert, and keeps the count when log rows go", async () => {
      const { store } = fresh;
      const row = logRow({ tokensIn: 4, tokensOut: 5, createdAt: Date.UTC(2026, 10, 30, 23, 59, 59, 999) });
      await store.insertRequestLog(row);
      await store.insertRequestLog({ ...row, tokensIn: 10, tokensOut: null });
      await store.insertRequestLog({ ...row, tokensIn: null, tokensOut: null, status: 502 });
      await store.insertRequestLog({ ...row, createdAt: Date.UTC(2026, 11, 1, 0, 0, 0, 0), tokensIn: 1, tokensOut: 2 });
      await store.insertRequestLog({ ...row, projectId: 'proj_2', tokensIn: 100, tokensOut: 1 });
      expect(await store.getProjectUsage('proj_1', '2026-11')).toBe(19);
      expect(await store.getProjectUsage('proj_1', '2026-12')).toBe(3);
      expect(await store.getProjectUsage('proj_2', '2026-11')).toBe(101);
      expect(await store.getProjectUsage('proj_1', '2026-10')).toBe(0);
      expect(usageMonth(Date.UTC(2026, 10, 30, 23, 59, 59, 999))).toBe('2026-11');

      // Pruning the log (retention) leaves the month's count.
      expect(await store.pruneRequestLog('proj_1', { olderThan: Number.MAX_SAFE_INTEGER, keepNewest: 100, limit: 100 })).toBe(4);
      expect(await store.getProjectUsage('proj_1', '2026-11')).toBe(19);
    });

    it("prunes a project's request log by age and by count, a batch at a time", async () => {
      const { store } = fresh;
      const row = logRow();
      // proj_1: ten rows created at 100, 200, ..., 1000; proj_2: two old rows that must survive proj_1's pruning.
      const ids = [];
      for (let i = 1; i <= 10; i += 1) ids.push(await store.insertRequestLog({ ...row, createdAt: i * 100 }));
      await store.insertRequestLog({ ...row, projectId: 'proj_2', createdAt: 1 });
      await store.insertRequestLog({ ...row, projectId: 'proj_2', createdAt: 2 });
      expect(await store.listRequestLogProjects()).toEqual(['proj_1', 'proj_2']);

      const left = async (projectId: string) => (await store.listRequestLog(projectId, { limit: 100 })).map((r) => r.id).reverse();
      // Older than 350: three rows, at most two per call.
      expect(await store.pruneRequestLog('proj_1', { olderThan: 350, keepNewest: 100, limit: 2 })).toBe(2);
      expect(await store.pruneRequestLog('proj_1', { olderThan: 350, keepNewest: 100, limit: 2 })).toBe(1);
      expect(await store.pruneRequestLog('proj_1', { olderThan: 350, keepNewest: 100, limit: 2 })).toBe(0);
      expect(await left('proj_1')).toEqual(ids.slice(3));
      // Keep the newest four; a row both too old and beyond the count is deleted (and counted) once.
      expect(await store.pruneRequestLog('proj_1', { olderThan: 450, keepNewest: 4, limit: 100 })).toBe(3);
      expect(await left('proj_1')).toEqual(ids.slice(6));
      expect((await store.listRequestLog('proj_2', { limit: 100 })).length).toBe(2);
    });
  });
}
