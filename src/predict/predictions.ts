// What a predict call takes and gives: its options, the prediction of each task type, and how one row
// of the head's probabilities becomes a prediction (binary: the 0.5 cut; multi-class: the most probable
// class; multi-label: the labels past their thresholds, checked against the model's labels).
import { SvcError } from '../errors.js';
import type { TaskType } from '../contract/train-request.js';
import type { TruncateMode } from '../contract/classify-request.js';
import type { Neighbour } from './nearest.js';

/**
 * One prediction: `probability` is P(label = true); `label` is `probability >= 0.5`; `truncated`
 * says the text was longer than the base model reads (256 tokens for svc-small) and only its
 * start was scored.
 */
export interface Prediction extends PredictionExtras {
  label: boolean;
  probability: number;
  truncated: boolean;
}

/** What a prediction carries only when the call asks for it, or (`unknown_tokens`) when the text has some. */
export interface PredictionExtras {
  /**
   * The share (0 to 1) of the text's word pieces, as the encoder read them, that the base model's vocabulary does not
   * know (`[UNK]`); absent when there are none. Emoji-only text is 1; a text whose share is 0.5 or more was mostly
   * unread and its scores say little (svc-small: Chinese 0.79, Japanese 0.24, Arabic 0.04, German 0, see docs/limits.md).
   */
  unknown_tokens?: number;
  /** `truncate: 'chunks'`: how many overlapping windows of the text were read (their embeddings averaged). */
  chunks?: number;
  /** `explain: k`: the k training examples nearest the text, most similar first. */
  nearest?: Neighbour[];
}

/**
 * A multi-class prediction: `label` is the most probable class, `probability` its probability,
 * `scores` every class's (they sum to 1).
 */
export interface ClassPrediction extends PredictionExtras {
  label: string;
  probability: number;
  scores: Record<string, number>;
  truncated: boolean;
}

/** A multi-label prediction: `labels` are those whose probability in `scores` reaches their threshold, in the model's label order. */
export interface LabelSetPrediction extends PredictionExtras {
  labels: string[];
  scores: Record<string, number>;
  truncated: boolean;
}

/** What a classifier of each task type predicts per text. */
export type PredictionOf<T extends TaskType> = T extends 'binary-classification'
  ? Prediction
  : T extends 'multi-class-classification'
    ? ClassPrediction
    : LabelSetPrediction;

/** The probability a label needs to be predicted by a multi-label model when no threshold is given. */
export const kDefaultThreshold = 0.5;

export interface PredictOptions {
  /** Stops waiting for the result (and drops the texts not in a batch yet). */
  signal?: AbortSignal;
  /**
   * Whose call this is. Calls of different tenants share the engine's batches in turn, so that one
   * tenant's large calls never hold another's up for more than a batch (the service passes the
   * organization). Default: one tenant for every call.
   */
  tenant?: string;
  /**
   * Multi-label models: the probability a label needs to be predicted, for every label, or per
   * label (labels left out keep 0.5). Default 0.5.
   */
  threshold?: number | Readonly<Record<string, number>>;
  /**
   * Texts longer than the encoder reads (256 tokens): `end` (default) scores their first tokens, `start`
   * their last tokens, `none` refuses them (`SvcError('invalid_request')`) before any text is scored,
   * `chunks` reads them whole in overlapping windows of words whose embeddings are averaged (each
   * prediction then says how many: `chunks`). `truncated` is true only where tokens were dropped.
   */
  truncate?: TruncateMode;
  /**
   * Adds to each prediction the `explain` (1 to 20) training examples nearest the text in the model's
   * embedding space, with their labels, cosine similarity, and (binary, multi-class) whether each one
   * carries the label answered. Nothing of it runs when absent.
   */
  explain?: number;
  /** @internal How errors name text t (default `texts[t]`, `text` for one string); the service passes `inputs[t]`. */
  paramOf?: (t: number) => string;
  /** @internal `truncate` and `explain` come parsed by the service's request schema: they are not parsed again. */
  parsed?: true;
}

/** Adds `unknown_tokens` to each prediction whose text had unknown word pieces (the field stays out at 0). */
export function markUnknownTokens(predictions: readonly PredictionExtras[], unknownShare: ArrayLike<number>): void {
  predictions.forEach((prediction, i) => {
    if (unknownShare[i] > 0) prediction.unknown_tokens = unknownShare[i];
  });
}

/** A binary text's prediction from P(true). */
export function toPrediction(probability: number, truncated: number): Prediction {
  return { label: probability >= 0.5, probability, truncated: truncated === 1 };
}

function checkThreshold(value: unknown, name: string): number {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    throw new SvcError('invalid_request', `${name} must be a number from 0 to 1`, { param: name });
  }
  return value;
}

/** Per-label thresholds from a predict call's `threshold` option, checked against the model's labels. */
export function thresholds(option: PredictOptions['threshold'], labels: readonly string[]): Float64Array {
  const out = new Float64Array(labels.length).fill(kDefaultThreshold);
  if (option === undefined) return out;
  if (typeof option === 'number' || typeof option !== 'object' || option === null) return out.fill(checkThreshold(option, 'threshold'));
  for (const [label, value] of Object.entries(option)) {
    const k = labels.indexOf(label);
    if (k < 0) {
      throw new SvcError('invalid_request', `threshold names the label '${label}', which the model does not have (${labels.join(', ')})`, {
        param: `threshold.${label}`,
      });
    }
    out[k] = checkThreshold(value, `threshold.${label}`);
  }
  return out;
}

/** A text's predictions from its row of probabilities. */
export function toLabelPrediction(
  taskType: TaskType,
  labels: readonly string[],
  row: Float32Array,
  truncated: number,
  cut: Float64Array,
): ClassPrediction | LabelSetPrediction {
  const scores: Record<string, number> = {};
  labels.forEach((label, k) => (scores[label] = row[k]));
  if (taskType === 'multi-class-classification') {
    let best = 0;
    for (let k = 1; k < row.length; k++) if (row[k] > row[best]) best = k;
    return { label: labels[best], probability: row[best], scores, truncated: truncated === 1 };
  }
  return { labels: labels.filter((_, k) => row[k] >= cut[k]), scores, truncated: truncated === 1 };
}
