// The trainer's forward on each BERT-family shape against the plain-torch references (scripts/reference-encoders.py):
// mean or CLS pooling, with or without Normalize, BERT, XLM-RoBERTa or MPNet (its names, positions and relative
// position bias), for full fine-tuning and for an adapter (whose B starts at zero, so it embeds as its base). Then a
// few steps on each, which must lower the loss on the batch they train on, and a fully fine-tuned model saved and
// loaded by the engine, which must embed as the trainer does. embed() runs the fp32 master weights, so it is held
// to the fp32 bound.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { Encoder } from '../../src/native/encoder.js';
import { EncoderTrainer, kDefaultAdapter } from '../../src/native/trainer.js';
import type { EncoderTrainerOptions, PairBatch } from '../../src/native/trainer.js';
import { kReferenceCases, readReferenceOutputs, writeReferenceCase } from '../_support/reference-encoders.js';
import { cosine, maxAbsDiff } from './_reference_ids.js';

const root = mkdtempSync(join(tmpdir(), 'svc-trainer-families-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const kModes: Record<string, Partial<EncoderTrainerOptions>> = { full: {}, adapter: { adapter: kDefaultAdapter } };

describe.each(kReferenceCases.map((c) => [c.name, c] as const))('%s', (name, c) => {
  const dir = join(root, name);
  const { ids } = writeReferenceCase(dir, c);
  const reference = readReferenceOutputs(name);
  const lengths = Int32Array.from(reference.lengths);
  const texts = lengths.length;
  const open = (mode: Partial<EncoderTrainerOptions>) =>
    EncoderTrainer.open(join(dir, 'model.safetensors'), join(dir, 'config.json'), {
      totalSteps: 8,
      threads: 2,
      seed: 3,
      lr: 1e-3,
      pooling: c.options.pooling,
      normalize: c.options.normalize,
      ...mode,
    });

  for (const [modeName, mode] of Object.entries(kModes)) {
    it(`${modeName}: embeds as the reference before any step`, () => {
      const trainer = open(mode);
      try {
        const h = c.options.hidden;
        const pooled = trainer.embed(ids, lengths);
        reference.pooled.forEach((expected, t) => {
          const got = pooled.subarray(t * h, (t + 1) * h);
          expect(maxAbsDiff(got, expected), `text ${t}`).toBeLessThan(2e-4);
          expect(cosine(got, expected), `text ${t}`).toBeGreaterThan(0.999999);
        });
      } finally {
        trainer.dispose();
      }
    });

    it(`${modeName}: steps lower the loss on the batch they train on`, () => {
      // Every pair of the case's texts, same-label when both indices are even.
      const pairA: number[] = [];
      const pairB: number[] = [];
      const labels: number[] = [];
      for (let a = 0; a < texts; a++)
        for (let b = a + 1; b < texts; b++) {
          pairA.push(a);
          pairB.push(b);
          labels.push(a % 2 === b % 2 ? 1 : 0);
        }
      const batch: PairBatch = {
        ids,
        lengths,
        pairA: Int32Array.from(pairA),
        pairB: Int32Array.from(pairB),
        labels: Float32Array.from(labels),
      };
      const trainer = open(mode);
      try {
        const before = trainer.evaluate(batch);
        for (let step = 0; step < 8; step++) expect(Number.isFinite(trainer.step(batch).loss)).toBe(true);
        expect(trainer.evaluate(batch)).toBeLessThan(before);
      } finally {
        trainer.dispose();
      }
    });
  }

  it('full: a fine-tuned model saved and loaded by the engine embeds as the trainer does', () => {
    const trainer = open({});
    const saved = join(root, `${name}-saved`);
    mkdirSync(saved, { recursive: true });
    copyFileSync(join(dir, 'config.json'), join(saved, 'config.json'));
    try {
      const pairs = Int32Array.from([0, 1]);
      for (let step = 0; step < 3; step++)
        trainer.step({ ids, lengths, pairA: pairs, pairB: pairs.slice().reverse(), labels: Float32Array.of(1, 1) });
      trainer.save(join(saved, 'model.fp16.safetensors'));
      const trained = trainer.embed(ids, lengths);
      const encoder = Encoder.fromPretrained(join(saved, 'model.fp16.safetensors'), {
        precision: 'fp32',
        threads: 2,
        pooling: c.options.pooling,
        normalize: c.options.normalize,
      });
      try {
        const h = c.options.hidden;
        const served = encoder.embedIdsSync(ids, lengths);
        // The file holds fp16 weights, each within 2^-11 of the trainer's: cosines, not bits. The steps moved each
        // embedding from the untrained reference by far more than that rounding does, so the file holds them.
        for (let t = 0; t < texts; t++) {
          const got = served.subarray(t * h, (t + 1) * h);
          const want = trained.subarray(t * h, (t + 1) * h);
          expect(cosine(got, want), `text ${t}`).toBeGreaterThan(0.9999);
          expect(maxAbsDiff(want, reference.pooled[t]!), `text ${t}`).toBeGreaterThan(10 * maxAbsDiff(got, want));
        }
      } finally {
        encoder.dispose();
      }
    } finally {
      trainer.dispose();
    }
  });
});
