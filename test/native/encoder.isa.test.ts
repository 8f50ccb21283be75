// Every kernel level (AVX-512 with VNNI, AVX2, scalar) gives the same embeddings: each
// level runs in its own process (SVC_ISA caps the level once per process) and is checked
// against the scalar path.
import { execFileSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';

import { allUciTexts, emailBodies } from '../../fixtures/corpora.js';
import { cpuInfo } from '../../src/index.js';
import { packageRoot } from '../../src/native/index.js';
import { cosine, maxAbsDiff, referenceIds, row } from './_reference_ids.js';

interface Run {
  level: string;
  embeddings: Float32Array;
}

let input: { ids: number[]; lengths: number[] };

function embedAt(isa: string, precision: 'fp32' | 'int8'): Run {
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'test/native/_isa_embed.ts'], {
    cwd: packageRoot(),
    env: { ...process.env, SVC_ISA: isa },
    input: JSON.stringify({ ...input, precision }),
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const parsed = JSON.parse(out) as { level: string; embeddings: number[] };
  return { level: parsed.level, embeddings: Float32Array.from(parsed.embeddings) };
}

// The levels this CPU can run, best first; 'avx512' here means AVX-512 with VNNI when present.
const kLevels = [
  ...(cpuInfo().avx512 ? [{ isa: 'avx512-full', cap: '', level: cpuInfo().level }] : []),
  ...(cpuInfo().avx512 ? [{ isa: 'avx512', cap: 'avx512', level: 'avx512' }] : []),
  ...(cpuInfo().avxvnni ? [{ isa: 'avx2-vnni', cap: 'avx2-vnni', level: 'avx2-vnni' }] : []),
  ...(cpuInfo().avx2 ? [{ isa: 'avx2', cap: 'avx2', level: 'avx2' }] : []),
];

beforeAll(async () => {
  // Short and long texts: tails of every tile size and attention block get exercised.
  const texts = [...allUciTexts().slice(0, 12), ...emailBodies(2, 1000)];
  const { ids, lengths } = await referenceIds(texts);
  input = { ids: Array.from(ids), lengths: Array.from(lengths) };
});

describe('kernel levels agree with the scalar path', () => {
  for (const precision of ['fp32', 'int8'] as const) {
    it(`${precision}: every level matches scalar`, () => {
      const scalar = embedAt('scalar', precision);
      expect(scalar.level).toBe('scalar');
      const texts = input.lengths.length;
      for (const { cap, level } of kLevels) {
        const run = embedAt(cap || 'none', precision);
        expect(run.level).toBe(level);
        const cosines: number[] = [];
        for (let i = 0; i < texts; i++) {
          const a = row(run.embeddings, i, 384);
          const b = row(scalar.embeddings, i, 384);
          if (precision === 'fp32') expect(maxAbsDiff(a, b), `${level} text ${i}`).toBeLessThan(2e-6);
          cosines.push(cosine(a, b));
        }
        if (precision === 'int8') {
          // Float rounding differs in the last bit between levels (GELU, softmax, LayerNorm),
          // and a requantized activation sitting on a rounding edge then moves by one step:
          // int8 levels agree about as closely as int8 agrees with fp32, not bit for bit.
          // Plain AVX2 also packs the weights to 7 bits (vpmaddubsw would saturate at 8), a coarser
          // step than scalar's 8, and every level with an int8 attention kernel (AVX2, and AVX-512
          // with VNNI) quantizes Q, K, V and the softmax where scalar and AVX-512 without VNNI keep
          // attention in fp32: those are held to the int8-against-fp32 bound instead.
          const [mean, lowest] = level === 'avx512' ? [0.995, 0.98] : [0.99, 0.97];
          expect(cosines.reduce((s, c) => s + c, 0) / texts, `${level} mean cosine`).toBeGreaterThan(mean);
          expect(Math.min(...cosines), `${level} lowest cosine`).toBeGreaterThan(lowest);
        }
      }
    }, 180_000); // one child process per level; the scalar one is slow by design
  }
});
