// Adapter models through the pool: one base encoder per worker serves them all, a micro-batch mixes models (each
// text through its own adapter), the worker's adapter cache evicts within its bytes and reports to the telemetry
// channel /metrics reads, and deleting or saving models again while predictions run breaks none of them.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Classifier } from '../../src/index.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { batchStats } from '../../src/predict/batcher.js';
import { kChannels, type AdapterCacheEvent } from '../../src/telemetry.js';
import { writeAdapterModel } from '../_support/adapter.js';

const kTexts = ['A wonderful, moving film.', 'The battery died after a week.', 'Two hours I will never get back', 'Fine.'];
const kModels = 4;
let root: string;
const dirs: string[] = [];
// Each model's probabilities for kTexts, predicted alone (one call at a time).
const alone: number[][] = [];

function probabilities(result: { probability: number }[]): number[] {
  return result.map((p) => p.probability);
}

function maxDiff(a: number[], b: number[]): number {
  return Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'svc-adapter-batches-'));
  for (let m = 0; m < kModels; m++) {
    const dir = join(root, `m${m}`);
    await writeAdapterModel(dir, { seed: 40 + m, rank: 8 });
    dirs.push(dir);
  }
  configurePool({ workers: 1, engineThreads: 2 });
  for (const dir of dirs) {
    const classifier = await Classifier.load(dir);
    alone.push(probabilities(await classifier.predict(kTexts)));
    classifier.dispose();
  }
});

afterAll(async () => {
  await closePool();
  rmSync(root, { recursive: true, force: true });
});

describe('adapter models in the pool', () => {
  it('mixes models in one batch and predicts as each model alone, within 1e-5 in fp32', async () => {
    const classifiers = await Promise.all(dirs.map((dir) => Classifier.load(dir)));
    // The models differ, so agreeing with each one alone is not agreeing with any other.
    expect(maxDiff(alone[0]!, alone[1]!)).toBeGreaterThan(1e-3);
    const before = batchStats();
    const results = await Promise.all(classifiers.map((c) => c.predict(kTexts)));
    const after = batchStats();
    expect(after.requests - before.requests).toBe(kModels);
    expect(after.batches - before.batches).toBeLessThan(kModels); // at least two models shared a batch
    results.forEach((r, m) => expect(maxDiff(probabilities(r), alone[m]!)).toBeLessThan(1e-5));
    for (const c of classifiers) c.dispose();
  });

  it('keeps predicting while models are deleted and saved again, and reports its cache', async () => {
    const events: AdapterCacheEvent[] = [];
    const listener = (message: unknown): void => void events.push(message as AdapterCacheEvent);
    subscribe(kChannels.adapterCache, listener);
    try {
      const classifiers = await Promise.all(dirs.map((dir) => Classifier.load(dir)));
      const failures: unknown[] = [];
      let calls = 0;
      let running = true;
      const loop = async (c: Classifier): Promise<void> => {
        while (running) {
          await c.predict(kTexts.slice(0, 1 + (calls % kTexts.length))).catch((error: unknown) => failures.push(error));
          calls++;
        }
      };
      const loops = classifiers.map(loop);
      // Each step waits for predictions, not for time: a loaded machine runs fewer of them per second.
      const afterCalls = async (more: number): Promise<void> => {
        const target = calls + more;
        while (calls < target) await new Promise((r) => setTimeout(r, 10));
      };
      await afterCalls(8);
      rmSync(dirs[0]!, { recursive: true, force: true }); // deleted while its classifier predicts
      // Saved again in place, twice, with another adapter of the same rank: the next batches read it anew.
      await writeAdapterModel(dirs[1]!, { seed: 90, rank: 8 });
      await afterCalls(8);
      await writeAdapterModel(dirs[1]!, { seed: 91, rank: 8 });
      await afterCalls(8);
      running = false;
      await Promise.all(loops);
      expect(failures).toEqual([]);
      expect(calls).toBeGreaterThanOrEqual(24);
      // The model saved again is the new one (its adapter read anew, not the cached one); the deleted one predicts
      // from its adapter in memory as before.
      const replaced = await Classifier.load(dirs[1]!);
      expect(maxDiff(probabilities(await replaced.predict(kTexts)), alone[1]!)).toBeGreaterThan(1e-3);
      expect(maxDiff(probabilities(await classifiers[0]!.predict(kTexts)), alone[0]!)).toBeLessThan(1e-5);
      replaced.dispose();
      for (const c of classifiers) c.dispose();
      const last = events.at(-1)!;
      expect(last.hits).toBeGreaterThan(0);
      expect(last.misses).toBeGreaterThanOrEqual(kModels + 2); // every model once, the replaced one twice more
      expect(last.bytes).toBeGreaterThan(0);
    } finally {
      unsubscribe(kChannels.adapterCache, listener);
    }
  });

  it("keeps a disposed classifier's adapter while its file is unchanged, so loading the model again reads nothing", async () => {
    const events: AdapterCacheEvent[] = [];
    const listener = (message: unknown): void => void events.push(message as AdapterCacheEvent);
    subscribe(kChannels.adapterCache, listener);
    try {
      const first = await Classifier.load(dirs[3]!);
      await first.predict(kTexts);
      first.dispose(); // as a service unloads a classifier it keeps no more
      const before = events.at(-1)!;
      const again = await Classifier.load(dirs[3]!);
      expect(maxDiff(probabilities(await again.predict(kTexts)), alone[3]!)).toBeLessThan(1e-5);
      again.dispose();
      const after = events.at(-1)!;
      expect(after.misses).toBe(before.misses);
      // Two hits: the load's check (a worker reads and checks an adapter model's adapter at load) and the predict.
      expect(after.hits).toBe(before.hits + 2);
    } finally {
      unsubscribe(kChannels.adapterCache, listener);
    }
  });

  it('evicts least recently used adapters within its bytes, pinning those a batch uses', async () => {
    await closePool();
    // Room for one adapter (0.66 MB at rank 8 in fp16): each batch of two models pins both, and evicts down to the budget after.
    configurePool({ workers: 1, engineThreads: 2, adapterCacheBytes: 700_000 });
    const events: AdapterCacheEvent[] = [];
    const listener = (message: unknown): void => void events.push(message as AdapterCacheEvent);
    subscribe(kChannels.adapterCache, listener);
    try {
      const live = dirs.slice(2);
      const classifiers = await Promise.all(live.map((dir) => Classifier.load(dir)));
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all(classifiers.map((c) => c.predict(kTexts)));
        results.forEach((r, i) => expect(maxDiff(probabilities(r), alone[i + 2]!)).toBeLessThan(1e-5));
      }
      for (const c of classifiers) c.dispose();
      const last = events.at(-1)!;
      expect(last.evictions).toBeGreaterThan(0);
      expect(last.bytes).toBeLessThanOrEqual(700_000);
    } finally {
      unsubscribe(kChannels.adapterCache, listener);
    }
  });
});
