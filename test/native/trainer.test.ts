import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';

import { SvcError } from '../../src/errors.js';
import { resolveBaseModel } from '../../src/model/base-models.js';
import { SafetensorsFile } from '../../src/model/safetensors.js';
import { Encoder } from '../../src/native/encoder.js';
import { EncoderTrainer, trainSelfTest } from '../../src/native/trainer.js';
import type { PairBatch } from '../../src/native/trainer.js';

const base = resolveBaseModel('svc-small');
const dir = mkdtempSync(join(tmpdir(), 'svc-trainer-'));
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

function open(seed: number, threads = 2): EncoderTrainer {
  return EncoderTrainer.open(base.weightsFile, base.configFile, { totalSteps: 10, threads, seed, lr: 1e-4 });
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

function safetensorsHeader(file: string): Record<string, { dtype: string; shape: number[]; data_offsets: number[] }> {
  const bytes = readFileSync(file);
  const length = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + length).toString('utf8')) as Record<
    string,
    { dtype: string; shape: number[]; data_offsets: number[] }
  >;
  delete header.__metadata__;
  return header;
}

describe('training core gradient checks', () => {
  it('matches central finite differences in double precision for every backward kernel and a toy encoder, with and without an adapter, and the end-to-end head', () => {
    const errors = trainSelfTest();
    expect(Object.keys(errors)).toEqual([
      'linear',
      'layer_norm',
      'gelu',
      'attention',
      'pool_normalize_cosine_loss',
      'gemm_fp32_vs_double',
      'gelu_fp32_vs_double',
      'attention_fp32_vs_double',
      'toy_encoder_2_layers',
      'attention_kept_vs_recomputed',
      'attention_position_bias',
      'cls_pool_normalize_cosine_loss',
      'toy_encoder_embeddings',
      'toy_encoder_data_parallel',
      'toy_encoder_fp32_vs_double',
      'lora',
      'lora_rank8',
      'lora_rank16',
      'lora_rank8_fp32_vs_double',
      'toy_encoder_lora',
      'toy_encoder_lora_data_parallel',
      'toy_encoder_lora_fp32_vs_double',
      'head_cross_entropy',
      'toy_encoder_head',
      'toy_encoder_head_parallel',
    ]);
    // The dropout mask kept as bits must give backward's very bits: 0 here means no mismatch.
    const { attention_kept_vs_recomputed: keptMismatch, ...gradientErrors } = errors;
    expect(keptMismatch).toBe(0);
    for (const [name, error] of Object.entries(gradientErrors)) {
      expect({ name, ok: error <= 1e-4 && error > 0 }).toEqual({ name, ok: true });
    }
  });
});

