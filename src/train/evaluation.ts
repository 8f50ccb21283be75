// The evaluation report of a classifier on labelled texts it did not train on: what a user reads before promoting a
// version. Pure arithmetic over the true labels and the model's probabilities; the caller gets those from a
// validation set. Precision of a label nothing was predicted as is 0 (scikit-learn's zero_division=0), and so is
// recall of a label no text has. The probabilities come from a validation set, or from the examples' own
// cross-validation (each example scored by the head of the fold that held it out).
import { type ExampleTargets, targetCount } from './pairs.js';

/** Thresholds of the binary precision/recall table: 0.05, 0.10, ..., 0.95. */
export const kThresholds: readonly number[] = Object.freeze(Array.from({ length: 19 }, (_, i) => Math.round((i + 1) * 5) / 100));
/** Equal-width probability bins of the reliability table. */
export const kCalibrationBins = 10;

export interface LabelScores {
  label: string;
  precision: number;
  recall: number;
  f1: number;
  /** Texts whose truth has the label. */
  support: number;
}

export interface Averages {
  precision: number;
  recall: number;
  f1: number;
}

export interface ThresholdRow extends Averages {
  threshold: number;
}

export interface ReliabilityBin {
  lower: number;
  upper: number;
  count: number;
  /** Mean predicted probability of the bin's texts; null for an empty bin. */
  mean_probability: number | null;
  /** Share of the bin's texts that are true; null for an empty bin. */
  fraction_true: number | null;
}

export interface EvaluationReport {
  examples: number;
  /** Class or label names; a binary model's are `true` then `false`. */
  labels: string[];
  accuracy: number;
  /**
   * Single-label: rows are the true class, columns the predicted one, in `labels` order. Multi-label: one row per
   * label, `[true negatives, false positives, false negatives, true positives]`.
   */
  confusion_matrix: number[][];
  per_label: LabelScores[];
  macro: Averages;
  micro: Averages;
  /** Multi-label: the share of (text, label) pairs predicted wrong. */
  hamming_loss?: number;
  /** Binary: precision, recall and F1 of `true` when a text is true at probability >= threshold. */
  thresholds?: ThresholdRow[];
  /** Binary: how far the probabilities are from the frequencies they claim. */
  calibration?: { ece: number; bins: ReliabilityBin[] };
}

const ratio = (a: number, b: number) => (b === 0 ? 0 : a / b);
const f1Of = (precision: number, recall: number) => ratio(2 * precision * recall, precision + recall);

function scoresOf(label: string, tp: number, fp: number, fn: number): LabelScores {
  const precision = ratio(tp, tp + fp);
  const recall = ratio(tp, tp + fn);
  return { label, precision, recall, f1: f1Of(precision, recall), support: tp + fn };
}

function averages(
  perLabel: readonly LabelScores[],
  counts: readonly { tp: number; fp: number; fn: number }[],
): { macro: Averages; micro: Averages } {
  const mean = (pick: (s: LabelScores) => number) => perLabel.reduce((sum, s) => sum + pick(s), 0) / perLabel.length;
  const total = counts.reduce((sum, c) => ({ tp: sum.tp + c.tp, fp: sum.fp + c.fp, fn: sum.fn + c.fn }), { tp: 0, fp: 0, fn: 0 });
  const micro = scoresOf('', total.tp, total.fp, total.fn);
  return {
    macro: { precision: mean((s) => s.precision), recall: mean((s) => s.recall), f1: mean((s) => s.f1) },
    micro: { precision: micro.precision, recall: micro.recall, f1: micro.f1 },
  };
}

/** Single-label report from each text's true and predicted class index. */
function singleLabel(labels: readonly string[], truth: readonly number[], predicted: readonly number[]): EvaluationReport {
  const matrix = labels.map(() => labels.map(() => 0));
  truth.forEach((t, i) => (matrix[t][predicted[i]] += 1));
  const counts = labels.map((_, c) => ({
    tp: matrix[c][c],
    fp: matrix.reduce((sum, row, r) => sum + (r === c ? 0 : row[c]), 0),
    fn: matrix[c].reduce((sum, n, p) => sum + (p === c ? 0 : n), 0),
  }));
  const perLabel = counts.map((c, i) => scoresOf(labels[i], c.tp, c.fp, c.fn));
  const correct = truth.filter((t, i) => t === predicted[i]).length;
  return {
    examples: truth.length,
    labels: [...labels],
    accuracy: ratio(correct, truth.length),
    confusion_matrix: matrix,
    per_label: perLabel,
    ...averages(perLabel, counts),
  };
}

/**
 * A binary model's report: `truth[i]` whether text i is true, `probability[i]` the model's P(true); a text is
 * predicted true at probability >= 0.5 (as predict labels it).
 *
 * @example
 * ```ts
 * evaluateBinary([true, true, false, false], [0.9, 0.4, 0.6, 0.1]).per_label[0];
 * // { label: 'true', precision: 0.5, recall: 0.5, f1: 0.5, support: 2 }
 * ```
 */
