// `npm run bench -- zero-shot-calibration [--json]`: whether one pair of weights for the binary
// zero-shot features (kBinaryZeroShotWeights in src/train/zero-shot-scores.ts) carries both topics and
// sentiment, measured on a task the weights were not fitted on. Development-time only, not in CI.
//
// The seven tasks of bench/_zero-shot-tasks.ts (sentiment, topics one-vs-rest, spam). Per text, the
// scorer's two features (lift: relevance - cut; contrast with the negated label) are computed once;
// weights are fitted on every six tasks and scored on the seventh (leave one task out), two ways: a
// logistic regression with each task weighted alike, and a grid search for the best mean accuracy.
// Beside them, the fixed rules: the shipped weights, the plain sum, each feature alone, and the larger
// of the two (no weights at all).
import { closePool } from '../src/index.js';
import { embedTexts } from '../src/predict/embed-windows.js';
import { binaryZeroShotFeatures, kBinaryZeroShotWeights, zeroShotReference } from '../src/train/zero-shot-scores.js';
import { binaryZeroShot } from '../src/train/zero-shot.js';
import { binaryZeroShotTasks } from './_zero-shot-tasks.js';

const kModel = 'svc-small';
/** L2 on the weights (not the bias): keeps a task that one feature separates perfectly from sending it to infinity. */
const kRidge = 1e-3;

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

const embed = async (texts: readonly string[]) =>
  (await embedTexts(kModel, texts, 'end', { tenant: undefined, paramOf: () => 'inputs' })).embeddings;

type Weights = { lift: number; contrast: number; bias: number };
interface Featured {
  name: string;
  features: Float64Array;
  expected: boolean[];
}

const logit = (w: Weights, f: Float64Array, i: number) => w.bias + w.lift * f[2 * i] + w.contrast * f[2 * i + 1];

/** The share of `task`'s texts on their side of 0 under `score` (lift, contrast). */
function ruleAccuracy(score: (lift: number, contrast: number) => number, task: Featured): number {
  let right = 0;
  task.expected.forEach((y, i) => (right += score(task.features[2 * i], task.features[2 * i + 1]) >= 0 === y ? 1 : 0));
  return right / task.expected.length;
}

function accuracy(w: Weights, task: Featured): number {
  let right = 0;
  task.expected.forEach((y, i) => (right += logit(w, task.features, i) >= 0 === y ? 1 : 0));
  return right / task.expected.length;
}

/** Newton's method on the task-weighted logistic loss (3 parameters: a 3 x 3 solve per step). */
function fit(tasks: readonly Featured[]): Weights {
  let w: Weights = { lift: 0, contrast: 0, bias: 0 };
  for (let step = 0; step < 50; step++) {
    const g = [0, 0, 0];
    const h = [
      [kRidge, 0, 0],
      [0, kRidge, 0],
      [0, 0, 1e-9],
    ];
    g[0] += kRidge * w.lift;
    g[1] += kRidge * w.contrast;
    for (const task of tasks) {
      const share = 1 / (tasks.length * task.expected.length);
      task.expected.forEach((y, i) => {
        const x = [task.features[2 * i], task.features[2 * i + 1], 1];
        const p = 1 / (1 + Math.exp(-logit(w, task.features, i)));
        for (let a = 0; a < 3; a++) {
          g[a] += share * (p - (y ? 1 : 0)) * x[a];
          for (let b = 0; b < 3; b++) h[a][b] += share * p * (1 - p) * x[a] * x[b];
        }
      });
    }
    const d = solve3(h, g);
    w = { lift: w.lift - d[0], contrast: w.contrast - d[1], bias: w.bias - d[2] };
    if (Math.hypot(...d) < 1e-10) break;
  }
  return w;
}

