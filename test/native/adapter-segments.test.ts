// The segmented path: one shared base encoder, texts in runs each through its own LoRA adapter (or none). It must
// embed as the adapter merged into a private copy of the base (fp32 within 1e-5), and a batch mixing models must
// embed each text as a batch of that model alone.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { allUciTexts } from '../../fixtures/corpora.js';
import { Adapter, cpuInfo, Encoder } from '../../src/index.js';
import { kLoraModules, writeAdapter } from '../../src/model/adapter.js';
import { packageRoot } from '../../src/native/index.js';
import { resolveBaseModel } from '../../src/model/base-models.js';
import { parseBertConfig } from '../../src/model/onnx/bert-weights.js';
import { kSmallShape, randomAdapter } from '../_support/adapter.js';

const base = resolveBaseModel('svc-small');
const config = parseBertConfig(JSON.parse(readFileSync(base.configFile, 'utf8')) as Record<string, unknown>);
const kTexts = allUciTexts()
  .filter((_, i) => i % 200 === 0)
  .slice(0, 12);
const kDim = 384;
let root: string;
const dirs: string[] = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'svc-adapter-segments-'));
  // Three adapters: all six modules at rank 8, a subset at rank 4 (Q and V only: a part of the fused QKV), rank 2.
  const specs = [
    { rank: 8, modules: kLoraModules, seed: 5 },
    { rank: 4, modules: ['attention.self.query', 'attention.self.value', 'output.dense'] as const, seed: 6 },
    { rank: 2, modules: ['attention.self.key', 'attention.output.dense', 'intermediate.dense'] as const, seed: 7 },
  ];
  for (const [i, spec] of specs.entries()) {
    const dir = join(root, `a${i}`);
    await writeAdapter(
      dir,
      randomAdapter(kSmallShape, spec),
      { rank: spec.rank, alpha: 2 * spec.rank, modules: spec.modules },
      base,
      config,
    );
    dirs.push(dir);
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

function lowestCosine(a: Float32Array, b: Float32Array): number {
  let lowest = 1;
  for (let r = 0; r < a.length / kDim; r++) {
    let dot = 0;
    for (let j = r * kDim; j < (r + 1) * kDim; j++) dot += a[j]! * b[j]!;
    lowest = Math.min(lowest, dot); // both L2-normalized: a cosine
  }
  return lowest;
}

function withEncoder<T>(precision: 'fp32' | 'int8' | 'bf16', run: (encoder: Encoder) => T, adapter?: string): T {
  const encoder = Encoder.fromPretrained('svc-small', { threads: 2, precision, ...(adapter ? { adapter } : {}) });
  try {
    return run(encoder);
  } finally {
    encoder.dispose();
  }
}

describe('Encoder segments (one base, many adapters)', () => {
  it('embeds as the adapter merged into the base, within 1e-5 in fp32', () => {
    const adapter = Adapter.load(dirs[0]!, { base: 'svc-small' });
    try {
      const segmented = withEncoder('fp32', (e) => e.embedSync(kTexts, { counts: [kTexts.length], adapters: [adapter] }));
      const merged = withEncoder('fp32', (e) => e.embedSync(kTexts), dirs[0]);
      const plain = withEncoder('fp32', (e) => e.embedSync(kTexts));
      expect(maxAbsDiff(segmented, merged)).toBeLessThan(1e-5);
      // The adapter moves the embeddings far more than that, so the comparison above means something.
      expect(maxAbsDiff(segmented, plain)).toBeGreaterThan(1e-2);
    } finally {
      adapter.dispose();
    }
  });

  it('embeds a batch mixing models as each model alone, within 1e-5 in fp32', () => {
    const adapters = dirs.map((d) => Adapter.load(d, { base: 'svc-small' }));
    try {
      // Runs: base, a0, a1, a0, a2, base — the same model in two runs, and runs of one text.
      const owners = [null, adapters[0]!, adapters[1]!, adapters[0]!, adapters[2]!, null];
      const counts = [2, 3, 1, 2, 3, 1];
      expect(counts.reduce((a, b) => a + b)).toBe(kTexts.length);
      withEncoder('fp32', (encoder) => {
        const mixed = encoder.embedSync(kTexts, { counts, adapters: owners });
        let first = 0;
        for (const [s, n] of counts.entries()) {
          const texts = kTexts.slice(first, first + n);
          const alone = encoder.embedSync(texts, { counts: [n], adapters: [owners[s]!] });
          expect(maxAbsDiff(mixed.subarray(first * kDim, (first + n) * kDim), alone)).toBeLessThan(1e-5);
          first += n;
        }
      });
    } finally {
      for (const a of adapters) a.dispose();
    }
  });

  it('adds the low-rank term in fp32 beside the int8 and bf16 base products', () => {
    const adapter = Adapter.load(dirs[0]!, { base: 'svc-small' });
    try {
      const reference = withEncoder('fp32', (e) => e.embedSync(kTexts), dirs[0]);
      for (const precision of ['int8', 'bf16'] as const) {
        const [segmented, mixed] = withEncoder(precision, (e) => [
          e.embedSync(kTexts, { counts: [kTexts.length], adapters: [adapter] }),
          e.embedSync(kTexts, { counts: [3, kTexts.length - 3], adapters: [null, adapter] }),
        ]);
        const merged = withEncoder(precision, (e) => e.embedSync(kTexts), dirs[0]);
        // About as close to the fp32 model as the merged copy in this precision (this random adapter moves every layer
        // far more than a trained one, which int8's per-row steps feel: the merged copy's lowest is 0.985 here).
        const [seg, mer] = [lowestCosine(segmented, reference), lowestCosine(merged, reference)];
        expect(seg).toBeGreaterThan(Math.min(0.995, mer - 0.01));
        // Rows of the adapter's run embed as in a batch of that model alone (int8 quantizes per row).
        expect(maxAbsDiff(mixed.subarray(3 * kDim), segmented.subarray(3 * kDim))).toBeLessThan(1e-5);
      }
    } finally {
      adapter.dispose();
    }
  });

  it('holds an F16 file at 2 bytes a value and an F32 file at 4, each predicting as its merged copy', async () => {
    // The same random values written both ways: the F16 file rounds them, the F32 file keeps them.
    const tensors = randomAdapter(kSmallShape, { rank: 8, seed: 5 });
    const f32Dir = join(root, 'a0-f32');
    await writeAdapter(f32Dir, tensors, { rank: 8, alpha: 16, modules: kLoraModules }, base, config, 'F32');
    const half = Adapter.load(dirs[0]!, { base: 'svc-small' });
    const full = Adapter.load(f32Dir, { base: 'svc-small' });
    try {
      // rank 8 x (in + out) over the six modules of six layers: 331,776 values.
      expect(half.bytes).toBe(331_776 * 2);
      expect(full.bytes).toBe(331_776 * 4);
      const [halfSegmented, fullSegmented] = withEncoder('fp32', (e) => [
        e.embedSync(kTexts, { counts: [kTexts.length], adapters: [half] }),
        e.embedSync(kTexts, { counts: [kTexts.length], adapters: [full] }),
      ]);
      expect(
        maxAbsDiff(
          fullSegmented,
          withEncoder('fp32', (e) => e.embedSync(kTexts), f32Dir),
        ),
      ).toBeLessThan(1e-5);
      expect(
        maxAbsDiff(
          halfSegmented,
          withEncoder('fp32', (e) => e.embedSync(kTexts), dirs[0]),
        ),
      ).toBeLessThan(1e-5);
      // What the F16 file's rounding (relative 2^-11) costs against the exact values: small beside the adapter's effect.
      const rounding = maxAbsDiff(halfSegmented, fullSegmented);
      expect(rounding).toBeGreaterThan(0);
      expect(rounding).toBeLessThan(1e-3);
    } finally {
      half.dispose();
      full.dispose();
    }
  });

  it('refuses segments that do not cover the batch, and a disposed adapter', () => {
    const adapter = Adapter.load(dirs[1]!, { base: 'svc-small' });
    expect(adapter.bytes).toBeGreaterThan(0);
    withEncoder('fp32', (encoder) => {
      expect(() => encoder.embedSync(kTexts.slice(0, 2), { counts: [1], adapters: [adapter] })).toThrow(/add up to 1/);
      adapter.dispose();
      expect(() => encoder.embedSync(kTexts.slice(0, 1), { counts: [1], adapters: [adapter] })).toThrow(/disposed/);
    });
  });

  it('runs the low-rank term alike at every kernel level (SVC_ISA), scalar included', () => {
    const levels = ['scalar', ...(cpuInfo().avx2 ? ['avx2'] : []), ...(cpuInfo().avx512 ? ['avx512'] : [])];
    for (const isa of levels) {
      const out = execFileSync(process.execPath, ['--import', 'tsx', 'test/native/_isa_segments.ts'], {
        cwd: packageRoot(),
        env: { ...process.env, SVC_ISA: isa },
        input: JSON.stringify({ texts: kTexts.slice(0, 6), adapter: dirs[1] }),
        encoding: 'utf8',
      });
      const { level, worst } = JSON.parse(out) as { level: string; worst: number };
      expect(level).toBe(isa);
      // Base rows as the base alone, adapted rows as the merged copy, at this level.
      expect(worst).toBeLessThan(1e-5);
    }
  });
});
