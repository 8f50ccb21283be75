// The label's own words as a prior for the head. Every request names its classes (`labels`) or what
// `label: true` means (`label_text`); put into the zero-shot templates and embedded by the same body as
// the examples, those sentences say where each class lies before any example does. Two ways to use
// them, measured in docs/benchmark-history.md ("Accuracy", "The label's own words"):
// - `examples`: the template sentences join the examples, weighted (`weight` = one class's templates
//   together count as that many examples);
// - `direction`: each class's mean template embedding becomes an extra feature x . p_k, scaled up so
//   the L2 penalty barely holds its coefficient back, then folded back into the head (w += s c_k p_k):
//   the head keeps its shape, and moving along the label's direction is nearly free.
import type { ExampleTargets, LabelWordsLever } from '../pool/tasks.js';
import { targetCount } from './pairs.js';
import { binaryZeroShot, classZeroShot, labelSetZeroShot } from './zero-shot.js';

// How the head uses the label words: defined with the fit task that carries it.
export type { LabelWordsLever };

/**
 * What train() does without `options.labelWords` (and without unlabelled texts, which bring the label words
 * in: self-training.ts): the examples alone, SetFit's head. The lever that won
 * on the accuracy bench is `{ kind: 'examples', weight: 2 }` (docs/benchmark-history.md, "The label's own
 * words"); this is the one constant to flip once every test's expected figures are measured again with it.
 */
export const kDefaultLabelWords: LabelWordsLever = Object.freeze({ kind: 'none' });

/** Checks `options.labelWords` as train() takes it. */
export function checkLabelWordsLever(value: unknown, name: string): LabelWordsLever {
  const lever = value as LabelWordsLever;
  if (typeof value !== 'object' || value === null) throw new TypeError(`${name} must be an object`);
  if (lever.kind === 'none') return lever;
  if (lever.kind === 'examples') {
    if (typeof lever.weight !== 'number' || !(lever.weight > 0) || !Number.isFinite(lever.weight))
      throw new RangeError(`${name}.weight must be a positive number`);
    return lever;
  }
  if (lever.kind === 'direction') {
    if (typeof lever.scale !== 'number' || !(lever.scale > 0) || !Number.isFinite(lever.scale))
      throw new RangeError(`${name}.scale must be a positive number`);
    return lever;
  }
  throw new TypeError(`${name}.kind must be 'none', 'examples' or 'direction'`);
}

/** The label words embedded by the model's body: m template sentences (m x dim) and what each stands for. */
export interface LabelWords {
  embeddings: Float32Array;
  targets: ExampleTargets;
}

/**
 * The template sentences of a request's label words and their targets, as the head's targets are
 * built: binary from `label_text` (true) and its negation (false); multi-class and multi-label from
 * the label names in head order.
 *
 * @example
 * ```ts
 * labelWordTexts('binary-classification', 'positive').texts[0]; // 'This sentence is about positive.'
 * labelWordTexts('multi-class-classification', ['amazon', 'imdb', 'yelp']).targets.classes.length; // 18
 * ```
 */
export function labelWordTexts(
  taskType: 'binary-classification' | 'multi-class-classification' | 'multi-label-classification',
  names: string | readonly string[],
): { texts: string[]; targets: ExampleTargets } {
  if (taskType === 'binary-classification') {
    const examples = binaryZeroShot(names as string);
    return {
      texts: examples.map((e) => e.text),
      targets: { kind: 'classes', classes: Int32Array.from(examples, (e) => (e.label ? 1 : 0)), count: 2 },
    };
  }
  const labels = names as readonly string[];
  const index = new Map(labels.map((label, k) => [label, k]));
  if (taskType === 'multi-class-classification') {
    const examples = classZeroShot(labels);
    return {
      texts: examples.map((e) => e.text),
      targets: { kind: 'classes', classes: Int32Array.from(examples, (e) => index.get(e.label)!), count: labels.length },
    };
  }
  const examples = labelSetZeroShot(labels);
  const sets = new Uint8Array(examples.length * labels.length);
  examples.forEach((e, i) => (sets[i * labels.length + index.get(e.labels[0])!] = 1));
  return { texts: examples.map((e) => e.text), targets: { kind: 'label-sets', sets, count: labels.length } };
}

