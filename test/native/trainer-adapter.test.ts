import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { SvcError } from '../../src/errors.js';
import { writeAdapter } from '../../src/model/adapter.js';
import { resolveBaseModel } from '../../src/model/base-models.js';
import { parseBertConfig } from '../../src/model/onnx/bert-weights.js';
import { Encoder } from '../../src/native/encoder.js';
import { EncoderTrainer, kAdapterTargets } from '../../src/native/trainer.js';
import type { AdapterOptions, PairBatch } from '../../src/native/trainer.js';

const base = resolveBaseModel('svc-small');
const dir = mkdtempSync(join(tmpdir(), 'svc-trainer-adapter-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// "This is an example sentence" and four more texts of word-piece ids.
const kExample = [101, 2023, 2003, 2019, 2742, 6251, 102];
const kTexts = [
  kExample,
  [101, 1045, 2293, 2023, 3185, 1012, 102],
  [101, 2023, 2001, 1996, 5409, 7954, 2412, 1012, 102],
  [101, 2200, 2204, 2833, 1998, 2326, 102],
  [101, 1996, 3185, 2001, 11771, 1998, 2146, 102],
];
const kBatch: PairBatch = {
  ids: Int32Array.from(kTexts.flat()),
  lengths: Int32Array.from(kTexts, (t) => t.length),
  pairA: Int32Array.of(0, 1, 2, 3, 0, 1),
  pairB: Int32Array.of(1, 3, 4, 4, 2, 2),
  labels: Float32Array.of(1, 1, 1, 0, 0, 0),
};
const kEvery: AdapterOptions = { rank: 8, alpha: 16, targets: kAdapterTargets };

function open(adapter: AdapterOptions, seed = 3): EncoderTrainer {
  return EncoderTrainer.open(base.weightsFile, base.configFile, { totalSteps: 10, threads: 2, seed, lr: 5e-3, adapter });
}

function cosine(a: Float32Array, b: Float32Array): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i += 1) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return ab / Math.sqrt(aa * bb);
}

