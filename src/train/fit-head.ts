// Fitting a head on embeddings, and measuring it: the pool's fit task. One function per head kind
// fits, one predicts hard labels (for accuracy and F1), and `fitAndMeasure` runs the fit on every
// example, the k-fold cross-validation and the optional validation set. Pure float64 arithmetic.
import type { FitResult, FitTask, HeadKind, Scores } from '../pool/tasks.js';
import { crossValidate, multiLabelScores, singleLabelScores, stratifiedFolds, takeRows } from './cross-validate.js';
import type { CrossValidation } from './cross-validate.js';
import { fitLogisticRegression, sigmoid } from './logistic.js';
import type { ExampleTargets } from './pairs.js';
import { targetCount } from './pairs.js';
import { balancedWeights, fitSoftmaxRegression } from './softmax.js';
import { foldDirections, labelDirections, withDirectionFeatures, withLabelWordExamples } from './label-words.js';
import type { LabelWords, LabelWordsLever } from './label-words.js';
import { selfTrain } from './self-training.js';
import type { SelfTrainingOptions } from './self-training.js';

/** A fitted head: rows x dim weights and a bias per row, with how the solver ended. */
interface FittedHead {
  weights: Float64Array;
  biases: Float64Array;
  iterations: number;
  gradientNorm: number;
}

interface FitSettings {
  head: HeadKind;
  dim: number;
  C: number;
  balanced: boolean;
  /** The label words embedded by the same body, and how the head uses them (label-words.ts). */
  labelWords?: { words: LabelWords; lever: LabelWordsLever } | null;
  /** Unlabelled texts embedded by the same body, for self-training (self-training.ts). */
  unlabeled?: { embeddings: Float32Array; options: SelfTrainingOptions } | null;
}

/** The targets of examples `rows` only. */
function selectTargets(targets: ExampleTargets, rows: ArrayLike<number>): ExampleTargets {
  if (targets.kind === 'classes') {
    return { kind: 'classes', classes: Int32Array.from({ length: rows.length }, (_, r) => targets.classes[rows[r]]), count: targets.count };
  }
  const { sets, count } = targets;
  const out = new Uint8Array(rows.length * count);
  for (let r = 0; r < rows.length; r++) out.set(sets.subarray(rows[r] * count, (rows[r] + 1) * count), r * count);
  return { kind: 'label-sets', sets: out, count };
}

/** Label `label`'s column of a label-set matrix, 0/1 per example. */
function labelColumn(targets: ExampleTargets & { kind: 'label-sets' }, label: number): Uint8Array {
  const n = targets.sets.length / targets.count;
  return Uint8Array.from({ length: n }, (_, i) => targets.sets[i * targets.count + label]);
}

/** Multiplies per-row weights (or none: 1 each) by `more` row for row. */
function times(weights: ArrayLike<number> | undefined, more: ArrayLike<number>): Float64Array {
  return Float64Array.from(more, (w, i) => (weights ? weights[i] : 1) * w);
}

/** The head on the examples; with unlabelled texts (single-label heads), self-trained on them too. */
function fitHead(x: ArrayLike<number>, targets: ExampleTargets, settings: FitSettings): FittedHead {
  const { unlabeled } = settings;
  if (!unlabeled || targets.kind !== 'classes') return fitExamplesHead(x, targets, settings);
  const fit = (rows: ArrayLike<number>, rowTargets: ExampleTargets) => fitExamplesHead(rows, rowTargets, settings);
  return selfTrain(fit, x, targets, unlabeled.embeddings, settings.dim, unlabeled.options).head;
}

function fitExamplesHead(x: ArrayLike<number>, targets: ExampleTargets, settings: FitSettings): FittedHead {
  const { words, lever } = settings.labelWords ?? { words: null, lever: { kind: 'none' } as LabelWordsLever };
  if (words === null || lever.kind === 'none') return fitPlainHead(x, targets, settings, undefined);
  if (lever.kind === 'examples') {
    // Class balancing is the examples' (the templates are balanced by construction).
    const balancing = settings.balanced && targets.kind === 'classes' ? balancedWeights(targets.classes, targets.count) : undefined;
    const joined = withLabelWordExamples(x, targets, words, lever.weight, balancing);
    return fitPlainHead(
      joined.x,
      joined.targets,
      { ...settings, balanced: settings.balanced && targets.kind !== 'classes' },
      joined.sampleWeights,
    );
  }
  const directions = labelDirections(words, settings.dim);
  const wide = withDirectionFeatures(x, settings.dim, directions, lever.scale);
  const fit = fitPlainHead(wide, targets, { ...settings, dim: settings.dim + directions.length / settings.dim }, undefined);
  return { ...fit, weights: foldDirections(fit.weights, fit.biases.length, settings.dim, directions, lever.scale) };
}

