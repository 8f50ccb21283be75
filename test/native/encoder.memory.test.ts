// Resident memory of the engine: loading svc-small costs about its fp32 weight size, and
// repeated batches do not grow it. Alone in its file so nothing else shares the process.
import { execFileSync } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';

import { cpuInfo, Encoder } from '../../src/index.js';
import { packageRoot } from '../../src/native/index.js';

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

  it('does not grow over 10,000 repeated small batches', () => {
    // In a process of its own: the test runner's own allocations would blur a count this fine.
    const run = JSON.parse(
      execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', 'test/native/_memory_loop.ts'], {
        cwd: packageRoot(),
        encoding: 'utf8',
      }),
    ) as { samples: { malloc: number | null; rss: number }[]; sameOutput: boolean; outputBytes: number };
    expect(run.sameOutput).toBe(true);
    expect(run.samples).toHaveLength(11);
    // A leak grows memory with every call: one of even the output (3 KB per call) adds some
    // 18 MiB between the lows of the first and the last four samples, 6,000 calls apart. The
    // allocator's count moves by a few hundred KiB as V8 and Node allocate and free for themselves.
    // Where the C library cannot count, resident memory is the measure: V8 and the allocator
    // move it by megabytes as they shrink the heap and return pages, so the limit is wider.
    const glibc = run.samples.every((sample) => sample.malloc !== null);
    const values = run.samples.map((sample) => (glibc ? sample.malloc! : sample.rss));
    const limit = glibc ? kMiB : 4 * kMiB;
    const low = (part: number[]) => Math.min(...part);
    const growth = low(values.slice(-4)) - low(values.slice(1, 5));
    expect(run.outputBytes * 6000).toBeGreaterThan(4 * limit); // the check would see such a leak
    expect(growth).toBeLessThan(limit);
  }, 180_000);
});
