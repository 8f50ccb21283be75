// EncoderTrainer's end-to-end phase (SetFit's end_to_end) on svc-small: after contrastive steps, a
// softmax head and the encoder (or the adapter) train on the texts' cross-entropy.
import { describe, expect, it } from 'vitest';

import { resolveBaseModel } from '../../src/model/base-models.js';
import { EncoderTrainer, kAdapterTargets } from '../../src/native/trainer.js';
import type { HeadBatch, PairBatch } from '../../src/native/trainer.js';

const base = resolveBaseModel('svc-small');

// Word-piece ids of five short texts, the first three one class, the last two the other.
const kTexts = [
  [101, 2023, 2003, 2019, 2742, 6251, 102],
  [101, 1045, 2293, 2023, 3185, 1012, 102],
  [101, 2200, 2204, 2833, 1998, 2326, 102],
  [101, 2023, 2001, 1996, 5409, 7954, 2412, 1012, 102],
  [101, 1996, 3185, 2001, 11771, 1998, 2146, 102],
];
const ids = Int32Array.from(kTexts.flat());
const lengths = Int32Array.from(kTexts, (t) => t.length);
const kPairs: PairBatch = { ids, lengths, pairA: Int32Array.of(0, 1, 3), pairB: Int32Array.of(1, 2, 4), labels: Float32Array.of(1, 1, 1) };
const kHeadBatch: HeadBatch = { ids, lengths, targets: Int32Array.of(0, 0, 0, 1, 1) };

function phaseLosses(adapter: boolean, steps: number): { losses: number[]; embedded: Float32Array } {
  const trainer = EncoderTrainer.open(base.weightsFile, base.configFile, {
    totalSteps: 2,
    threads: 2,
    seed: 5,
    lr: adapter ? 3e-4 : 2e-5,
    ...(adapter ? { adapter: { rank: 4, alpha: 8, targets: kAdapterTargets } } : {}),
  });
  try {
    trainer.step(kPairs);
    trainer.step(kPairs);
    trainer.startHeadPhase(
      { weights: new Float32Array(2 * trainer.dim), bias: new Float32Array(2) },
      { bodyLr: adapter ? 1e-3 : 5e-5, headLr: 5e-2, weightDecay: 0.01, totalSteps: steps },
    );
    const losses = Array.from({ length: steps }, () => trainer.headStep(kHeadBatch).loss);
    return { losses, embedded: trainer.embed(ids, lengths) };
  } finally {
    trainer.dispose();
  }
}

describe('EncoderTrainer end-to-end phase', () => {
  it.each([false, true])('lowers the head cross-entropy from ln 2 (adapter: %s), the same for the same seed', (adapter) => {
    const a = phaseLosses(adapter, 8);
    expect(a.losses[0]).toBeCloseTo(Math.log(2), 6);
    expect(a.losses.at(-1)!).toBeLessThan(0.5 * a.losses[0]!);
    const b = phaseLosses(adapter, 8);
    expect(b.losses).toEqual(a.losses);
    expect(b.embedded).toEqual(a.embedded);
  });

  it('refuses a step before the phase, a head of the wrong width and bad settings', () => {
    const trainer = EncoderTrainer.open(base.weightsFile, base.configFile, { totalSteps: 1, threads: 1 });
    try {
      expect(() => trainer.headStep(kHeadBatch)).toThrow(/start the end-to-end phase before its steps/);
      const settings = { bodyLr: 1e-5, headLr: 1e-2, weightDecay: 0.01, totalSteps: 4 };
      expect(() => trainer.startHeadPhase({ weights: new Float32Array(7), bias: new Float32Array(2) }, settings)).toThrow(
        /weights must hold bias.length x dim floats/,
      );
      const head = { weights: new Float32Array(2 * trainer.dim), bias: new Float32Array(2) };
      expect(() => trainer.startHeadPhase(head, { ...settings, totalSteps: 0 })).toThrow(/options.totalSteps/);
      expect(() => trainer.startHeadPhase(head, { ...settings, bodyLr: -1 })).toThrow(/options.bodyLr/);
      trainer.startHeadPhase(head, settings);
      expect(() => trainer.headStep({ ...kHeadBatch, targets: Int32Array.of(0, 1, 2, 0, 1) })).toThrow(/head target out of range/);
      expect(() => trainer.headStep({ ...kHeadBatch, targets: Int32Array.of(0, 1) })).toThrow(/one class per text/);
    } finally {
      trainer.dispose();
    }
  });
});