describe('EncoderTrainer with a LoRA adapter on svc-small', () => {
  it('starts as the base encoder (B is zero) and trains A and B only, named as PEFT names them', () => {
    const trainer = open(kEvery);
    const e = trainer.embed(Int32Array.from(kExample), Int32Array.of(kExample.length));
    expect(Array.from(e.subarray(0, 4), (v) => Number(v.toFixed(4)))).toEqual([0.0677, 0.0636, 0.0487, 0.0794]);
    const initial = trainer.adapterTensors();
    // 6 layers x 6 targets x (A, B).
    expect(initial.length).toBe(72);
    expect(initial.slice(0, 2).map((t) => [t.name, t.shape])).toEqual([
      ['base_model.model.encoder.layer.0.attention.self.query.lora_A.weight', [8, 384]],
      ['base_model.model.encoder.layer.0.attention.self.query.lora_B.weight', [384, 8]],
    ]);
    expect(initial.slice(6, 12).map((t) => [t.name, t.shape])).toEqual([
      ['base_model.model.encoder.layer.0.attention.output.dense.lora_A.weight', [8, 384]],
      ['base_model.model.encoder.layer.0.attention.output.dense.lora_B.weight', [384, 8]],
      ['base_model.model.encoder.layer.0.intermediate.dense.lora_A.weight', [8, 384]],
      ['base_model.model.encoder.layer.0.intermediate.dense.lora_B.weight', [1536, 8]],
      ['base_model.model.encoder.layer.0.output.dense.lora_A.weight', [8, 1536]],
      ['base_model.model.encoder.layer.0.output.dense.lora_B.weight', [384, 8]],
    ]);
    expect(initial[71]!.name).toBe('base_model.model.encoder.layer.5.output.dense.lora_B.weight');
    // Rank 8 on every linear layer: 8 x (4 x (384 + 384) + 2 x (384 + 1536)) x 6 layers.
    expect(initial.reduce((n, t) => n + t.data.length, 0)).toBe(331_776);
    // A uniform in ±1/sqrt(in) (PEFT's Kaiming-uniform init), B zero.
    const a = initial[0]!.data;
    expect(Math.max(...a.map(Math.abs))).toBeLessThanOrEqual(1 / Math.sqrt(384));
    expect(Math.max(...a.map(Math.abs))).toBeGreaterThan(0.9 / Math.sqrt(384));
    expect(initial[1]!.data.every((v) => v === 0)).toBe(true);

    const before = trainer.evaluate(kBatch);
    for (let i = 0; i < 6; i += 1) trainer.step(kBatch);
    expect(trainer.evaluate(kBatch)).toBeLessThan(before * 0.8);
    const trained = trainer.adapterTensors();
    expect(trained.map((t) => t.name)).toEqual(initial.map((t) => t.name));
    expect(trained[1]!.data.some((v) => v !== 0)).toBe(true);
    expect(() => trainer.save(join(dir, 'nothing.safetensors'))).toThrow(
      new SvcError('invalid_request', 'an adapter trainer keeps the base encoder as loaded: take adapterTensors(), not save()'),
    );
    trainer.dispose();
  });

  it('gives bitwise the same steps for the same seed, and adapts only the layers asked for', () => {
    const run = (seed: number) => {
      const trainer = open({ rank: 4, alpha: 8, targets: ['query', 'value'] }, seed);
      const losses = [1, 2, 3].map(() => trainer.step(kBatch).loss);
      const tensors = trainer.adapterTensors();
      trainer.dispose();
      return { losses, tensors };
    };
    const first = run(7);
    expect(run(7)).toEqual(first);
    expect(run(8).losses).not.toEqual(first.losses);
    expect(first.tensors.map((t) => t.name.replace('base_model.model.encoder.', ''))).toEqual(
      [0, 1, 2, 3, 4, 5].flatMap((l) =>
        ['query', 'value'].flatMap((m) => ['A', 'B'].map((w) => `layer.${l}.attention.self.${m}.lora_${w}.weight`)),
      ),
    );
  });

  it('embeds as the engine encoder does with the adapter written in PEFT format and merged at load', async () => {
    const trainer = open(kEvery);
    for (let i = 0; i < 4; i += 1) trainer.step(kBatch);
    const out = join(dir, 'adapter');
    const config = parseBertConfig(JSON.parse(readFileSync(base.configFile, 'utf8')) as Record<string, unknown>);
    const modules = [
      'attention.self.query',
      'attention.self.key',
      'attention.self.value',
      'attention.output.dense',
      'intermediate.dense',
      'output.dense',
    ] as const;
    await writeAdapter(out, trainer.adapterTensors(), { rank: 8, alpha: 16, modules }, base, config);
    const trained = trainer.embed(kBatch.ids, kBatch.lengths);
    trainer.dispose();
    const encoder = Encoder.fromPretrained('svc-small', { threads: 1, precision: 'fp32', adapter: out });
    const served = encoder.embedIdsSync(kBatch.ids, kBatch.lengths);
    encoder.dispose();
    const plain = Encoder.fromPretrained('svc-small', { threads: 1, precision: 'fp32' });
    const untouched = plain.embedIdsSync(kBatch.ids, kBatch.lengths);
    plain.dispose();
    for (let t = 0; t < kTexts.length; t += 1) {
      const row = (x: Float32Array) => x.subarray(t * 384, (t + 1) * 384);
      // The file keeps A and B in fp16 and the merge rounds W + s·B·A once: close, not equal.
      expect(cosine(row(served), row(trained))).toBeGreaterThan(0.9999);
      expect(cosine(row(untouched), row(trained))).toBeLessThan(0.9999);
    }
  });

  it('rejects bad adapter options with exact messages', () => {
    const bad =
      (adapter: unknown, more: object = {}) =>
      () =>
        EncoderTrainer.open(base.weightsFile, base.configFile, { totalSteps: 5, adapter: adapter as AdapterOptions, ...more });
    const names = "'query', 'key', 'value', 'attention.output.dense', 'intermediate.dense', 'output.dense'";
    expect(bad(8)).toThrow(new TypeError('options.adapter must be an object'));
    expect(bad({ ...kEvery, rank: 0 })).toThrow(new RangeError('options.adapter.rank must be a positive integer'));
    expect(bad({ ...kEvery, rank: 2.5 })).toThrow(new TypeError('options.adapter.rank must be a positive integer'));
    // The encoder's width bounds the rank; the native core knows it.
    expect(bad({ ...kEvery, rank: 385 })).toThrow(new RangeError('adapter rank must be an integer in [1, 384]'));
    expect(bad({ ...kEvery, alpha: 0 })).toThrow(new RangeError('options.adapter.alpha must be a positive number'));
    expect(bad({ ...kEvery, alpha: '16' })).toThrow(new TypeError('options.adapter.alpha must be a positive number'));
    expect(bad({ ...kEvery, targets: [] })).toThrow(new TypeError(`options.adapter.targets must be a non-empty array of ${names}`));
    expect(bad({ ...kEvery, targets: ['dense'] })).toThrow(new TypeError(`options.adapter.targets must be a non-empty array of ${names}`));
    expect(bad({ ...kEvery, targets: ['query', 'query'] })).toThrow(new RangeError('options.adapter.targets must name each layer once'));
    expect(bad(kEvery, { trainEmbeddings: true })).toThrow(
      new RangeError('options.trainEmbeddings cannot be combined with options.adapter'),
    );
    // A full trainer has no adapter.
    const full = EncoderTrainer.open(base.weightsFile, base.configFile, { totalSteps: 1 });
    expect(full.adapterTensors()).toEqual([]);
    full.dispose();
  });
});
