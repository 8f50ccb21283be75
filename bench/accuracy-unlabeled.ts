// `npm run bench -- accuracy-unlabeled [--json] [--seeds 5] [--tasks imdb,yelp,sites,email]
//   [--bodies frozen,full] [--unlabeled 1000] [--cache <dir>] [--levers none,words w=2 + self-training share=0.5]`: self-training on unlabelled texts of
// the same task, at the head, on the accuracy bench's draws (cached embeddings, as accuracy-levers).
//
// Per draw, the held-out rows are split once (seeded): up to `--unlabeled` of them (at most half) are
// the user's unlabelled texts, the rest the test set every lever is scored on, `none` included, so
// the columns compare on the same texts. The unlabelled texts are embedded by the same body as the
// examples (the cached held-out embeddings: a fine-tuned model embeds them with its own encoder).
// `self-training share=S rounds=R`: the head fitted on the examples (with or without the label words)
// pseudo-labels the S x m texts it is surest of, per class in the examples' shares, and is fitted
// again on examples + those rows (src/train/self-training.ts), R times. The cv column is what the
// model reports: the 5-fold estimate on the base encoder's embeddings of the examples (frozen: with
// the same self-training in every fold; fine-tuned: the head without it).
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { closePool } from '../src/index.js';
import { fitAndMeasure } from '../src/train/fit-head.js';
import type { LabelWordsLever } from '../src/train/label-words.js';
import type { ExampleTargets } from '../src/pool/tasks.js';
import { classProbabilities } from '../src/train/self-training.js';
import type { SelfTrainingOptions } from '../src/train/self-training.js';
import { kHeadKinds } from '../src/train/train.js';
import { intOption } from './_common.js';
import { argmaxAccuracy, drawEmbeddings, kBodies, kLeverBodies } from './_accuracy-cache.js';
import type { Body, DrawEmbeddings } from './_accuracy-cache.js';
import { kTasks, splitHeldOut } from './_accuracy-tasks.js';
import { listOption } from './accuracy.js';

interface Config {
  name: string;
  words: LabelWordsLever;
  selfTraining: SelfTrainingOptions | null;
}

const kWords: LabelWordsLever = { kind: 'examples', weight: 2 };
const kShares = [0.05, 0.1, 0.25, 0.5, 1];

const kConfigs: readonly Config[] = [
  { name: 'none', words: { kind: 'none' }, selfTraining: null },
  ...kShares.map((share) => ({
    name: `self-training share=${share}`,
    words: { kind: 'none' } as LabelWordsLever,
    selfTraining: { share, rounds: 1 },
  })),
  { name: 'self-training share=0.25 rounds=3', words: { kind: 'none' }, selfTraining: { share: 0.25, rounds: 3 } },
  { name: 'words w=2', words: kWords, selfTraining: null },
  ...kShares.map((share) => ({ name: `words w=2 + self-training share=${share}`, words: kWords, selfTraining: { share, rounds: 1 } })),
  { name: 'words w=2 + self-training share=0.25 rounds=3', words: kWords, selfTraining: { share: 0.25, rounds: 3 } },
];

function rowsOf(x: Float32Array, dim: number, rows: Int32Array): Float32Array {
  const out = new Float32Array(rows.length * dim);
  rows.forEach((row, r) => out.set(x.subarray(row * dim, (row + 1) * dim), r * dim));
  return out;
}

const classesOf = (t: ExampleTargets) => (t as { classes: Int32Array }).classes;

interface Scored {
  accuracy: number;
  cv: number;
}

function scoreDraw(d: DrawEmbeddings, base: DrawEmbeddings, unlabeledCount: number, seed: number, configs: readonly Config[]): Scored[] {
  const dim = d.dim;
  const t = classesOf(d.testTargets).length;
  const { pool, test } = splitHeldOut(t, unlabeledCount, seed);
  const unlabeled = rowsOf(d.test, dim, pool);
  // The same texts as the base encoder embeds them, for the estimate's self-training (train() embeds them with both).
  const baseUnlabeled = d === base ? unlabeled : rowsOf(base.test, dim, pool);
  const testX = rowsOf(d.test, dim, test);
  const testY = Int32Array.from(test, (row) => classesOf(d.testTargets)[row]!);
  const head = kHeadKinds[d.taskType];
  // As train() fits: the head and, with unlabelled texts, its self-training inside fitAndMeasure (fit-head.ts).
  const fitOn = (on: DrawEmbeddings, config: Config, crossValidate: boolean) =>
    fitAndMeasure({
      kind: 'fit',
      head,
      embeddings: on.train,
      targets: on.targets,
      dim,
      C: 1,
      balanced: false,
      validation: null,
      crossValidate,
      labelWords: { embeddings: on.words, targets: on.wordTargets, lever: config.words },
      // The estimate self-trains in every fold too, on the texts as its encoder (the base one) embeds them, as train()'s does.
      unlabeled: config.selfTraining ? { embeddings: on === base ? baseUnlabeled : unlabeled, selfTraining: config.selfTraining } : null,
    });
  const cvOf = new Map<string, number>();
  return configs.map((config) => {
    const key = JSON.stringify([config.words, config.selfTraining]);
    if (!cvOf.has(key)) cvOf.set(key, fitOn(base, config, true).crossValidation!.accuracy);
    const fitted = fitOn(d, config, false);
    const p = classProbabilities(fitted, testX, dim);
    return { accuracy: argmaxAccuracy(p, testY), cv: cvOf.get(key)! };
  });
}

