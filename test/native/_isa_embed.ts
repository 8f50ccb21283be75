// Child-process entry for encoder.isa.test.ts: SVC_ISA is read once per process, so each
// kernel level runs in its own process. Reads packed ids on stdin, writes embeddings on stdout.
import { readFileSync } from 'node:fs';

import { Encoder } from '../../src/native/encoder.js';
import { cpuInfo } from '../../src/native/index.js';

const { ids, lengths, precision } = JSON.parse(readFileSync(0, 'utf8')) as {
  ids: number[];
  lengths: number[];
  precision: 'fp32' | 'int8';
};
const encoder = Encoder.fromPretrained('svc-small', { threads: 2, precision });
const out = encoder.embedIdsSync(Int32Array.from(ids), Int32Array.from(lengths));
process.stdout.write(JSON.stringify({ level: cpuInfo().level, embeddings: Array.from(out) }));