/** The head on `x` alone; `sampleWeights`, when given, multiply any class balancing. */
function fitPlainHead(
  x: ArrayLike<number>,
  targets: ExampleTargets,
  settings: FitSettings,
  sampleWeights: ArrayLike<number> | undefined,
): FittedHead {
  const { dim, C, balanced } = settings;
  if (targets.kind === 'classes') {
    if (settings.head === 'logistic') {
      // Binary: exactly the fit binary models always had (no weights unless asked for).
      const weights = balanced ? times(sampleWeights, balancedWeights(targets.classes, 2)) : sampleWeights;
      const fit = fitLogisticRegression(x, targets.classes, dim, { C, ...(weights ? { sampleWeights: weights } : {}) });
      return { weights: fit.weights, biases: Float64Array.of(fit.bias), iterations: fit.iterations, gradientNorm: fit.gradientNorm };
    }
    const weights = balanced ? times(sampleWeights, balancedWeights(targets.classes, targets.count)) : sampleWeights;
    const fit = fitSoftmaxRegression(x, targets.classes, dim, targets.count, { C, sampleWeights: weights });
    return { weights: fit.weights, biases: fit.biases, iterations: fit.iterations, gradientNorm: fit.gradientNorm };
  }
  // One-vs-rest: each label's logistic regression on its own, balanced per label when asked.
  const labels = targets.count;
  const weights = new Float64Array(labels * dim);
  const biases = new Float64Array(labels);
  let iterations = 0;
  let gradientNorm = 0;
  for (let l = 0; l < labels; l++) {
    const y = labelColumn(targets, l);
    const rowWeights = balanced ? times(sampleWeights, balancedWeights(y, 2)) : sampleWeights;
    const fit = fitLogisticRegression(x, y, dim, { C, ...(rowWeights ? { sampleWeights: rowWeights } : {}) });
    weights.set(fit.weights, l * dim);
    biases[l] = fit.bias;
    iterations = Math.max(iterations, fit.iterations);
    gradientNorm = Math.max(gradientNorm, fit.gradientNorm);
  }
  return { weights, biases, iterations, gradientNorm };
}

/** Row r's scores z = W e + b (rows of the head) for example `row` of `x`. */
function logits(head: FittedHead, x: ArrayLike<number>, dim: number, row: number): Float64Array {
  const rows = head.biases.length;
  const z = new Float64Array(rows);
  for (let k = 0; k < rows; k++) {
    let s = head.biases[k];
    for (let j = 0; j < dim; j++) s += head.weights[k * dim + j] * x[row * dim + j];
    z[k] = s;
  }
  return z;
}

/**
 * Hard labels for examples `rows` of `x`: a class index each (binary: P(true) >= 0.5; softmax: the
 * most probable class), or for one-vs-rest a 0/1 row per example (P(label) >= 0.5).
 */
function predictTargets(
  head: FittedHead,
  kind: HeadKind,
  x: ArrayLike<number>,
  dim: number,
  rows: ArrayLike<number>,
): Int32Array | Uint8Array {
  if (kind === 'one-vs-rest') {
    const labels = head.biases.length;
    const out = new Uint8Array(rows.length * labels);
    for (let r = 0; r < rows.length; r++) {
      const z = logits(head, x, dim, rows[r]);
      for (let l = 0; l < labels; l++) out[r * labels + l] = sigmoid(z[l]) >= 0.5 ? 1 : 0;
    }
    return out;
  }
  return Int32Array.from({ length: rows.length }, (_, r) => {
    const z = logits(head, x, dim, rows[r]);
    if (kind === 'logistic') return sigmoid(z[0]) >= 0.5 ? 1 : 0;
    let best = 0;
    for (let k = 1; k < z.length; k++) if (z[k] > z[best]) best = k;
    return best;
  });
}

function score(targets: ExampleTargets, predicted: Int32Array | Uint8Array): Scores {
  if (targets.kind === 'classes') return singleLabelScores(targets.classes, predicted, targets.count);
  return multiLabelScores(targets.sets, predicted as Uint8Array, targets.count);
}

const allRows = (n: number) => Int32Array.from({ length: n }, (_, i) => i);

/**
 * Folds that keep each class's share (single label). For label sets, each example is dealt by its
 * rarest label (the one with fewest examples; examples without a label form a group of their own),
 * so every label is spread over the folds as evenly as its rarest carriers allow.
 */
function foldsFor(targets: ExampleTargets): { fold: Int32Array; folds: number } {
  if (targets.kind === 'classes') return stratifiedFolds(targets.classes, targets.count);
  const { sets, count } = targets;
  const n = sets.length / count;
  const carriers = new Float64Array(count);
  for (let i = 0; i < n; i++) for (let l = 0; l < count; l++) carriers[l] += sets[i * count + l];
  const group = Int32Array.from({ length: n }, (_, i) => {
    let rarest = count;
    for (let l = 0; l < count; l++) if (sets[i * count + l] && (rarest === count || carriers[l] < carriers[rarest])) rarest = l;
    return rarest;
  });
  return stratifiedFolds(group, count + 1);
}

