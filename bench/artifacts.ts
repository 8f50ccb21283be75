// `npm run bench -- artifacts [--mb N]`: what storing and fetching one model file costs, a folder and PostgreSQL
// side by side in one process: put an N MiB file (default 96, about a fine-tuned model's ONNX graph), read it back,
// and put the same bytes under a second model (PostgreSQL then only hashes them: the blob is stored once). The
// process's peak RSS shows that no backend holds the file whole. PostgreSQL is a throwaway local cluster, over
// loopback: a remote database adds its network.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { startPostgres } from '../fixtures/postgres-cluster.js';
import { DirectoryArtifacts } from '../src/artifacts/directory.js';
import { PostgresArtifacts } from '../src/artifacts/postgres.js';
import type { ArtifactStore } from '../src/artifacts/types.js';
import { intOption } from './_common.js';

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

async function drain(store: ArtifactStore, id: string): Promise<void> {
  const { stream } = await store.open(id, 'onnx/model.onnx');
  for await (const piece of stream) void piece;
}

export async function run(args: string[]): Promise<void> {
  const mb = intOption(args, 'mb', 96);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-artifacts-'));
  const model = join(dir, 'model');
  mkdirSync(join(model, 'onnx'), { recursive: true });
  // Written a MiB at a time: the bench itself never holds the file either.
  for (let i = 0; i < mb; i += 1) writeFileSync(join(model, 'onnx', 'model.onnx'), randomBytes(1024 * 1024), { flag: 'a' });
  const cluster = await startPostgres();
  try {
    const backends: [string, ArtifactStore][] = [
      ['folder', new DirectoryArtifacts(join(dir, 'hub'))],
      ['postgres', await PostgresArtifacts.open(await cluster.createDatabase())],
    ];
    const rssBefore = process.memoryUsage().rss;
    for (const [name, store] of backends) {
      const put = await timed(() => store.put('bench/svc-small-000000000001', model));
      const read = await timed(() => drain(store, 'bench/svc-small-000000000001'));
      const again = await timed(() => store.put('bench/svc-small-000000000002', model));
      const rate = (ms: number) => `${((mb * 1000) / ms).toFixed(0)} MiB/s`;
      console.log(`${name.padEnd(9)} put ${mb} MiB ${put.toFixed(0)} ms (${rate(put)}), read ${read.toFixed(0)} ms (${rate(read)}), ` +
        `same bytes under a second model ${again.toFixed(0)} ms`);
      await store.close();
    }
    console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB (before the puts: ${(rssBefore / 2 ** 20).toFixed(0)} MiB)`);
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