const average = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const seeds = intOption(args, 'seeds', 5);
  const unlabeledCount = intOption(args, 'unlabeled', 1000);
  const tasks = listOption(args, 'tasks', Object.keys(kTasks)).map((name) => kTasks[name]!());
  const bodies = (args.includes('--bodies') ? listOption(args, 'bodies', [...kBodies, ...kLeverBodies]) : kBodies) as Body[];
  // `--levers a,b`: only those rows (by name; `none` first, as the deltas are against it).
  const leverNames = listOption(
    args,
    'levers',
    kConfigs.map((c) => c.name),
  );
  const configs = kConfigs.filter((c) => c.name === 'none' || leverNames.includes(c.name));
  const at = args.indexOf('--cache');
  const cacheDir = at >= 0 ? args[at + 1]! : join(tmpdir(), 'svc-accuracy-cache');
  const results: Record<string, Record<string, Scored[][]>> = {};
  const sizes: Record<string, string> = {};
  try {
    for (const task of tasks) {
      results[task.name] = {};
      for (const body of bodies) {
        const perSeed: Scored[][] = [];
        for (let seed = 1; seed <= seeds; seed++) {
          const base = await drawEmbeddings(task, seed, 'frozen', cacheDir);
          const on = body === 'frozen' ? base : await drawEmbeddings(task, seed, body, cacheDir);
          const t = classesOf(on.testTargets).length;
          sizes[task.name] =
            `${Math.min(unlabeledCount, Math.floor(t / 2))} unlabelled, ${t - Math.min(unlabeledCount, Math.floor(t / 2))} test`;
          const scored = scoreDraw(on, base, unlabeledCount, seed, configs);
          perSeed.push(scored);
          if (!json)
            console.error(
              `${task.name} ${body} seed ${seed}: ${scored.map((s, k) => `${configs[k]!.name} ${s.accuracy.toFixed(4)}`).join(', ')}`,
            );
        }
        results[task.name]![body] = perSeed;
      }
    }
  } finally {
    await closePool();
  }
  const meanOf = (task: string, body: Body, k: number, key: keyof Scored) => average(results[task]![body]!.map((s) => s[k]![key]));
  if (json) {
    console.log(JSON.stringify({ seeds, sizes, configs: configs.map((c) => c.name), results }, null, 2));
    return;
  }
  const pct = (x: number) => (x * 100).toFixed(1);
  const signed = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)}`;
  console.log(
    `\n${seeds} seeds; ${tasks.map((t) => `${t.name}: ${sizes[t.name]}`).join('; ')}; held-out accuracy % on the test rows (Δ vs the same body's none)\n`,
  );
  console.log(
    `| body | lever | ${tasks.map((t) => `${t.name} % (Δ)`).join(' | ')} | mean Δ | worst Δ | mean abs(cv - held-out) (per task) |`,
  );
  console.log(`|---|---|${tasks.map(() => '---|').join('')}---|---|---|`);
  for (const body of bodies) {
    configs.forEach((config, k) => {
      const deltas = tasks.map((t) => meanOf(t.name, body, k, 'accuracy') - meanOf(t.name, body, 0, 'accuracy'));
      const cells = tasks.map((t, i) => `${pct(meanOf(t.name, body, k, 'accuracy'))} (${signed(deltas[i]!)})`);
      const cvErrors = tasks.map((t) => average(results[t.name]![body]!.map((s) => Math.abs(s[k]!.cv - s[k]!.accuracy))));
      console.log(
        `| ${body} | ${config.name} | ${cells.join(' | ')} | ${signed(average(deltas))} | ${signed(Math.min(...deltas))} | ${pct(average(cvErrors))} (${cvErrors.map(pct).join(' / ')}) |`,
      );
    });
  }
}
