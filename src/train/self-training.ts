// Self-training on unlabelled texts: the head fitted on the examples labels the texts the user has but
// did not label; the ones it is surest of, per class in the examples' class shares, join the examples
// as ordinary rows and the head is fitted again. A confident pseudo-label on a text near the examples
// adds little; the gain comes from texts that extend a class along directions the examples missed.
// Measured in docs/benchmark-history.md ("Beyond SetFit", unlabelled texts). Single-label heads only (binary
// and multi-class): a multi-label text has no one class to be sure of.
import type { ExampleTargets, LabelWordsLever, SelfTrainingOptions } from '../pool/tasks.js';

export type { SelfTrainingOptions };

/**
 * What train() does with a request's `unlabeled` texts: pseudo-label the half its head is surest of, once.
 * Half won on the accuracy bench's draws over 5 % to all of them and over three rounds (docs/benchmark-history.md).
 */
export const kSelfTraining: Readonly<SelfTrainingOptions> = Object.freeze({ share: 0.5, rounds: 1 });

/**
 * The label words train() adds when a request sends unlabelled texts and `options.labelWords` is not given:
 * with them self-training gained +1.73 points over SetFit fine-tuned instead of +1.55, and its estimate came
 * within 7.9 points of held-out accuracy instead of 10.7 (docs/benchmark-history.md, "Unlabelled texts").
 */
export const kSelfTrainingLabelWords: Readonly<LabelWordsLever> = Object.freeze({ kind: 'examples', weight: 2 });

/** A fitted single-label head: rows x dim weights (binary: one row, P(true)) and a bias per row. */
export interface SingleLabelHead {
  weights: ArrayLike<number>;
  biases: ArrayLike<number>;
}

/** Each row's class probabilities (rows x classes): binary heads give [1 - p, p], softmax heads their softmax. */
export function classProbabilities(head: SingleLabelHead, x: ArrayLike<number>, dim: number): Float64Array {
  const outputs = head.biases.length;
  const classes = outputs === 1 ? 2 : outputs;
  const rows = x.length / dim;
  const out = new Float64Array(rows * classes);
  const z = new Float64Array(outputs);
  for (let i = 0; i < rows; i++) {
    for (let k = 0; k < outputs; k++) {
      let s = head.biases[k];
      for (let j = 0; j < dim; j++) s += head.weights[k * dim + j] * x[i * dim + j];
      z[k] = s;
    }
    if (outputs === 1) {
      const p = 1 / (1 + Math.exp(-z[0]));
      out[i * 2] = 1 - p;
      out[i * 2 + 1] = p;
      continue;
    }
    let top = -Infinity;
    for (let k = 0; k < outputs; k++) top = Math.max(top, z[k]);
    let sum = 0;
    for (let k = 0; k < outputs; k++) sum += Math.exp(z[k] - top);
    for (let k = 0; k < outputs; k++) out[i * classes + k] = Math.exp(z[k] - top) / sum;
  }
  return out;
}

/**
 * Pseudo-labels from `probabilities` (rows x classes): for each class k, among the rows whose most
 * probable class is k, the `round(share x rows x prior_k)` with the highest P(k). `priors` are the
 * examples' class shares, so a draw of 10 + 10 pseudo-labels both sides evenly even when the head leans.
 *
 * @example
 * ```ts
 * const p = Float64Array.of(0.9, 0.1, 0.2, 0.8, 0.6, 0.4, 0.45, 0.55);
 * pseudoLabels(p, 2, [0.5, 0.5], 0.5); // { rows: Int32Array [0, 1], classes: Int32Array [0, 1] }
 * ```
 */
export function pseudoLabels(
  probabilities: Float64Array,
  classes: number,
  priors: ArrayLike<number>,
  share: number,
): { rows: Int32Array; classes: Int32Array } {
  const rows = probabilities.length / classes;
  const byClass: number[][] = Array.from({ length: classes }, () => []);
  for (let i = 0; i < rows; i++) {
    let best = 0;
    for (let k = 1; k < classes; k++) if (probabilities[i * classes + k] > probabilities[i * classes + best]) best = k;
    byClass[best].push(i);
  }
  const chosenRows: number[] = [];
  const chosenClasses: number[] = [];
  byClass.forEach((members, k) => {
    const quota = Math.round(share * rows * priors[k]);
    members.sort((a, b) => probabilities[b * classes + k] - probabilities[a * classes + k] || a - b);
    for (const i of members.slice(0, quota)) {
      chosenRows.push(i);
      chosenClasses.push(k);
    }
  });
  return { rows: Int32Array.from(chosenRows), classes: Int32Array.from(chosenClasses) };
}

/** The examples' class shares. */
export function classPriors(targets: ExampleTargets & { kind: 'classes' }): Float64Array {
  const priors = new Float64Array(targets.count);
  for (const k of targets.classes) priors[k] += 1 / targets.classes.length;
  return priors;
}

/** The examples' rows and targets followed by the pseudo-labelled unlabelled rows. */
export function withPseudoLabels(
  x: ArrayLike<number>,
  targets: ExampleTargets & { kind: 'classes' },
  unlabeled: Float32Array,
  dim: number,
  pseudo: { rows: Int32Array; classes: Int32Array },
): { x: Float64Array; targets: ExampleTargets } {
  const n = targets.classes.length;
  const out = new Float64Array((n + pseudo.rows.length) * dim);
  for (let i = 0; i < n * dim; i++) out[i] = x[i];
  pseudo.rows.forEach((row, r) => out.set(unlabeled.subarray(row * dim, (row + 1) * dim), (n + r) * dim));
  const classes = new Int32Array(n + pseudo.rows.length);
  classes.set(targets.classes);
  classes.set(pseudo.classes, n);
  return { x: out, targets: { kind: 'classes', classes, count: targets.count } };
}

/**
 * Self-training with any head fitter: fit on the examples, pseudo-label `unlabeled` (m x dim), refit on
 * both, `rounds` times. Returns the last head and the pseudo-labels it was fitted with.
 */
export function selfTrain<H extends SingleLabelHead>(
  fit: (x: ArrayLike<number>, targets: ExampleTargets) => H,
  x: ArrayLike<number>,
  targets: ExampleTargets & { kind: 'classes' },
  unlabeled: Float32Array,
  dim: number,
  options: SelfTrainingOptions,
): { head: H; pseudo: { rows: Int32Array; classes: Int32Array } } {
  const priors = classPriors(targets);
  let head = fit(x, targets);
  let pseudo: { rows: Int32Array; classes: Int32Array } = { rows: new Int32Array(0), classes: new Int32Array(0) };
  for (let round = 0; round < options.rounds; round++) {
    pseudo = pseudoLabels(classProbabilities(head, unlabeled, dim), targets.count, priors, options.share);
    const joined = withPseudoLabels(x, targets, unlabeled, dim, pseudo);
    head = fit(joined.x, joined.targets);
  }
  return { head, pseudo };
}
