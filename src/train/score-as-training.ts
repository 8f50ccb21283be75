// Scoring texts with a trained model as training work, not as predictions: what an evaluation report needs. The
// texts are embedded by embed tasks, which the pool runs on training's share of its workers (never through the
// predict batcher, its admission or its deadline, so a large validation set is scored however long it takes and
// no prediction waits behind it in the batcher), one chunk at a time, so one report holds at most one worker. The
// encoder runs in the pool's prediction precision (`asPredicted`), and the head is the one predict applies: each
// text gets the probability predict answers for it.
import { SvcError } from '../errors.js';
import { resolveBaseModel } from '../model/base-models.js';
import { readModelDir, type Head } from '../model/directory.js';
import { forgetEncoder, runTask } from '../pool/pool.js';
import type { TaskType } from '../contract/train-request.js';
import { headRows, packHeads } from '../predict/call.js';
import { scoreSegments } from '../predict/head.js';
import { thresholds, toLabelPrediction, toPrediction, type PredictionOf } from '../predict/predictions.js';

/** Texts per embed task: small, so that an abort is noticed soon and the report leaves the worker often. */
export const kScoreChunk = 16;

/** A trained model as scoring needs it. */
export interface ScoredModel {
  baseModel: string;
  /** A fine-tuned model's encoder weights or an adapter model's adapter; null for the frozen base encoder. */
  encoderFile: string | null;
  head: Head;
  taskType: TaskType;
  /** A multi-class or multi-label model's class or label names, in its head's order; [] for binary. */
  labels: readonly string[];
}

/**
 * Each text's prediction by `model`, as predict gives it with its defaults (`truncate: 'end'`, a multi-label
 * model's threshold 0.5), in input order. `truncated` is not measured here: always false.
 *
 * @example
 * ```ts
 * const { manifest, head, encoderFile } = await readModelDir('./positive-review');
 * await scoreAsTraining({ baseModel: 'svc-small', encoderFile, head, taskType: 'binary-classification', labels: [] }, ['Loved it']);
 * // [{ label: true, probability: 0.5833572149276733, truncated: false }]
 * ```
 */
export async function scoreAsTraining(
  model: ScoredModel,
  texts: readonly string[],
  options: { signal?: AbortSignal; tenant?: string } = {},
): Promise<PredictionOf<TaskType>[]> {
  const dim = resolveBaseModel(model.baseModel).hiddenSize;
  const table = packHeads([model.head]);
  const rows = headRows(model.head);
  const cut = thresholds(undefined, model.labels);
  const predictions: PredictionOf<TaskType>[] = [];
  for (let start = 0; start < texts.length; start += kScoreChunk) {
    // Checked between chunks, not given to the task: aborting a running task ends its worker and the encoders it holds.
    if (options.signal?.aborted) throw new SvcError('aborted', 'scoring was aborted');
    const part = texts.slice(start, start + kScoreChunk);
    // Background work: the organization's turn on training's share, like its training job's chunks.
    const task = { kind: 'embed', baseModel: model.baseModel, encoderFile: model.encoderFile, texts: part, asPredicted: true } as const;
    const embeddings = await runTask<Float32Array>(task, undefined, undefined, { tenant: options.tenant });
    const probabilities = scoreSegments(embeddings, dim, Int32Array.of(part.length), Int32Array.of(0), table);
    for (let i = 0; i < part.length; i++) {
      predictions.push(
        model.taskType === 'binary-classification'
          ? toPrediction(probabilities[i], 0)
          : toLabelPrediction(model.taskType, model.labels, probabilities.subarray(i * rows, (i + 1) * rows), 0, cut),
      );
    }
  }
  return predictions;
}

/**
 * {@link scoreAsTraining} with the model in directory `dir` (a published model, or one a training job is about to
 * publish). With `forget`, the workers drop the directory's encoder afterwards: a staging folder's path is not
 * the one predictions will load.
 */
export async function scoreModelDir(
  dir: string,
  texts: readonly string[],
  options: { signal?: AbortSignal; forget?: boolean; tenant?: string } = {},
): Promise<PredictionOf<TaskType>[]> {
  const { manifest, head, encoderFile } = await readModelDir(dir);
  try {
    const model = { baseModel: manifest.base_model, encoderFile, head, taskType: manifest.task_type, labels: manifest.labels ?? [] };
    return await scoreAsTraining(model, texts, options);
  } finally {
    if (options.forget === true && encoderFile !== null) forgetEncoder(encoderFile);
  }
}