/** Gaussian elimination with partial pivoting on a 3 x 3 system. */
function solve3(a: number[][], b: number[]): number[] {
  const m = a.map((row, i) => [...row, b[i]]);
  for (let c = 0; c < 3; c++) {
    let pivot = c;
    for (let r = c + 1; r < 3; r++) if (Math.abs(m[r][c]) > Math.abs(m[pivot][c])) pivot = r;
    [m[c], m[pivot]] = [m[pivot], m[c]];
    for (let r = c + 1; r < 3; r++) {
      const f = m[r][c] / m[c][c];
      for (let k = c; k < 4; k++) m[r][k] -= f * m[c][k];
    }
  }
  const x = [0, 0, 0];
  for (let r = 2; r >= 0; r--) x[r] = (m[r][3] - m[r].slice(r + 1, 3).reduce((s, v, k) => s + v * x[r + 1 + k], 0)) / m[r][r];
  return x;
}

/**
 * The contrast weight fixed at 1, the lift weight (0 to 1 by 0.05) and the bias (-3 to 3 by 0.25) that give the
 * best mean accuracy over `tasks`: the loss above is not accuracy, and a grid this small can be searched whole.
 */
function fitGrid(tasks: readonly Featured[]): Weights {
  let best: Weights = { lift: 0, contrast: 1, bias: 0 };
  let bestScore = -1;
  for (let a = 0; a <= 20; a++) {
    for (let b = -12; b <= 12; b++) {
      const w = { lift: a / 20, contrast: 1, bias: b / 4 };
      const score = mean(tasks.map((t) => accuracy(w, t)));
      if (score > bestScore) [best, bestScore] = [w, score];
    }
  }
  return best;
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  try {
    const reference = await zeroShotReference(kModel, undefined);
    const featured: Featured[] = [];
    for (const task of binaryZeroShotTasks()) {
      const features = binaryZeroShotFeatures(await embed(binaryZeroShot(task.labelText).map((e) => e.text)), reference);
      featured.push({ name: task.name, features: features(await embed(task.texts)), expected: task.expected });
    }
    const all = fit(featured);
    const grid = fitGrid(featured);
    const fixed: Record<string, Weights> = {
      shipped: { ...kBinaryZeroShotWeights },
      'lift + contrast': { lift: 1, contrast: 1, bias: 0 },
      'lift only': { lift: 1, contrast: 0, bias: 0 },
      'contrast only': { lift: 0, contrast: 1, bias: 0 },
    };
    const rows = featured.map((task) => {
      const without = fit(featured.filter((t) => t !== task));
      return {
        task: task.name,
        leaveOneOut: accuracy(without, task),
        gridLeaveOneOut: accuracy(fitGrid(featured.filter((t) => t !== task)), task),
        weightsWithout: without,
        ...Object.fromEntries(Object.entries(fixed).map(([name, w]) => [name, accuracy(w, task)])),
        // Either feature clear of 0 is enough: sentiment by the contrast, topics by the lift.
        'max(lift, contrast)': ruleAccuracy(Math.max, task),
      } as Record<string, unknown> & { task: string; leaveOneOut: number };
    });
    if (json) return console.log(JSON.stringify({ fittedOnAll: all, gridOnAll: grid, rows }, null, 2));
    const columns = ['leaveOneOut', 'gridLeaveOneOut', ...Object.keys(fixed), 'max(lift, contrast)'];
    console.log(
      `\nfitted on all seven: lift ${all.lift.toFixed(3)}, contrast ${all.contrast.toFixed(3)}, bias ${all.bias.toFixed(3)}; grid: lift ${grid.lift}, bias ${grid.bias}\n`,
    );
    console.log(`| task | logistic, left out | grid, left out | ${columns.slice(2).join(' | ')} |`);
    console.log(`| --- | ${columns.map(() => '---:').join(' | ')} |`);
    for (const row of rows) console.log(`| ${row.task} | ${columns.map((c) => pct(row[c] as number)).join(' | ')} |`);
    console.log(`| mean | ${columns.map((c) => pct(mean(rows.map((r) => r[c] as number)))).join(' | ')} |`);
  } finally {
    await closePool();
  }
}
