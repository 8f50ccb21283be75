// Which texts a teacher labels next when the budget buys fewer labels than there are texts
// (uncertainty sampling). A small head is fitted on the rows labelled so far, with the same solvers the
// classifier's head uses (logistic.ts, softmax.ts), over the base encoder's embeddings of every text;
// the unlabelled rows it is least sure of go first:
//   binary:      |P(true) - 0.5| smallest;
//   multi-class: the smallest margin between the two most probable classes;
//   multi-label: the label whose P is closest to 0.5.
// Ties go to the lower index, so the same inputs give the same picks. A batch of near-duplicates would
// spend the budget on one question asked many times, so a candidate whose cosine to a row already
// chosen in this call exceeds kDuplicateCosine is passed over; only once every distinct candidate is
// taken are the passed-over ones used (in the same order), so a call returns min(count, unlabelled)
// rows. The first round, with nothing labelled yet, is a seeded random draw (chooseSeedTexts).
import type { TaskType } from '../contract/train-request.js';
import { seededRandom } from '../random.js';
import type { TeacherLabel } from '../teacher/protocol.js';
import { takeRows } from './cross-validate.js';
import { fitLogisticRegression, sigmoid } from './logistic.js';
import { fitSoftmaxRegression } from './softmax.js';

/** Above this cosine a candidate counts as a near-duplicate of a row already chosen in the call. */
export const kDuplicateCosine = 0.95;

/** The task as the teacher is asked it: binary: [label_text]; multi-class / multi-label: the labels. */
export interface UncertaintyTask {
  taskType: TaskType;
  labels: readonly string[];
}

/** A text labelled so far (by the teacher or a human): its row in the embeddings, and its label. */
export interface LabelledRow {
  index: number;
  label: TeacherLabel;
}

export interface UncertainTextsRequest {
  /** The base encoder's embeddings of every text, n x dim (L2-normalized as the encoder gives them; the guard divides by the norms anyway). */
  embeddings: Float32Array;
  dim: number;
  /** At least one row; their indices are never chosen. */
  labelled: readonly LabelledRow[];
  /** Rows never to choose either, without a label: texts the teacher was asked and refused. */
  exclude?: readonly number[];
  task: UncertaintyTask;
  /** How many unlabelled rows to return (fewer when fewer are left). */
  count: number;
  /** The head's inverse regularization strength, as train()'s head (default 1). */
  C?: number;
}

/** The targets the head is fitted on: a class index per labelled row, or a 0/1 row of every label. */
type Targets = { kind: 'classes'; classes: Int32Array; count: number } | { kind: 'label-sets'; sets: Uint8Array; count: number };

function targetsOf(labelled: readonly LabelledRow[], task: UncertaintyTask): Targets {
  const { taskType, labels } = task;
  const where = (r: number) => `labelled[${r}].label`;
  if (taskType === 'binary-classification') {
    return {
      kind: 'classes',
      count: 2,
      classes: Int32Array.from(labelled, ({ label }, r) => {
        if (typeof label !== 'boolean') throw new TypeError(`${where(r)} must be a boolean for a binary task`);
        return label ? 1 : 0;
      }),
    };
  }
  const classOf = (label: unknown, r: number) => {
    const k = typeof label === 'string' ? labels.indexOf(label) : -1;
    if (k < 0) throw new RangeError(`${where(r)} must be one of the task's labels (got ${JSON.stringify(label)})`);
    return k;
  };
  if (taskType === 'multi-class-classification') {
    return { kind: 'classes', count: labels.length, classes: Int32Array.from(labelled, ({ label }, r) => classOf(label, r)) };
  }
  const sets = new Uint8Array(labelled.length * labels.length);
  labelled.forEach(({ label }, r) => {
    if (!Array.isArray(label)) throw new TypeError(`${where(r)} must be an array of labels for a multi-label task`);
    for (const one of label) sets[r * labels.length + classOf(one, r)] = 1;
  });
  return { kind: 'label-sets', sets, count: labels.length };
}

