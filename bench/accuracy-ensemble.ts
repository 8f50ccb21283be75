// `npm run bench -- accuracy-ensemble [--seeds 2] [--tasks imdb] [--members 2] [--cache <dir>]`: an
// ensemble of LoRA adapters trained on the same draw with different seeds (the draw's, + 1000, + 2000),
// each with its own head (SetFit's, as train() fits it), their class probabilities averaged, against
// the fully fine-tuned encoder (SetFit, today's default) and the single adapter on the same draws.
// Embeddings come from the accuracy-levers cache (bench/_accuracy-cache.ts): the first run fine-tunes
// every member, later ones take seconds. The fine-tuning seconds are the cache's, as measured when it
// was filled (on whatever machine load there was then).
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { closePool } from '../src/index.js';
import { fitAndMeasure } from '../src/train/fit-head.js';
import { classProbabilities } from '../src/train/self-training.js';
import { kHeadKinds } from '../src/train/train.js';
import { intOption } from './_common.js';
import { argmaxAccuracy, drawEmbeddings } from './_accuracy-cache.js';
import type { Body, DrawEmbeddings } from './_accuracy-cache.js';
import { kTasks } from './_accuracy-tasks.js';
import { listOption } from './accuracy.js';

const kMembers: readonly Body[] = ['adapter', 'adapter-seed2', 'adapter-seed3'];

/** The test rows' class probabilities (rows x classes) by SetFit's head fitted on `d`. */
function testProbabilities(d: DrawEmbeddings): Float64Array {
  const fit = fitAndMeasure({
    kind: 'fit',
    head: kHeadKinds[d.taskType],
    embeddings: d.train,
    targets: d.targets,
    dim: d.dim,
    C: 1,
    balanced: false,
    validation: null,
    crossValidate: false,
  });
  return classProbabilities(fit, d.test, d.dim);
}

function accuracy(p: Float64Array, d: DrawEmbeddings): number {
  return argmaxAccuracy(p, (d.testTargets as { classes: Int32Array }).classes);
}

const average = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

export async function run(args: string[]): Promise<void> {
  const seeds = intOption(args, 'seeds', 2);
  const members = intOption(args, 'members', 2);
  if (members > kMembers.length) throw new RangeError(`--members must be at most ${kMembers.length}`);
  const tasks = listOption(args, 'tasks', Object.keys(kTasks)).map((name) => kTasks[name]!());
  const at = args.indexOf('--cache');
  const cacheDir = at >= 0 ? args[at + 1]! : join(tmpdir(), 'svc-accuracy-cache');
  const rows: string[] = [];
  try {
    for (const task of tasks) {
      const full: number[] = [];
      const single: number[] = [];
      const ensemble: number[] = [];
      const fullSeconds: number[] = [];
      const memberSeconds: number[] = [];
      for (let seed = 1; seed <= seeds; seed++) {
        const setfit = await drawEmbeddings(task, seed, 'full', cacheDir);
        full.push(accuracy(testProbabilities(setfit), setfit));
        fullSeconds.push(setfit.bodySeconds);
        const draws = [];
        for (const body of kMembers.slice(0, members)) draws.push(await drawEmbeddings(task, seed, body, cacheDir));
        const probabilities = draws.map(testProbabilities);
        single.push(accuracy(probabilities[0]!, draws[0]!));
        const mean = probabilities[0]!.map((_, i) => average(probabilities.map((p) => p[i]!)));
        ensemble.push(accuracy(mean, draws[0]!));
        memberSeconds.push(draws.reduce((s, d) => s + d.bodySeconds, 0));
        console.error(
          `${task.name} seed ${seed}: full ${full.at(-1)!.toFixed(4)}, adapter ${single.at(-1)!.toFixed(4)}, ensemble of ${members} ${ensemble.at(-1)!.toFixed(4)}`,
        );
      }
      const pct = (xs: number[]) => (100 * average(xs)).toFixed(1);
      rows.push(
        `| ${task.name} | ${pct(full)} | ${pct(single)} | ${pct(ensemble)} | ${(100 * (average(ensemble) - average(full))).toFixed(2)} | ${average(fullSeconds).toFixed(0)} | ${average(memberSeconds).toFixed(0)} |`,
      );
    }
  } finally {
    await closePool();
  }
  console.log(`\n${seeds} seeds; held-out accuracy %; fine-tuning seconds per draw as the cache measured them\n`);
  console.log(
    `| task | full (SetFit) | one adapter | ensemble of ${members} adapters | Δ ensemble vs full, points | full s | ensemble s |`,
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}
