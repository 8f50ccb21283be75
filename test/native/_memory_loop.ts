// Runs in a plain Node process of its own (spawned by encoder.memory.test.ts, with --expose-gc), so
// that nothing but the engine allocates while it counts: repeats one small batch and, after 2,000
// warm-up calls, prints as JSON every 1,000 calls the bytes the C allocator holds in use and the
// resident set size, each read once garbage is collected.
import { Encoder } from '../../src/index.js';
import { loadAddon } from '../../src/native/index.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const kWarmUpCalls = 2000;
const kMeasuredCalls = 10_000;
const kCallsPerSample = 1000;

// Collects garbage twice around a pause, so V8 frees unreachable ArrayBuffers' backing stores
// (which it may do from a background thread) before anything is read.
async function settled(): Promise<{ malloc: number | null; rss: number }> {
  gc!();
  await new Promise((resolve) => setTimeout(resolve, 100));
  gc!();
  return { malloc: loadAddon().mallocBytesInUse(), rss: process.memoryUsage.rss() };
}

const encoder = Encoder.fromPretrained('svc-small', { threads: 1, precision: 'int8' });
const ids = Int32Array.of(101, 7592, 102, 101, 2088, 999, 102); // "hello", "world!"
const lengths = Int32Array.of(3, 4);
const first = encoder.embedIdsSync(ids, lengths);
let sameOutput = true;
for (let i = 1; i < kWarmUpCalls; i++) encoder.embedIdsSync(ids, lengths);
const samples = [await settled()];
for (let i = 1; i <= kMeasuredCalls; i++) {
  const out = encoder.embedIdsSync(ids, lengths);
  if (i % kCallsPerSample === 0) {
    sameOutput &&= out.every((value, k) => value === first[k]);
    samples.push(await settled());
  }
}
encoder.dispose();
process.stdout.write(JSON.stringify({ samples, sameOutput, outputBytes: first.byteLength }));
