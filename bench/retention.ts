// `npm run bench -- retention [--rows N] [--projects N]`: how long the request-log retention takes on a full log,
// and how long its longest single DELETE holds SQLite's write lock (what a proxied call's log write may wait for).
// Each project gets N rows, a tenth of them older than the age limit, so both rules delete.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { kDefaultRetention, pruneRequestLog, resolveRetention } from '../src/service/retention.js';
import { SqliteStore } from '../src/store/sqlite.js';
import type { Store } from '../src/store/types.js';
import { intOption } from './_common.js';

const kDayMs = 24 * 60 * 60 * 1000;

export async function run(args: string[]): Promise<void> {
  const rowsPerProject = intOption(args, 'rows', 150_000);
  const projects = intOption(args, 'projects', 3);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-retention-'));
  const store = SqliteStore.open(dir);
  try {
    const now = Date.now();
    // Bodies of a typical small chat call: the table's size matters for the DELETE's cost.
    const requestBody = JSON.stringify({ model: 'provider-a:gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(400) }] });
    const responseBody = JSON.stringify({ choices: [{ message: { content: 'y'.repeat(600) } }] });
    const fillStart = performance.now();
    for (let p = 0; p < projects; p += 1) {
      for (let i = 0; i < rowsPerProject; i += 1) {
        const old = i < rowsPerProject / 10;
        await store.insertRequestLog({
          projectId: `proj_bench${p}`,
          keyId: 'key_bench',
          provider: 'provider-a',
          model: 'provider-a:gpt-4o-mini',
          stream: false,
          status: 200,
          ttfbMs: 120,
          totalMs: 480,
          tokensIn: 120,
          tokensOut: 150,
          error: null,
          requestBody,
          responseBody,
          createdAt: old ? now - (kDefaultRetention.days + 5) * kDayMs + i : now - rowsPerProject + i,
        });
      }
    }
    console.log(`filled ${projects} x ${rowsPerProject} rows in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`);

    // Time every batch: the retention loop is the product's, the clock is around each of its store calls.
    const batches: number[] = [];
    const timed = {
      listRequestLogProjects: () => store.listRequestLogProjects(),
      pruneRequestLog: async (...call: Parameters<Store['pruneRequestLog']>) => {
        const t0 = performance.now();
        const removed = await store.pruneRequestLog(...call);
        batches.push(performance.now() - t0);
        return removed;
      },
    } as unknown as Store;
    const t0 = performance.now();
    const removed = await pruneRequestLog(timed, resolveRetention(), now);
    const seconds = (performance.now() - t0) / 1000;
    const sorted = batches.slice().sort((a, b) => a - b);
    console.log(
      `pruned ${removed} rows (defaults: ${kDefaultRetention.days} days, ${kDefaultRetention.maxRowsPerProject} rows/project) in ${seconds.toFixed(2)} s ` +
        `(${Math.round(removed / seconds)} rows/s), ${batches.length} DELETEs: median ${sorted[sorted.length >> 1].toFixed(1)} ms, ` +
        `longest ${sorted[sorted.length - 1].toFixed(1)} ms`,
    );
    const again = performance.now();
    const none = await pruneRequestLog(store, resolveRetention(), now);
    console.log(`a run with nothing to prune: ${none} rows in ${(performance.now() - again).toFixed(1)} ms`);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
