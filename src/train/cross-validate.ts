// How good a head is likely to be on texts it has not seen: stratified k-fold cross-validation of
// the head on the training examples' embeddings (computed once, so the k extra fits cost
// milliseconds). The embeddings must come from an encoder that never saw the examples: for a
// fine-tuned body, training passes the base encoder's (one that saw every example scores 97-100 %).
import { kDefaultSeed, seededRandom } from '../random.js';
import type { CrossValidation } from '../pool/tasks.js';

/** Folds used at most; fewer when the rarest class has fewer examples. */
export const kMaxFolds = 5;

// Cross-validated quality of a head: defined with the fit task's result that carries it.
export type { CrossValidation };

/**
 * A fold number per example: each class's examples, in a seeded shuffle, are dealt to the folds in
 * turn, so every fold holds about the same share of each class. `folds` is capped by the rarest
 * class's count (at least 2).
 */
export function stratifiedFolds(
  y: ArrayLike<number>,
  classes: number,
  maxFolds = kMaxFolds,
  seed = kDefaultSeed,
): { fold: Int32Array; folds: number } {
  const members: number[][] = Array.from({ length: classes }, () => []);
  for (let i = 0; i < y.length; i++) members[y[i]].push(i);
  const rarest = Math.min(...members.map((m) => m.length).filter((count) => count > 0));
  const folds = Math.max(2, Math.min(maxFolds, rarest));
  const random = seededRandom(seed);
  const fold = new Int32Array(y.length);
  let next = 0;
  for (const indices of members) {
    // Fisher-Yates with the seeded generator.
    for (let i = indices.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [indices[i], indices[j]] = [indices[j], indices[i]];
    }
    // Continue dealing where the previous class stopped, so small classes do not all land in fold 0.
    for (const index of indices) fold[index] = next++ % folds;
  }
  return { fold, folds };
}

/** Rows `indices` of an n x d matrix, packed. */
export function takeRows(x: ArrayLike<number>, d: number, indices: ArrayLike<number>): Float64Array {
  const out = new Float64Array(indices.length * d);
  for (let r = 0; r < indices.length; r++) {
    const from = indices[r] * d;
    for (let j = 0; j < d; j++) out[r * d + j] = x[from + j];
  }
  return out;
}

function f1(truePositive: number, falsePositive: number, falseNegative: number): number {
  const denominator = 2 * truePositive + falsePositive + falseNegative;
  // A class never predicted and never present scores 1: nothing was wrong about it.
  return denominator === 0 ? 1 : (2 * truePositive) / denominator;
}

/** Accuracy and macro-F1 of single-label predictions (class indices). */
export function singleLabelScores(
  truth: ArrayLike<number>,
  predicted: ArrayLike<number>,
  classes: number,
): { accuracy: number; macroF1: number } {
  const tp = new Float64Array(classes);
  const fp = new Float64Array(classes);
  const fn = new Float64Array(classes);
  let correct = 0;
  for (let i = 0; i < truth.length; i++) {
    if (truth[i] === predicted[i]) {
      correct++;
      tp[truth[i]]++;
    } else {
      fp[predicted[i]]++;
      fn[truth[i]]++;
    }
  }
  let sum = 0;
  for (let c = 0; c < classes; c++) sum += f1(tp[c], fp[c], fn[c]);
  return { accuracy: correct / truth.length, macroF1: sum / classes };
}

/** Accuracy (exact label sets) and macro-F1 over labels of multi-label predictions (n x L, 0/1). */
export function multiLabelScores(truth: Uint8Array, predicted: Uint8Array, labels: number): { accuracy: number; macroF1: number } {
  const n = truth.length / labels;
  let exact = 0;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    let same = true;
    for (let l = 0; l < labels; l++) if (truth[i * labels + l] !== predicted[i * labels + l]) same = false;
    if (same) exact++;
  }
  for (let l = 0; l < labels; l++) {
    let tp = 0;
    let fp = 0;
    let fn = 0;
    for (let i = 0; i < n; i++) {
      const t = truth[i * labels + l];
      const p = predicted[i * labels + l];
      if (t && p) tp++;
      else if (p) fp++;
      else if (t) fn++;
    }
    sum += f1(tp, fp, fn);
  }
  return { accuracy: exact / n, macroF1: sum / labels };
}

/**
 * Runs `fitAndPredict(trainRows, testRows)` once per fold and scores the held-out predictions
 * together (pooled over folds, as scikit-learn's cross_val_predict does). Single-label: the
 * callback returns a class index per test row.
 *
 * @example
 * ```ts
 * const { fold, folds } = stratifiedFolds(labels, 2);
 * crossValidate(labels, 2, fold, folds, (train, test) => fitAndPredictBinary(x, labels, d, train, test));
 * // { accuracy: 0.85, macroF1: 0.849..., folds: 5 }
 * ```
 */
export function crossValidate(
  y: ArrayLike<number>,
  classes: number,
  fold: Int32Array,
  folds: number,
  fitAndPredict: (train: Int32Array, test: Int32Array) => ArrayLike<number>,
): CrossValidation {
  const predicted = new Int32Array(y.length);
  for (let f = 0; f < folds; f++) {
    const train: number[] = [];
    const test: number[] = [];
    for (let i = 0; i < y.length; i++) (fold[i] === f ? test : train).push(i);
    const out = fitAndPredict(Int32Array.from(train), Int32Array.from(test));
    test.forEach((row, r) => (predicted[row] = out[r]));
  }
  return { ...singleLabelScores(y, predicted, classes), folds };
}
