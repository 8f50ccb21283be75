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
  await new Promise((resolve) => setTimeout(resolve, 50));
  gc();
  return process.memoryUsage.rss();
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
    let baseline = 0;
    for (let i = 1; i <= 10_000; i++) {
      const out = encoder.embedIdsSync(ids, lengths);
      if (i % 1000 === 0) {
        expect(out).toEqual(first);
        const rss = await settledRss();
        if (i === 1000) baseline = rss; // after warm-up: scratch buffers and allocator arenas at size
      }
    }
    const growth = (await settledRss()) - baseline;
    encoder.dispose();
    // A leak of even the output (3 KB per call) would add some 27 MiB over 9,000 calls.
    expect(growth).toBeLessThan(4 * kMiB);
  }, 180_000);
});
