// Child-process entry for adapter-segments.test.ts: SVC_ISA is read once per process. Embeds texts (stdin) through
// an adapter on the segmented path and with the adapter merged, at this process's kernel level, and writes the
// largest difference and the level on stdout.
import { readFileSync } from 'node:fs';

import { Adapter } from '../../src/native/adapter.js';
import { Encoder } from '../../src/native/encoder.js';
import { cpuInfo } from '../../src/native/index.js';

const { texts, adapter: dir } = JSON.parse(readFileSync(0, 'utf8')) as { texts: string[]; adapter: string };
const adapter = Adapter.load(dir, { base: 'svc-small' });
// fp32: the segmented path and the merged copy round alike only there (bf16 would round W + BA, not W, to bf16).
const base = Encoder.fromPretrained('svc-small', { threads: 2, precision: 'fp32' });
const merged = Encoder.fromPretrained('svc-small', { threads: 2, precision: 'fp32', adapter: dir });
const half = Math.floor(texts.length / 2);
const segmented = base.embedSync(texts, { counts: [half, texts.length - half], adapters: [null, adapter] });
const plain = base.embedSync(texts.slice(0, half));
const reference = merged.embedSync(texts.slice(half));
let worst = 0;
for (let i = 0; i < plain.length; i++) worst = Math.max(worst, Math.abs(segmented[i]! - plain[i]!));
for (let i = 0; i < reference.length; i++) worst = Math.max(worst, Math.abs(segmented[plain.length + i]! - reference[i]!));
process.stdout.write(JSON.stringify({ level: cpuInfo().level, worst }));