/**
 * Each example's probabilities from the head of the fold that held it out, a row of `outputs` per example (binary:
 * P(true); softmax: each class's; one-vs-rest: each label's): what the evaluation report is built from when no
 * validation set was sent.
 */
function probabilityRows(head: FittedHead, kind: HeadKind, x: ArrayLike<number>, dim: number, rows: ArrayLike<number>): Float64Array {
  const outputs = head.biases.length;
  const out = new Float64Array(rows.length * outputs);
  for (let r = 0; r < rows.length; r++) {
    const z = logits(head, x, dim, rows[r]);
    if (kind !== 'softmax') {
      for (let k = 0; k < outputs; k++) out[r * outputs + k] = sigmoid(z[k]);
      continue;
    }
    const top = Math.max(...z);
    let sum = 0;
    for (let k = 0; k < outputs; k++) sum += Math.exp(z[k] - top);
    for (let k = 0; k < outputs; k++) out[r * outputs + k] = Math.exp(z[k] - top) / sum;
  }
  return out;
}

/** Cross-validation pooled over folds, for either kind of targets, with each example's out-of-fold probabilities. */
function crossValidateHead(
  x: Float32Array,
  targets: ExampleTargets,
  settings: FitSettings,
): { crossValidation: CrossValidation; outOfFold: Float64Array } {
  const { fold, folds } = foldsFor(targets);
  const n = targetCount(targets);
  const outputs = settings.head === 'logistic' ? 1 : targets.count;
  const outOfFold = new Float64Array(n * outputs);
  // The fold's head predicts its held-out rows: hard labels for the scores, probabilities for the report.
  const fitAndPredict = (train: Int32Array, test: Int32Array) => {
    const head = fitHead(takeRows(x, settings.dim, train), selectTargets(targets, train), settings);
    const probabilities = probabilityRows(head, settings.head, x, settings.dim, test);
    test.forEach((row, r) => outOfFold.set(probabilities.subarray(r * outputs, (r + 1) * outputs), row * outputs));
    return predictTargets(head, settings.head, x, settings.dim, test);
  };
  if (targets.kind === 'classes') {
    return { crossValidation: crossValidate(targets.classes, targets.count, fold, folds, fitAndPredict), outOfFold };
  }
  const predicted = new Uint8Array(targets.sets.length);
  for (let f = 0; f < folds; f++) {
    const train = allRows(n).filter((i) => fold[i] !== f);
    const test = allRows(n).filter((i) => fold[i] === f);
    const out = fitAndPredict(train, test);
    test.forEach((row, r) => predicted.set(out.subarray(r * targets.count, (r + 1) * targets.count), row * targets.count));
  }
  return { crossValidation: { ...multiLabelScores(targets.sets, predicted, targets.count), folds }, outOfFold };
}

/**
 * The fit task: the head on every example, its accuracy on them, its k-fold cross-validated
 * accuracy and macro-F1, and its scores on the validation examples when there are any.
 *
 * @example
 * ```ts
 * fitAndMeasure({ kind: 'fit', head: 'softmax', embeddings, targets: { kind: 'classes', classes, count: 3 },
 *   dim: 384, C: 1, balanced: false, validation: null, crossValidate: true });
 * // { weights: Float64Array(1152), biases: Float64Array(3), solver: 'lbfgs', trainAccuracy: 1,
 * //   crossValidation: { accuracy: 0.875, macroF1: 0.87, folds: 5 }, validation: null, ... }
 * ```
 */
export function fitAndMeasure(task: FitTask): FitResult {
  const { embeddings, targets, dim, head: kind } = task;
  const words = task.labelWords ?? null;
  const settings: FitSettings = {
    head: kind,
    dim,
    C: task.C,
    balanced: task.balanced,
    labelWords: words && { words: { embeddings: words.embeddings, targets: words.targets }, lever: words.lever },
    unlabeled: task.unlabeled ? { embeddings: task.unlabeled.embeddings, options: task.unlabeled.selfTraining } : null,
  };
  const head = fitHead(embeddings, targets, settings);
  const n = targetCount(targets);
  const trainScores = score(targets, predictTargets(head, kind, embeddings, dim, allRows(n)));
  const validation = task.validation
    ? score(
        task.validation.targets,
        predictTargets(head, kind, task.validation.embeddings, dim, allRows(targetCount(task.validation.targets))),
      )
    : null;
  const measured = task.crossValidate ? crossValidateHead(embeddings, targets, settings) : null;
  return {
    weights: head.weights,
    biases: head.biases,
    solver: kind === 'softmax' ? 'lbfgs' : 'newton-cholesky',
    iterations: head.iterations,
    gradientNorm: head.gradientNorm,
    trainAccuracy: trainScores.accuracy,
    crossValidation: measured?.crossValidation ?? null,
    outOfFold: measured?.outOfFold ?? null,
    validation,
  };
}
