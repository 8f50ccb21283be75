// SetFit's pairs for contrastive fine-tuning, and their packing into the
// batches the native trainer steps on.
import { SvcError } from '../errors.js';
import type { PairBatch } from '../native/trainer.js';
import { kDefaultSeed, seededRandom } from '../random.js';
import * as is from '../is.js';
import type { ExampleTargets } from '../pool/tasks.js';

/** Pairs per training step (SetFit's batch size). */
export const kBatchPairs = 16;

/** How many pairs {@link samplePairs} makes: one same-label and one other-label pair per example and round. */
export function pairCount(examples: number, iterations: number): number {
  return 2 * iterations * examples;
}

/** Training steps over `pairs` pairs, {@link kBatchPairs} a step (the last one may hold fewer). */
export function stepCount(pairs: number): number {
  return Math.ceil(pairs / kBatchPairs);
}

/**
 * The fine-tuning recipe (SetFit's defaults): AdamW at a peak learning rate of 2e-5 with weight
 * decay 0.01, linear warm-up over the first 10% of steps then linear decay to 0, dropout 0.1,
 * gradients clipped to a global L2 norm of 1.
 */
export const kFinetuneRecipe = Object.freeze({
  lr: 2e-5,
  weightDecay: 0.01,
  warmupRatio: 0.1,
  dropout: 0.1,
  maxGradNorm: 1,
});

/**
 * The recipe when a LoRA adapter trains instead of the whole encoder: the same schedule, decay,
 * dropout and clipping at a higher peak learning rate, 3e-4 (a few hundred thousand fresh
 * parameters learn at rates that would wreck a pretrained encoder's 22 million). Chosen on five
 * draws of the accuracy bench's tasks: 5e-4 left the 3-class task 2.2 points below full
 * fine-tuning, 3e-4 0.24 below, 1e-3 and 2e-3 lower still (docs/engine.md).
 */
export const kAdapterRecipe = Object.freeze({ ...kFinetuneRecipe, lr: 3e-4 });

/** Pairs over a set of examples: indices into the examples, and 1 (same label) or 0. */
export interface Pairs {
  readonly a: Int32Array;
  readonly b: Int32Array;
  readonly labels: Float32Array;
}

export interface PairOptions {
  /** Rounds over the examples; each adds one positive and one negative pair per example. Default 20. */
  iterations?: number;
  /** Seeds the choice and order of pairs. Default 42. */
  seed?: number;
}

/** Seeded Fisher-Yates shuffle in place. */
function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

// What each example is labelled with: defined with the pool's task messages that carry it.
export type { ExampleTargets };

/** Examples in `targets`. */
export function targetCount(targets: ExampleTargets): number {
  return targets.kind === 'classes' ? targets.classes.length : targets.sets.length / targets.count;
}

/**
 * Whether examples i and j make a positive (same) pair. One class each: the same class. Label sets:
 * SetFit's multi-label rule, the sets share at least one label; two examples without any label
 * count as the same too (the same, empty, set), so a text with no label learns from its like.
 */
export function samePair(targets: ExampleTargets): (i: number, j: number) => boolean {
  if (targets.kind === 'classes') {
    const { classes } = targets;
    return (i, j) => classes[i] === classes[j];
  }
  const { sets, count } = targets;
  return (i, j) => {
    let empty = true;
    for (let l = 0; l < count; l++) {
      const a = sets[i * count + l];
      if (a && sets[j * count + l]) return true;
      if (a || sets[j * count + l]) empty = false;
    }
    return empty;
  };
}

/**
 * SetFit's pairs (its `num_iterations` sampling): every distinct pair of examples {i, j}, i < j,
 * in a seeded random order, split into same-label pairs (target 1) and other-label pairs
 * (target 0). Each list is read round-robin until it gives `iterations x examples` pairs, so both
 * kinds are balanced and every distinct pair comes up about equally often; then all pairs are
 * shuffled. 20 examples and 20 iterations give 800 pairs: each of the 90 same-label pairs used 4
 * or 5 times, each of the 100 other-label pairs 4 times. (SetFit also pairs a text with itself;
 * encoded once in a packed batch such a pair has cosine 1 and teaches nothing, so it is left out.)
 *
 * @example
 * ```ts
 * const pairs = samplePairs([true, false, true, false], { iterations: 1, seed: 1 });
 * pairs.a.length; // 8
 * Array.from(pairs.labels).filter((y) => y === 1).length; // 4
 * ```
 */
