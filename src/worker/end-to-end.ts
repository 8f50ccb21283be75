// The end-to-end phase of a fine-tuning run (SetFit's `end_to_end`), after the contrastive steps:
// a softmax head over the normalized embeddings and the encoder (or only its adapter) train
// together on the examples' cross-entropy, a few examples a step for a number of epochs. Its head
// is dropped afterwards: the model's head is fitted on the final embeddings as for any run, so the
// phase only moves the encoder toward separating the classes the way a softmax head reads them.
import type { EncoderTrainer } from '../native/trainer.js';
import type { ExampleTargets } from '../pool/tasks.js';
import { seededRandom } from '../random.js';
import { endToEndSteps, kEndToEndRecipe } from '../train/end-to-end-recipe.js';

export interface EndToEndSettings {
  /** Passes over the examples. */
  epochs: number;
  /** The contrastive phase's peak rate; the body's here is {@link kEndToEndRecipe}.bodyLrShare of it. */
  contrastiveLr: number;
  seed: number;
  /** One Int32: 1 stops the phase between steps. */
  stop: Int32Array;
}

/**
 * Runs the phase on `rows` (each example's token ids) of a single-label request; its step count, or
 * null when stopped. Multi-label requests have no softmax head: the caller skips them.
 */
export function runEndToEnd(
  trainer: EncoderTrainer,
  rows: readonly Int32Array[],
  targets: ExampleTargets,
  settings: EndToEndSettings,
): number | null {
  if (targets.kind !== 'classes') throw new RangeError('the end-to-end phase needs single-label targets');
  const n = rows.length;
  const classes = Math.max(2, targets.count);
  const { batch } = kEndToEndRecipe;
  const totalSteps = endToEndSteps(n, settings.epochs);
  // A zero head: its first steps learn the classes' directions before the encoder receives gradient.
  trainer.startHeadPhase(
    { weights: new Float32Array(classes * trainer.dim), bias: new Float32Array(classes) },
    {
      bodyLr: settings.contrastiveLr * kEndToEndRecipe.bodyLrShare,
      headLr: kEndToEndRecipe.headLr,
      weightDecay: kEndToEndRecipe.weightDecay,
      totalSteps,
    },
  );
  // Its own stream, so the contrastive pairs' order stays as it was.
  const random = seededRandom(settings.seed ^ 0x6532650a);
  const order = Array.from({ length: n }, (_, i) => i);
  for (let epoch = 0; epoch < settings.epochs; epoch++) {
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (let start = 0; start < n; start += batch) {
      if (Atomics.load(settings.stop, 0) !== 0) return null;
      const chosen = order.slice(start, start + batch);
      const texts = chosen.map((i) => rows[i]!);
      const ids = new Int32Array(texts.reduce((sum, t) => sum + t.length, 0));
      let at = 0;
      for (const t of texts) {
        ids.set(t, at);
        at += t.length;
      }
      trainer.headStep({
        ids,
        lengths: Int32Array.from(texts, (t) => t.length),
        targets: Int32Array.from(chosen, (i) => targets.classes[i]!),
      });
    }
  }
  return totalSteps;
}
