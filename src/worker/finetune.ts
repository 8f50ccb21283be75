// The fine-tuning stage as a pool worker runs it: SetFit pairs of the examples, contrastive
// steps on the native trainer, then either the encoder saved as fp16 and the examples embedded
// by the saved encoder (what predictions will compute, so the head is fitted on the same
// numbers), or, when a LoRA adapter trains, the adapter's tensors handed back (moved, not
// copied) and the examples embedded by the trainer's base + adapter.
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { move, transferableSymbol, valueSymbol } from 'piscina';

import { resolveBaseModel } from '../model/base-models.js';
import { kEncoderFile } from '../contract/manifest.js';
import { Encoder } from '../native/encoder.js';
import { EncoderTrainer } from '../native/trainer.js';
import { kAdapterRecipe, kBatchPairs, kFinetuneRecipe, packPairBatch, sampleTargetPairs, stepCount, targetCount } from '../train/pairs.js';
import { baseEncoderOptions, encoderPooling } from './base-model-use.js';
import { encodeTexts } from './embed-texts.js';
import { runEndToEnd } from './end-to-end.js';
import type { FinetuneResult, FinetuneStepMessage, FinetuneTask } from '../pool/tasks.js';
import type { TruncationSide } from '../native/tokenizer.js';

/** Steps the reported loss is averaged over. */
const kLossWindow = 10;

function tokenize(
  baseModel: string,
  maxLength: number,
  texts: string[],
  truncate?: TruncationSide,
): { ids: Int32Array; lengths: Int32Array; rows: Int32Array[] } {
  const { ids, lengths } = encodeTexts(baseModel, texts, maxLength, truncate);
  let offset = 0;
  const rows = Array.from(lengths, (n) => ids.subarray(offset, (offset += n)));
  return { ids, lengths, rows };
}

/** Runs the task; null when the caller asked it to stop (checked before every step). */
export function finetune(task: FinetuneTask): FinetuneResult | null {
  try {
    return train(task);
  } finally {
    task.progress.close();
  }
}

/**
 * An adapter run's result marked for piscina to transfer its typed arrays' buffers (the adapter's
 * tensors and the embeddings) instead of cloning them: the worker returns this, and the caller
 * receives the plain result. A full run's result goes as it always has.
 */
export function movedResult(result: FinetuneResult | null): unknown {
  if (!result?.adapter) return result;
  const buffers = [result.embeddings.buffer, ...result.adapter.map((t) => t.data.buffer)];
  return move({ [transferableSymbol]: buffers, [valueSymbol]: result });
}

function train(task: FinetuneTask): FinetuneResult | null {
  const started = performance.now();
  const base = resolveBaseModel(task.baseModel);
  const { ids, lengths, rows } = tokenize(task.baseModel, base.maxLength, task.texts, task.truncate);
  const pairs = sampleTargetPairs(task.targets, { iterations: task.iterations, seed: task.seed });
  const steps = stepCount(pairs.a.length);
  const adapter = task.adapter ?? undefined;
  const recipe = adapter ? kAdapterRecipe : kFinetuneRecipe;
  const trainer = EncoderTrainer.open(base.weightsFile, base.configFile, {
    // Fine-tuning pools as the base model predicts: the loss sees the embeddings predict serves.
    ...encoderPooling(task.baseModel),
    totalSteps: steps,
    threads: task.threads,
    seed: task.seed,
    ...recipe,
    lr: task.lr ?? recipe.lr,
    ...(adapter ? { adapter } : {}),
  });
  const recent: number[] = [];
  try {
    for (let step = 0; step < steps; step++) {
      if (Atomics.load(task.stop, 0) !== 0) return null;
      const { loss } = trainer.step(packPairBatch(rows, pairs, step * kBatchPairs, kBatchPairs));
      recent.push(loss);
      if (recent.length > kLossWindow) recent.shift();
      const message: FinetuneStepMessage = { done: step + 1, total: steps, loss: mean(recent) };
      task.progress.postMessage(message);
    }
    let endToEndSteps = 0;
    if (task.endToEnd && task.targets.kind === 'classes') {
      const examples = rows.slice(0, targetCount(task.targets));
      const settings = { epochs: task.endToEnd.epochs, contrastiveLr: task.lr ?? recipe.lr, seed: task.seed, stop: task.stop };
      const done = runEndToEnd(trainer, examples, task.targets, settings);
      if (done === null) return null;
      endToEndSteps = done;
    }
    const summary = { pairs: pairs.a.length, steps, finalLoss: mean(recent), endToEndSteps };
    if (adapter) {
      const embeddings = trainer.embed(ids, lengths);
      const seconds = (performance.now() - started) / 1000;
      return { embeddings, encoderFile: null, adapter: trainer.adapterTensors(), ...summary, seconds };
    }
    const encoderFile = join(task.outDir, kEncoderFile);
    trainer.save(encoderFile);
    copyFileSync(base.configFile, join(task.outDir, 'config.json'));
    const encoder = Encoder.fromPretrained(encoderFile, {
      precision: 'fp32',
      threads: task.threads,
      ...baseEncoderOptions(task.baseModel),
    });
    try {
      const embeddings = encoder.embedIdsSync(ids, lengths);
      const seconds = (performance.now() - started) / 1000;
      return { embeddings, encoderFile, adapter: null, ...summary, seconds };
    } finally {
      encoder.dispose();
    }
  } finally {
    trainer.dispose();
  }
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
}
