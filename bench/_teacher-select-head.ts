// The teacher bench's `select-head` part: uncertainty sampling against a random sample at the head, on the
// accuracy bench's cached base-encoder embeddings (bench/_accuracy-cache.ts), with no server and no teacher calls.
// The teacher's answers are simulated as the fake provider gives them: the same texts are wrong
// (fixtures/fake-teacher.ts isNoisyText at the bench's error rate), binary flipped, multi-class another class.
// `uncertain` is selectByUncertainty (src/train/uncertainty.ts) in its default rounds, `random` chooseSeedTexts;
// both then fit the head train() fits (frozen, no label words) on the labels they bought, scored on the test rows
// against the true labels. `all` fits on every text of the pool, as the ceiling the budget is measured against.
import type { TeacherLabel } from '../src/teacher/protocol.js';
import { fitAndMeasure } from '../src/train/fit-head.js';
import { classProbabilities } from '../src/train/self-training.js';
import { kHeadKinds } from '../src/train/train.js';
import { chooseSeedTexts, selectByUncertainty } from '../src/train/uncertainty.js';
import { isNoisyText } from '../fixtures/fake-teacher.js';
import { argmaxAccuracy, drawEmbeddings } from './_accuracy-cache.js';
import type { Task } from './_accuracy-tasks.js';

export interface HeadSelection {
  uncertain: number;
  random: number;
  all: number;
}

/** Rows `rows` of `x` (dim wide), each scaled to unit length: the cosine guard reads dot products as cosines. */
function unitRows(x: Float32Array, dim: number, rows: readonly number[]): Float32Array {
  const out = new Float32Array(rows.length * dim);
  rows.forEach((row, r) => {
    const v = x.subarray(row * dim, (row + 1) * dim);
    const norm = Math.hypot(...v) || 1;
    for (let j = 0; j < dim; j++) out[r * dim + j] = v[j]! / norm;
  });
  return out;
}

/**
 * One draw's figures: `pool` and `test` index the draw's held-out rows (as bench/teacher.ts splits them).
 *
 * @example
 * ```ts
 * await selectOnHead(kTasks.sites!(), 1, { pool, test, budget: 100, errorRate: 0.1, cacheDir });
 * // { uncertain: 0.86, random: 0.85, all: 0.9 } (shares of the test rows right)
 * ```
 */
export async function selectOnHead(
  task: Task,
  seed: number,
  options: { pool: readonly number[]; test: readonly number[]; budget: number; errorRate: number; cacheDir: string },
): Promise<HeadSelection> {
  const { pool, test, budget, errorRate } = options;
  const draw = task.draw(seed);
  const cached = await drawEmbeddings(task, seed, 'frozen', options.cacheDir);
  const dim = cached.dim;
  const truth = (cached.testTargets as { classes: Int32Array }).classes;
  const classes = Math.max(...truth) + 1;
  const binary = cached.taskType === 'binary-classification';
  const poolX = unitRows(cached.test, dim, pool);
  const testX = unitRows(cached.test, dim, test);
  const testY = Int32Array.from(test, (row) => truth[row]!);
  // The teacher's class for pool row r: the true one, or for its noisy texts another (binary: the other).
  const teacherClass = (r: number) => {
    const k = truth[pool[r]!]!;
    const noisy = isNoisyText(draw.testTexts[pool[r]!]!, { labelOf: () => false, errorRate });
    return noisy ? (k + 1 + (r % (classes - 1))) % classes : k;
  };
  // Class indices as labels: binary true is class 1; multi-class names are the indices themselves.
  const labels = Array.from({ length: classes }, (_, k) => String(k));
  const asLabel = (k: number): TeacherLabel => (binary ? k === 1 : String(k));
  const task_ = { taskType: cached.taskType, labels: binary ? ['true'] : labels };
  const accuracyOf = (rows: readonly number[]) => {
    const fit = fitAndMeasure({
      kind: 'fit',
      head: kHeadKinds[cached.taskType],
      embeddings: unitRows(poolX, dim, rows),
      targets: { kind: 'classes', classes: Int32Array.from(rows, teacherClass), count: classes },
      dim,
      C: 1,
      balanced: false,
      validation: null,
      crossValidate: false,
    });
    return argmaxAccuracy(classProbabilities(fit, testX, dim), testY);
  };
  const chosen = await selectByUncertainty({
    embeddings: poolX,
    dim,
    task: task_,
    budget,
    seed,
    label: async (rows) => rows.map((r) => asLabel(teacherClass(r))),
  });
  return {
    uncertain: accuracyOf(chosen.labelled.map((row) => row.index)),
    random: accuracyOf(chooseSeedTexts(pool.length, budget, seed)),
    all: accuracyOf(pool.map((_, r) => r)),
  };
}
