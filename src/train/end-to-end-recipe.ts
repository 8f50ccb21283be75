// The end-to-end phase's recipe (SetFit's `end_to_end`, run by the worker after the contrastive
// steps: src/worker/end-to-end.ts) and how the manifest records it.
import type { FinetuneSettings } from '../contract/manifest.js';

/**
 * SetFit's differentiable-head defaults for this phase: batches of 2 examples, the head at 1e-2,
 * l2_weight 0.01, the body at half its contrastive rate (SetFit: 1e-5 after 2e-5).
 */
export const kEndToEndRecipe = Object.freeze({ batch: 2, headLr: 1e-2, weightDecay: 0.01, bodyLrShare: 0.5 });

/** Steps the phase takes over `examples` for `epochs` passes. */
export function endToEndSteps(examples: number, epochs: number): number {
  return epochs * Math.ceil(examples / kEndToEndRecipe.batch);
}

/** The manifest's `training.finetune.end_to_end` for a phase of `steps` after a contrastive phase at `contrastiveLr`. */
export function endToEndSettings(epochs: number, steps: number, contrastiveLr: number): NonNullable<FinetuneSettings['end_to_end']> {
  return {
    epochs,
    batch: kEndToEndRecipe.batch,
    steps,
    body_learning_rate: contrastiveLr * kEndToEndRecipe.bodyLrShare,
    head_learning_rate: kEndToEndRecipe.headLr,
    weight_decay: kEndToEndRecipe.weightDecay,
  };
}