export function samplePairs(labels: readonly (boolean | number)[], options: PairOptions = {}): Pairs {
  if (new Set(labels).size < 2) throw new RangeError('labels must hold at least two classes');
  return samplePairsWhere(labels.length, (i, j) => labels[i] === labels[j], options);
}

/**
 * {@link samplePairs} over any task's targets (see {@link samePair} for what makes a pair positive).
 * Throws `SvcError('invalid_request')` when the examples give no positive or no negative pair
 * (multi-label examples whose label sets all overlap, say): contrastive fine-tuning needs both.
 *
 * @example
 * ```ts
 * const sets = Uint8Array.of(1, 0, 0, 1, 1, 1, 0, 0); // {a}, {b}, {a, b}, {}
 * const pairs = sampleTargetPairs({ kind: 'label-sets', sets, count: 2 }, { iterations: 1 });
 * pairs.a.length; // 8: four pairs sharing a label, four sharing none
 * ```
 */
export function sampleTargetPairs(targets: ExampleTargets, options: PairOptions = {}): Pairs {
  return samplePairsWhere(targetCount(targets), samePair(targets), options);
}

function samplePairsWhere(n: number, same: (i: number, j: number) => boolean, options: PairOptions): Pairs {
  const iterations = options.iterations ?? 20;
  is.positiveInteger(iterations, 'options.iterations');
  const seed = is.nonNegativeInteger(options.seed ?? kDefaultSeed, 'options.seed');
  const random = seededRandom(seed);
  const distinct: [number, number][] = [];
  for (let i = 0; i < n; i += 1) for (let j = i + 1; j < n; j += 1) distinct.push([i, j]);
  shuffle(distinct, random);
  const sameList = distinct.filter(([i, j]) => same(i, j));
  const other = distinct.filter(([i, j]) => !same(i, j));
  if (sameList.length === 0 || other.length === 0) {
    throw new SvcError(
      'invalid_request',
      `fine-tuning needs two examples that share a label and two that share none (got ${sameList.length} and ${other.length} such pairs); train with finetune: false`,
      { param: 'examples' },
    );
  }
  const chosen: [number, number, number][] = [];
  for (let k = 0; k < iterations * n; k += 1) {
    const [i, j] = sameList[k % sameList.length]!;
    const [p, q] = other[k % other.length]!;
    chosen.push([i, j, 1], [p, q, 0]);
  }
  shuffle(chosen, random);
  return {
    a: Int32Array.from(chosen, (pair) => pair[0]),
    b: Int32Array.from(chosen, (pair) => pair[1]),
    labels: Float32Array.from(chosen, (pair) => pair[2]),
  };
}

/**
 * Packs pairs [start, start + size) into one trainer batch. Each distinct text is
 * encoded once however many of the batch's pairs use it, so a batch of 16 pairs
 * over 20 examples runs about 16 texts through the encoder instead of 32.
 *
 * @example
 * ```ts
 * const tokens = [Int32Array.of(101, 7592, 102), Int32Array.of(101, 2088, 102)];
 * const batch = packPairBatch(tokens, { a: Int32Array.of(0, 1), b: Int32Array.of(1, 1), labels: Float32Array.of(0, 1) }, 0, 2);
 * Array.from(batch.lengths); // [3, 3]
 * Array.from(batch.pairB); // [1, 1]
 * ```
 */
export function packPairBatch(tokens: readonly Int32Array[], pairs: Pairs, start: number, size: number): PairBatch {
  const end = Math.min(pairs.a.length, start + size);
  const slot = new Map<number, number>();
  const texts: number[] = [];
  const at = (example: number) => {
    let index = slot.get(example);
    if (index === undefined) {
      index = texts.length;
      slot.set(example, index);
      texts.push(example);
    }
    return index;
  };
  const pairA = new Int32Array(end - start);
  const pairB = new Int32Array(end - start);
  for (let p = start; p < end; p += 1) {
    pairA[p - start] = at(pairs.a[p]!);
    pairB[p - start] = at(pairs.b[p]!);
  }
  const lengths = Int32Array.from(texts, (t) => tokens[t]!.length);
  const ids = new Int32Array(lengths.reduce((sum, n) => sum + n, 0));
  let offset = 0;
  for (const t of texts) {
    ids.set(tokens[t]!, offset);
    offset += tokens[t]!.length;
  }
  return { ids, lengths, pairA, pairB, labels: pairs.labels.slice(start, end) };
}