/** Rows of `a` then rows of `b`, as float64. */
function stack(a: ArrayLike<number>, b: ArrayLike<number>): Float64Array {
  const out = new Float64Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function concatTargets(a: ExampleTargets, b: ExampleTargets): ExampleTargets {
  if (a.kind === 'classes' && b.kind === 'classes') {
    const classes = new Int32Array(a.classes.length + b.classes.length);
    classes.set(a.classes);
    classes.set(b.classes, a.classes.length);
    return { kind: 'classes', classes, count: a.count };
  }
  if (a.kind === 'label-sets' && b.kind === 'label-sets') {
    const sets = new Uint8Array(a.sets.length + b.sets.length);
    sets.set(a.sets);
    sets.set(b.sets, a.sets.length);
    return { kind: 'label-sets', sets, count: a.count };
  }
  throw new TypeError('label words and examples must have the same kind of targets');
}

/** Rows of each class (or label) among the label words: the templates per class. */
function rowsPerClass(words: LabelWords): Float64Array {
  const counts = new Float64Array(words.targets.count);
  if (words.targets.kind === 'classes') for (const k of words.targets.classes) counts[k]++;
  else words.targets.sets.forEach((flag, i) => (counts[i % words.targets.count] += flag));
  return counts;
}

/**
 * Examples plus the label words as weighted rows: each template row weighs `weight / templates of
 * its class`, so one class's templates together count as `weight` examples. `baseWeights` (class
 * balancing) apply to the examples' rows.
 */
export function withLabelWordExamples(
  x: ArrayLike<number>,
  targets: ExampleTargets,
  words: LabelWords,
  weight: number,
  baseWeights: ArrayLike<number> | undefined,
): { x: Float64Array; targets: ExampleTargets; sampleWeights: Float64Array } {
  const n = targetCount(targets);
  const m = targetCount(words.targets);
  const perClass = rowsPerClass(words);
  const sampleWeights = new Float64Array(n + m);
  for (let i = 0; i < n; i++) sampleWeights[i] = baseWeights ? baseWeights[i] : 1;
  for (let r = 0; r < m; r++) {
    const k = words.targets.kind === 'classes' ? words.targets.classes[r] : words.targets.sets.subarray(r * words.targets.count).indexOf(1);
    sampleWeights[n + r] = weight / perClass[k];
  }
  return { x: stack(x, words.embeddings), targets: concatTargets(targets, words.targets), sampleWeights };
}

/**
 * The label directions p_k: binary, the mean true template minus the mean false one (one row);
 * otherwise each class's mean template (a row per class).
 */
export function labelDirections(words: LabelWords, dim: number): Float64Array {
  const { targets } = words;
  const m = targetCount(targets);
  const classes = targets.count;
  const means = new Float64Array(classes * dim);
  const counts = rowsPerClass(words);
  for (let r = 0; r < m; r++) {
    for (let k = 0; k < classes; k++) {
      const member = targets.kind === 'classes' ? targets.classes[r] === k : targets.sets[r * classes + k] === 1;
      if (!member) continue;
      for (let j = 0; j < dim; j++) means[k * dim + j] += words.embeddings[r * dim + j] / counts[k];
    }
  }
  if (targets.kind === 'classes' && classes === 2) {
    // Binary heads have one row: the direction from the false side's words to the true side's.
    return Float64Array.from({ length: dim }, (_, j) => means[dim + j] - means[j]);
  }
  return means;
}

/** `x` (n x dim) with `directions.length / dim` more columns, scale * (x . p_k). */
export function withDirectionFeatures(x: ArrayLike<number>, dim: number, directions: Float64Array, scale: number): Float64Array {
  const n = x.length / dim;
  const extra = directions.length / dim;
  const width = dim + extra;
  const out = new Float64Array(n * width);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < dim; j++) out[i * width + j] = x[i * dim + j];
    for (let k = 0; k < extra; k++) {
      let s = 0;
      for (let j = 0; j < dim; j++) s += x[i * dim + j] * directions[k * dim + j];
      out[i * width + dim + k] = scale * s;
    }
  }
  return out;
}

/** A head fitted on direction features, folded back to `dim` columns: w_r += scale * sum_k c_rk p_k. */
export function foldDirections(weights: Float64Array, rows: number, dim: number, directions: Float64Array, scale: number): Float64Array {
  const extra = directions.length / dim;
  const width = dim + extra;
  const out = new Float64Array(rows * dim);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < dim; j++) out[r * dim + j] = weights[r * width + j];
    for (let k = 0; k < extra; k++) {
      const c = scale * weights[r * width + dim + k];
      for (let j = 0; j < dim; j++) out[r * dim + j] += c * directions[k * dim + j];
    }
  }
  return out;
}