/** The head's scores z = W x + b of every row of `x` (n x dim), `heads` rows each. */
function logitsOf(x: Float32Array, dim: number, weights: Float64Array, biases: Float64Array): Float64Array {
  const n = x.length / dim;
  const heads = biases.length;
  const z = new Float64Array(n * heads);
  for (let i = 0; i < n; i++)
    for (let k = 0; k < heads; k++) {
      let s = biases[k]!;
      for (let j = 0; j < dim; j++) s += weights[k * dim + j]! * x[i * dim + j]!;
      z[i * heads + k] = s;
    }
  return z;
}

/**
 * How sure the head fitted on `labelled` is of every row, lower = less sure (binary: |p - 0.5|;
 * multi-class: top-two margin; multi-label: the smallest |p - 0.5| over the labels).
 */
function certainties(request: UncertainTextsRequest): Float64Array {
  const { embeddings, dim, labelled, task } = request;
  const C = request.C ?? 1;
  const targets = targetsOf(labelled, task);
  const x = takeRows(
    embeddings,
    dim,
    labelled.map((row) => row.index),
  );
  const n = embeddings.length / dim;
  if (targets.kind === 'classes' && targets.count === 2) {
    const fit = fitLogisticRegression(x, targets.classes, dim, { C });
    const z = logitsOf(embeddings, dim, fit.weights, Float64Array.of(fit.bias));
    return Float64Array.from(z, (zi) => Math.abs(sigmoid(zi) - 0.5));
  }
  if (targets.kind === 'classes') {
    const fit = fitSoftmaxRegression(x, targets.classes, dim, targets.count, { C });
    const z = logitsOf(embeddings, dim, fit.weights, fit.biases);
    const K = targets.count;
    return Float64Array.from({ length: n }, (_, i) => {
      // The margin of the probabilities is the same whatever shift the logits get: subtract the top one.
      let top = -Infinity;
      for (let k = 0; k < K; k++) top = Math.max(top, z[i * K + k]!);
      let sum = 0;
      let first = 0;
      let second = 0;
      for (let k = 0; k < K; k++) {
        const e = Math.exp(z[i * K + k]! - top);
        sum += e;
        if (e > first) [first, second] = [e, first];
        else if (e > second) second = e;
      }
      return (first - second) / sum;
    });
  }
  // One-vs-rest, each label's logistic regression on its own, as the multi-label head is fitted.
  const L = targets.count;
  const weights = new Float64Array(L * dim);
  const biases = new Float64Array(L);
  for (let l = 0; l < L; l++) {
    const column = Uint8Array.from(labelled, (_, r) => targets.sets[r * L + l]!);
    const fit = fitLogisticRegression(x, column, dim, { C });
    weights.set(fit.weights, l * dim);
    biases[l] = fit.bias;
  }
  const z = logitsOf(embeddings, dim, weights, biases);
  return Float64Array.from({ length: n }, (_, i) => {
    let least = Infinity;
    for (let l = 0; l < L; l++) least = Math.min(least, Math.abs(sigmoid(z[i * L + l]!) - 0.5));
    return least;
  });
}

/** Rows a and b's cosine; the norms are the caller's, so rows that are not quite unit length are read right too. */
function cosine(x: Float32Array, dim: number, norms: Float64Array, a: number, b: number): number {
  let s = 0;
  for (let j = 0; j < dim; j++) s += x[a * dim + j]! * x[b * dim + j]!;
  return s / (norms[a]! * norms[b]! || 1);
}

function checkShape(embeddings: Float32Array, dim: number): number {
  if (!Number.isInteger(dim) || dim < 1) throw new RangeError('dim must be a positive integer');
  if (embeddings.length % dim !== 0) throw new RangeError(`embeddings must hold n * dim values (got ${embeddings.length} for dim ${dim})`);
  return embeddings.length / dim;
}