describe('EncoderTrainer on svc-small', () => {
  it('embeds with the master weights as the published model does', () => {
    const trainer = open(1);
    expect(trainer.dim).toBe(384);
    const e = trainer.embed(Int32Array.from(kExample), Int32Array.of(kExample.length));
    expect(Array.from(e.subarray(0, 4), (v) => Number(v.toFixed(4)))).toEqual([0.0677, 0.0636, 0.0487, 0.0794]);
  });

  it('gives bitwise the same losses for the same seed and threads, other losses for another seed', () => {
    const run = (seed: number) => {
      const trainer = open(seed);
      return [1, 2, 3, 4].map(() => trainer.step(kBatch));
    };
    const first = run(7);
    const again = run(7);
    expect(again).toEqual(first);
    expect(first.map((s) => s.step)).toEqual([1, 2, 3, 4]);
    // Warm-up is ceil(10% of 10) = 1 step (lr 0), then linear decay from 1e-4: x 9/9, 8/9, 7/9.
    expect(first.map((s) => Number(s.lr.toExponential(6)))).toEqual([0, 1e-4, 8.888889e-5, 7.777778e-5]);
    expect(run(8).map((s) => s.loss)).not.toEqual(first.map((s) => s.loss));
    // Training pulls same-label pairs together and pushes the others apart.
    expect(first[3]!.loss).toBeLessThan(first[0]!.loss);
  });

  it('reports the gradient norm and clips the gradient to maxGradNorm', () => {
    const options = { totalSteps: 10, threads: 2, seed: 5, lr: 1e-4 };
    const free = EncoderTrainer.open(base.weightsFile, base.configFile, options);
    const clipped = EncoderTrainer.open(base.weightsFile, base.configFile, { ...options, maxGradNorm: 1e-3 });
    // Step 1 runs at learning rate 0 (warm-up): the same weights, so the same gradient.
    const [a1, b1] = [free.step(kBatch), clipped.step(kBatch)];
    expect(b1.gradNorm).toBe(a1.gradNorm);
    expect(a1.gradNorm).toBeGreaterThan(1e-3);
    const [a2, b2] = [free.step(kBatch), clipped.step(kBatch)];
    expect(b2.loss).toBe(a2.loss);
    // Step 2 updated them with the full and with the clipped gradient.
    expect(clipped.step(kBatch).loss).not.toBe(free.step(kBatch).loss);
    expect(() => EncoderTrainer.open(base.weightsFile, base.configFile, { ...options, maxGradNorm: -1 })).toThrow(
      new RangeError('options.maxGradNorm must be in [0, Infinity)'),
    );
    free.dispose();
    clipped.dispose();
  });

  it('trains inside a worker thread with the same losses as the main thread', async () => {
    // The worker registers tsx itself (vitest's transform does not reach worker threads).
    const entry = new URL('./_trainer_worker.ts', import.meta.url).pathname;
    const worker = new Worker(`require('tsx/cjs/api').require(${JSON.stringify(entry)}, ${JSON.stringify(entry)});`, {
      eval: true,
      workerData: { batch: kBatch },
    });
    const fromWorker = await new Promise<number[]>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    const main = open(7);
    expect(fromWorker).toEqual([main.step(kBatch).loss, main.step(kBatch).loss]);
    main.dispose();
  });

  it('lowers the loss it optimizes and exports weights the encoder loads like any other', () => {
    const trainer = open(3);
    const before = trainer.evaluate(kBatch);
    for (let i = 0; i < 6; i += 1) trainer.step(kBatch);
    const after = trainer.evaluate(kBatch);
    expect(after).toBeLessThan(before * 0.8);

    const file = join(dir, 'model.fp16.safetensors');
    trainer.save(file);
    copyFileSync(base.configFile, join(dir, 'config.json'));
    const saved = safetensorsHeader(file);
    const original = safetensorsHeader(base.weightsFile);
    expect(Object.keys(saved).sort()).toEqual(Object.keys(original).sort());
    for (const [name, info] of Object.entries(original)) expect(saved[name]).toEqual({ ...info, data_offsets: saved[name]!.data_offsets });

    const reloaded = EncoderTrainer.open(file, base.configFile, { totalSteps: 1 });
    const trained = trainer.embed(kBatch.ids, kBatch.lengths);
    const again = reloaded.embed(kBatch.ids, kBatch.lengths);
    const fresh = open(3).embed(kBatch.ids, kBatch.lengths);
    for (let t = 0; t < kTexts.length; t += 1) {
      const row = (x: Float32Array) => x.subarray(t * 384, (t + 1) * 384);
      expect(cosine(row(trained), row(again))).toBeGreaterThan(0.9999);
      expect(cosine(row(trained), row(fresh))).toBeLessThan(0.9999);
    }
    expect(reloaded.evaluate(kBatch)).toBeCloseTo(after, 3);
    reloaded.dispose();

    // The engine's encoder loads the exported directory and embeds as the trainer does: in fp32, as the trainer's
    // embed() does, to 6 nines; at the default precision ('auto': bf16 where it measured faster) within bf16's bound.
    const servedIn = (options: { precision?: 'fp32' }) => {
      const encoder = Encoder.fromPretrained(dir, { threads: 1, ...options });
      try {
        return encoder.embedIdsSync(kBatch.ids, kBatch.lengths);
      } finally {
        encoder.dispose();
      }
    };
    const served = servedIn({ precision: 'fp32' });
    const servedDefault = servedIn({});
    for (let t = 0; t < kTexts.length; t += 1) {
      const row = (x: Float32Array) => x.subarray(t * 384, (t + 1) * 384);
      expect(cosine(row(served), row(trained))).toBeGreaterThan(0.9999);
      expect(cosine(row(served), row(again))).toBeGreaterThan(0.999999);
      expect(cosine(row(servedDefault), row(again))).toBeGreaterThanOrEqual(0.9999);
    }
    expect(() => reloaded.embed(kBatch.ids, kBatch.lengths)).toThrow(new SvcError('invalid_request', 'the trainer has been disposed'));
  });

  it('trains the embedding tables with trainEmbeddings, and keeps them as loaded without', () => {
    const word = 'embeddings.word_embeddings.weight';
    const rowOf = (file: string, id: number) => {
      const weights = SafetensorsFile.open(file);
      const name = weights.has(word) ? word : `bert.${word}`;
      return weights.float32(name).subarray(id * 384, (id + 1) * 384);
    };
    const rows = (trainEmbeddings: boolean) => {
      const trainer = EncoderTrainer.open(base.weightsFile, base.configFile, {
        totalSteps: 10,
        threads: 2,
        seed: 4,
        lr: 1e-4,
        trainEmbeddings,
      });
      for (let i = 0; i < 3; i += 1) trainer.step(kBatch);
      const file = join(dir, `embeddings-${trainEmbeddings}.safetensors`);
      trainer.save(file);
      trainer.dispose();
      // 2023 ("this") is in the batch; 7592 ("hello") is not.
      return [rowOf(file, 2023), rowOf(file, 7592)];
    };
    const [used, unused] = [rowOf(base.weightsFile, 2023), rowOf(base.weightsFile, 7592)];
    const [frozenUsed, frozenUnused] = rows(false);
    expect([frozenUsed, frozenUnused]).toEqual([used, unused]);
    const [trainedUsed, trainedUnused] = rows(true);
    const moved = (a: Float32Array, b: Float32Array) => Math.max(...a.map((x, j) => Math.abs(x - b[j]!)));
    // An Adam step moves a used row by about the learning rate per step; an unused one only
    // decays (by 1e-4 x 0.01 x its value a step), below fp16's resolution here.
    expect(moved(trainedUsed!, used!)).toBeGreaterThan(5e-5);
    expect(moved(trainedUnused!, unused!)).toBeLessThan(moved(trainedUsed!, used!) / 10);
    expect(() => EncoderTrainer.open(base.weightsFile, base.configFile, { totalSteps: 1, trainEmbeddings: 1 as never })).toThrow(
      new TypeError('options.trainEmbeddings must be a boolean'),
    );
  });

  it('rejects bad options and bad batches with exact messages', () => {
    const bad = (options: object) => () => EncoderTrainer.open(base.weightsFile, base.configFile, options as never);
    expect(bad({ totalSteps: 0 })).toThrow(new RangeError('options.totalSteps must be a positive integer'));
    expect(bad({ totalSteps: 5, threads: 1.5 })).toThrow(new TypeError('options.threads must be a positive integer'));
    expect(bad({ totalSteps: 5, seed: -1 })).toThrow(new RangeError('options.seed must be a non-negative integer'));
    expect(bad({ totalSteps: 5, lr: 2 })).toThrow(new RangeError('options.lr must be in [0, 1)'));
    const trainer = open(1, 1);
    // Bad batches are the caller's mistake: RangeError, as the Encoder reports bad ids.
    expect(() => trainer.step({ ...kBatch, pairB: Int32Array.of(1, 3, 4, 4, 2, 9) })).toThrow(new RangeError('pair index out of range'));
    expect(() => trainer.step({ ...kBatch, labels: Float64Array.from(kBatch.labels) as never })).toThrow(
      new TypeError('labels must be a Float32Array'),
    );
    expect(() => trainer.step({ ...kBatch, lengths: Int32Array.of(7, 7, 9, 7, 7) })).toThrow('lengths must add up to ids.length');
    expect(() => trainer.step({ ...kBatch, ids: Int32Array.from(kTexts.flat(), (id) => id + 30000) })).toThrow('token id out of range');
    const missing = () => EncoderTrainer.open(join(dir, 'none.safetensors'), base.configFile, { totalSteps: 1 });
    expect(missing).toThrow(`cannot open weights ${join(dir, 'none.safetensors')}: No such file or directory`);
  });
});
