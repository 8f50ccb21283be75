// Resident memory of the engine: loading svc-small costs about its fp32 weight size, and
// repeated batches do not grow it. Alone in its file so nothing else shares the process.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';

import { cpuInfo, Encoder } from '../../src/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

// all-MiniLM-L6-v2 has 22,713,216 parameters: 90.9 MB as fp32.
const kFp32WeightBytes = 22_713_216 * 4;
const kMiB = 1 << 20;

// Collects garbage and lets V8 free detached ArrayBuffer backing stores before RSS is read.
async function settledRss(): Promise<number> {
  gc();
  await new Promise((resolve) => setTimeout(resolve, 100));
  gc();
  return process.memoryUsage.rss();
}

// Resident memory outside V8's heap: the native engine, ArrayBuffer stores, the allocator. The
// test runner shares this process and grows its own JS heap now and then; that is not ours.
async function settledNativeRss(): Promise<number> {
  await settledRss();
  const usage = process.memoryUsage();
  return usage.rss - usage.heapTotal;
}

describe('Encoder memory', () => {
  it('grows resident memory by at most 1.3x the fp32 weight size when loading svc-small', async () => {
    cpuInfo(); // the addon itself is loaded before the baseline
    const before = await settledRss();
    const encoder = Encoder.fromPretrained('svc-small', { threads: 1 });
    const after = await settledRss();
    encoder.dispose();
    expect(after - before).toBeGreaterThan(0.5 * kFp32WeightBytes); // the weights really are resident
    expect(after - before).toBeLessThanOrEqual(1.3 * kFp32WeightBytes);
  });

  it('does not grow over 10,000 repeated small batches', async () => {
    const encoder = Encoder.fromPretrained('svc-small', { threads: 1, precision: 'int8' });
    const ids = Int32Array.of(101, 7592, 102, 101, 2088, 999, 102); // "hello", "world!"
    const lengths = Int32Array.of(3, 4);
    const first = encoder.embedIdsSync(ids, lengths);
    const samples: number[] = [];
    // 2,000 warm-up batches (scratch buffers and the allocator's per-thread arenas, which V8
    // frees ArrayBuffers into from its own threads, reach their size), then 10,000 measured in
    // five windows of 2,000.
    for (let i = 1; i <= 12_000; i++) {
      const out = encoder.embedIdsSync(ids, lengths);
      if (i % 2000 === 0) {
        expect(out).toEqual(first);
        samples.push(await settledNativeRss());
      }
    }
    encoder.dispose();
    // A leak grows resident memory in every window: one of even the output (3 KB per call) adds
    // some 6 MiB to each. A one-time step (the allocator opening another arena when a busy
    // machine makes threads contend) lands in one window only, so the median window is the test.
    const windows = samples.slice(1).map((rss, k) => rss - samples[k]!).sort((a, b) => a - b);
    expect(windows).toHaveLength(5);
    expect(windows[2]).toBeLessThan(0.8 * kMiB);
  }, 180_000);
});