/**
 * The `count` unlabelled rows the head fitted on the labelled rows is least sure of, least sure first,
 * near-duplicates of a row already chosen (cosine > 0.95) passed over while distinct ones remain.
 *
 * @example
 * ```ts
 * // Labelled: +x is true, -x is false. Unlabelled: (0.1, 1) and (0.9, 0.44) (rows 2 and 3, normalized).
 * const embeddings = new Float32Array([1, 0, -1, 0, 0.0995, 0.995, 0.898, 0.44]);
 * chooseUncertainTexts({
 *   embeddings, dim: 2, count: 1,
 *   labelled: [{ index: 0, label: true }, { index: 1, label: false }],
 *   task: { taskType: 'binary-classification', labels: ['positive'] },
 * }); // [2]: the row nearest the boundary x = 0
 * ```
 */
export function chooseUncertainTexts(request: UncertainTextsRequest): number[] {
  const { embeddings, dim, labelled, count } = request;
  const n = checkShape(embeddings, dim);
  if (!Number.isInteger(count) || count < 0) throw new RangeError('count must be a non-negative integer');
  if (labelled.length === 0) throw new RangeError('labelled must hold at least one row (the first round is chooseSeedTexts)');
  const taken = new Uint8Array(n);
  labelled.forEach(({ index }, r) => {
    if (!Number.isInteger(index) || index < 0 || index >= n) throw new RangeError(`labelled[${r}].index must be a row in [0, ${n})`);
    if (taken[index]) throw new RangeError(`labelled[${r}].index ${index} is labelled twice`);
    taken[index] = 1;
  });
  for (const index of request.exclude ?? []) if (Number.isInteger(index) && index >= 0 && index < n) taken[index] = 1;
  if (count === 0) return [];
  const sure = certainties(request);
  const order = Array.from({ length: n }, (_, i) => i)
    .filter((i) => !taken[i])
    .sort((a, b) => sure[a]! - sure[b]! || a - b);
  const norms = Float64Array.from({ length: n }, (_, i) => Math.hypot(...embeddings.subarray(i * dim, (i + 1) * dim)));
  const chosen: number[] = [];
  const passedOver: number[] = [];
  for (const i of order) {
    if (chosen.length === count) break;
    if (chosen.some((c) => cosine(embeddings, dim, norms, c, i) > kDuplicateCosine)) passedOver.push(i);
    else chosen.push(i);
  }
  // Every distinct candidate is taken: the near-duplicates fill the rest, least sure first.
  return chosen.concat(passedOver.slice(0, count - chosen.length));
}

/**
 * The first round's texts, before anything is labelled: `count` distinct rows of `n` drawn at random
 * with `seed` (src/random.ts), in ascending order; all of them when `count >= n`.
 *
 * @example
 * ```ts
 * chooseSeedTexts(10, 3, 42); // [5, 6, 8]: the same three on every machine
 * ```
 */
