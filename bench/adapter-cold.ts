// `npm run bench -- adapter-cold [--models 120]`: where an adapter model's cold predict spends its time, piece by
// piece, through the library (1 worker on every core, fp32, a worker cache of 16 adapters). The models are synthetic
// rank-8 adapters on all six linear layers (test/_support/adapter.ts), which cost what a trained one costs to read.
// For each model, in turn: a warm one-text predict on model 0, a pool round trip (ping), `readModelDir` (main
// thread), the `adapter` pool task (the worker's native read and check), `Classifier.load` again (its adapter now a
// cache hit) and the first one-text predict; then a second pass over the loaded classifiers, each adapter evicted by
// then, with a warm call on model 0 before each. Prints min, p50, p90 and p99 of each piece: on a loaded machine the
// minimum is what a quiet one approaches, the percentiles what waiting for a core adds.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { Classifier } from '../src/index.js';
import { readModelDir } from '../src/model/directory.js';
import { closePool, configurePool, runTask } from '../src/pool/pool.js';
import { writeAdapterModel } from '../test/_support/adapter.js';
import { intOption } from './_common.js';

const kAdapterBytesRank8 = 663_552;

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function timed<T>(into: number[], work: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const result = await work();
  into.push(performance.now() - t0);
  return result;
}

export async function run(args: string[]): Promise<void> {
  const count = intOption(args, 'models', 120);
  const json = args.includes('--json');
  const root = mkdtempSync(join(tmpdir(), 'svc-bench-adapter-cold-'));
  configurePool({ workers: 1, engineThreads: availableParallelism(), adapterCacheBytes: 16 * kAdapterBytesRank8 });
  const pieces: Record<string, number[]> = {
    'warm predict, model 0 (1 text)': [],
    'pool round trip (ping)': [],
    'readModelDir (main thread)': [],
    "adapter task (the worker's native read and check)": [],
    'Classifier.load again (adapter a cache hit)': [],
    'first predict after the load (1 text)': [],
    'warm predict, model 0 (second pass)': [],
    'predict, classifier loaded, adapter evicted': [],
  };
  const [warm, ping, readDir, check, load, first, warm2, evicted] = Object.values(pieces) as number[][];
  try {
    const dirs: string[] = [];
    for (let m = 0; m <= count; m++) {
      const dir = join(root, `m${m}`);
      await writeAdapterModel(dir, { seed: m, rank: 8 });
      dirs.push(dir);
    }
    const zero = await Classifier.load(dirs[0]!);
    for (let i = 0; i < 20; i++) await zero.predict(['warm up']);
    const loaded: Classifier[] = [];
    for (const dir of dirs.slice(1)) {
      await timed(warm!, () => zero.predict(['A fine film.']));
      await timed(ping!, () => runTask({ kind: 'ping' }));
      const { encoderFile } = await timed(readDir!, () => readModelDir(dir));
      await timed(check!, () => runTask({ kind: 'adapter', baseModel: 'svc-small', file: encoderFile! }));
      const classifier = await timed(load!, () => Classifier.load(dir));
      loaded.push(classifier);
      await timed(first!, () => classifier.predict(['A fine film.']));
    }
    for (const classifier of loaded) {
      await timed(warm2!, () => zero.predict(['A fine film.']));
      await timed(evicted!, () => classifier.predict(['A fine film.']));
    }
    for (const classifier of [zero, ...loaded]) classifier.dispose();
    const rows = Object.entries(pieces).map(([piece, ms]) => ({
      piece,
      min: Math.min(...ms),
      p50: quantile(ms, 0.5),
      p90: quantile(ms, 0.9),
      p99: quantile(ms, 0.99),
    }));
    if (json) {
      console.log(JSON.stringify({ models: count, rows }));
      return;
    }
    console.log(`${count} synthetic rank-8 adapter models, 1 worker x ${availableParallelism()} threads, cache of 16 adapters`);
    console.log('piece | min ms | p50 ms | p90 ms | p99 ms');
    for (const r of rows) console.log(`${r.piece} | ${r.min.toFixed(2)} | ${r.p50.toFixed(2)} | ${r.p90.toFixed(2)} | ${r.p99.toFixed(2)}`);
  } finally {
    await closePool();
    rmSync(root, { recursive: true, force: true });
  }
}