export function evaluateBinary(truth: readonly boolean[], probability: readonly number[]): EvaluationReport {
  const index = (positive: boolean) => (positive ? 0 : 1);
  const report = singleLabel(
    ['true', 'false'],
    truth.map(index),
    probability.map((p) => index(p >= 0.5)),
  );
  report.thresholds = kThresholds.map((threshold) => {
    let tp = 0;
    let fp = 0;
    let fn = 0;
    truth.forEach((t, i) => {
      const p = probability[i] >= threshold;
      if (p && t) tp += 1;
      else if (p) fp += 1;
      else if (t) fn += 1;
    });
    const { precision, recall, f1 } = scoresOf('true', tp, fp, fn);
    return { threshold, precision, recall, f1 };
  });
  report.calibration = calibration(truth, probability);
  return report;
}

/** Expected calibration error over equal-width bins (the last one closed at 1), and the reliability table. */
function calibration(truth: readonly boolean[], probability: readonly number[]): { ece: number; bins: ReliabilityBin[] } {
  const sums = Array.from({ length: kCalibrationBins }, () => ({ count: 0, probability: 0, positives: 0 }));
  probability.forEach((p, i) => {
    const bin = sums[Math.min(kCalibrationBins - 1, Math.floor(p * kCalibrationBins))];
    bin.count += 1;
    bin.probability += p;
    if (truth[i]) bin.positives += 1;
  });
  let ece = 0;
  const bins = sums.map((s, b) => {
    const mean = s.count === 0 ? null : s.probability / s.count;
    const fraction = s.count === 0 ? null : s.positives / s.count;
    if (mean !== null && fraction !== null) ece += (s.count / probability.length) * Math.abs(mean - fraction);
    return {
      lower: b / kCalibrationBins,
      upper: (b + 1) / kCalibrationBins,
      count: s.count,
      mean_probability: mean,
      fraction_true: fraction,
    };
  });
  return { ece, bins };
}

/** A multi-class model's report from each text's true and predicted class name. */
export function evaluateMultiClass(labels: readonly string[], truth: readonly string[], predicted: readonly string[]): EvaluationReport {
  const index = (name: string) => labels.indexOf(name);
  return singleLabel(labels, truth.map(index), predicted.map(index));
}

/** A multi-label model's report from each text's true and predicted label sets. */
export function evaluateMultiLabel(
  labels: readonly string[],
  truth: readonly string[][],
  predicted: readonly string[][],
): EvaluationReport {
  const counts = labels.map((label) => {
    const c = { tn: 0, fp: 0, fn: 0, tp: 0 };
    truth.forEach((t, i) => {
      const [isTrue, isPredicted] = [t.includes(label), predicted[i].includes(label)];
      if (isTrue && isPredicted) c.tp += 1;
      else if (isPredicted) c.fp += 1;
      else if (isTrue) c.fn += 1;
      else c.tn += 1;
    });
    return c;
  });
  const perLabel = counts.map((c, i) => scoresOf(labels[i], c.tp, c.fp, c.fn));
  const exact = truth.filter((t, i) => t.length === predicted[i].length && t.every((label) => predicted[i].includes(label))).length;
  const wrong = counts.reduce((sum, c) => sum + c.fp + c.fn, 0);
  return {
    examples: truth.length,
    labels: [...labels],
    accuracy: ratio(exact, truth.length),
    confusion_matrix: counts.map((c) => [c.tn, c.fp, c.fn, c.tp]),
    per_label: perLabel,
    ...averages(perLabel, counts),
    hamming_loss: ratio(wrong, truth.length * labels.length),
  };
}

/**
 * The report from probabilities of the examples' own cross-validation (`probabilities`: a row per example, as the
 * fit task's `outOfFold` holds them: binary P(true); multi-class each class's, the most probable one predicted;
 * multi-label each label's, predicted at >= 0.5). `labels`: a multi-class or multi-label model's names, null for binary.
 *
 * @example
 * ```ts
 * evaluateOutOfFold({ kind: 'classes', classes: Int32Array.of(1, 0), count: 2 }, null, Float64Array.of(0.8, 0.3)).accuracy; // 1
 * ```
 */
export function evaluateOutOfFold(
  targets: ExampleTargets,
  labels: readonly string[] | null,
  probabilities: Float64Array,
): EvaluationReport {
  const n = targetCount(targets);
  if (labels === null) {
    const classes = (targets as ExampleTargets & { kind: 'classes' }).classes;
    return evaluateBinary(
      Array.from(classes, (c) => c === 1),
      Array.from(probabilities),
    );
  }
  const k = labels.length;
  const row = (i: number) => probabilities.subarray(i * k, (i + 1) * k);
  if (targets.kind === 'classes') {
    const predicted = Array.from({ length: n }, (_, i) => {
      const p = row(i);
      let best = 0;
      for (let c = 1; c < k; c++) if (p[c] > p[best]) best = c;
      return labels[best];
    });
    return evaluateMultiClass(
      labels,
      Array.from(targets.classes, (c) => labels[c]),
      predicted,
    );
  }
  const setOf = (flags: ArrayLike<number>, isOn: (v: number) => boolean) => labels.filter((_, l) => isOn(flags[l]));
  return evaluateMultiLabel(
    labels,
    Array.from({ length: n }, (_, i) => setOf(targets.sets.subarray(i * k, (i + 1) * k), (v) => v === 1)),
    Array.from({ length: n }, (_, i) => setOf(row(i), (v) => v >= 0.5)),
  );
}