export function chooseSeedTexts(n: number, count: number, seed: number): number[] {
  if (!Number.isInteger(n) || n < 0) throw new RangeError('n must be a non-negative integer');
  if (!Number.isInteger(count) || count < 0) throw new RangeError('count must be a non-negative integer');
  const order = Array.from({ length: n }, (_, i) => i);
  const take = Math.min(count, n);
  const random = seededRandom(seed);
  // The first `take` steps of a Fisher-Yates shuffle: a uniform draw without replacement.
  for (let i = 0; i < take; i++) {
    const j = i + Math.floor(random() * (n - i));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order.slice(0, take).sort((a, b) => a - b);
}

/**
 * Texts of the seeded random round that {@link selectByUncertainty} starts with, and of each later round, unless told
 * otherwise. Measured with the teacher bench's select-head part (docs/teacher.md): with a 10% noisy teacher and a
 * budget of 100, small rounds after a 20-text start gained the most over a random sample (first/round 20/10: +2.6
 * points over the four tasks; 20/20: +1.8; 50/10: +1.6; 10/10: +1.8).
 */
export const kDefaultFirstRound = 20;
export const kDefaultRoundSize = 10;

export interface SelectionRequest {
  /** The base encoder's embeddings of every text, n x dim (L2-normalized as the encoder gives them; the guard divides by the norms anyway). */
  embeddings: Float32Array;
  dim: number;
  task: UncertaintyTask;
  /** Texts sent to the teacher at most, answered or not (a refused text is paid for too). */
  budget: number;
  /** Seeds the first round's random draw. */
  seed: number;
  /** Texts of the random first round (default 20), while nothing is labelled. */
  firstRound?: number;
  /** Texts per later round (default 10, one call of the teacher's default size): the head is fitted again between rounds. */
  roundSize?: number;
  /** Rows labelled already (a person's labels, or the teacher's bought before a restart); not counted in the budget. */
  labelled?: readonly LabelledRow[];
  /** Rows sent already without a label; never sent again. */
  exclude?: readonly number[];
  /** Asks the teacher for these rows: one label each, in order, or null where it gave none. */
  label(indices: number[]): Promise<(TeacherLabel | null)[]>;
}

/**
 * Uncertainty sampling in rounds: while the budget lasts, the rows the head fitted on the labels so far is least
 * sure of ({@link chooseUncertainTexts}), `roundSize` at a time; a seeded random round of `firstRound` first while
 * nothing is labelled. Resolves to every labelled row (those given first, then the new ones in the order asked) and the
 * rows asked that got no label.
 *
 * @example
 * ```ts
 * const { labelled, unanswered } = await selectByUncertainty({
 *   embeddings, dim: 384, budget: 100, seed: 42, task: { taskType: 'binary-classification', labels: ['billing'] },
 *   label: async (rows) => askTheTeacher(rows.map((row) => texts[row])),
 * });
 * labelled.length + unanswered.length; // 100: the budget, spent in a random round of 20, then 8 rounds of 10
 * ```
 */
export async function selectByUncertainty(request: SelectionRequest): Promise<{ labelled: LabelledRow[]; unanswered: number[] }> {
  const { embeddings, dim, task, budget, seed } = request;
  const n = checkShape(embeddings, dim);
  const roundSize = request.roundSize ?? kDefaultRoundSize;
  const firstRound = request.firstRound ?? kDefaultFirstRound;
  if (!Number.isInteger(budget) || budget < 0) throw new RangeError('budget must be a non-negative integer');
  if (!Number.isInteger(roundSize) || roundSize < 1) throw new RangeError('roundSize must be a positive integer');
  if (!Number.isInteger(firstRound) || firstRound < 1) throw new RangeError('firstRound must be a positive integer');
  const labelled = [...(request.labelled ?? [])];
  const unanswered = [...(request.exclude ?? [])];
  const asked = new Set([...labelled.map((row) => row.index), ...unanswered]);
  let spent = 0;
  while (spent < budget && asked.size < n) {
    const count = Math.min(labelled.length === 0 ? firstRound : roundSize, budget - spent);
    let rows: number[];
    if (labelled.length === 0) {
      // Nothing to fit a head on yet (or every answer so far was refused): a seeded draw among the rows not asked.
      const left = Array.from({ length: n }, (_, i) => i).filter((i) => !asked.has(i));
      rows = chooseSeedTexts(left.length, count, seed + spent).map((k) => left[k]!);
    } else {
      rows = chooseUncertainTexts({ embeddings, dim, labelled, exclude: unanswered, task, count });
    }
    if (rows.length === 0) break;
    const labels = await request.label(rows);
    if (labels.length !== rows.length) throw new RangeError(`label() must answer ${rows.length} rows (got ${labels.length})`);
    rows.forEach((index, k) => {
      asked.add(index);
      const label = labels[k];
      if (label === null || label === undefined) unanswered.push(index);
      else labelled.push({ index, label });
    });
    spent += rows.length;
  }
  return { labelled, unanswered };
}
