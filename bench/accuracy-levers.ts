// `npm run bench -- accuracy-levers [--json] [--seeds 5] [--tasks imdb,yelp,sites,email]
//   [--bodies frozen,adapter,full,full-wordpairs,...] [--cache <dir>]`: head-level levers on the accuracy bench's draws.
//
// Each draw's embeddings by each body (base encoder; LoRA adapter; fully fine-tuned encoder, as
// train() builds them) are computed once and cached in `--cache` (default
// <tmpdir>/svc-accuracy-cache): the first run fine-tunes, later ones take seconds. Every lever then
// fits the head on the draw's examples (fit-head.ts, as train() does) and is scored on the draw's
// held-out texts. `none` is SetFit's head; on the `full` body it is the library's default, the
// SetFit baseline. `cv-choice` picks per draw, among a few candidate levers, the one whose 5-fold
// cross-validated accuracy on the base encoder's embeddings of the examples is highest (ties: the
// earlier one), as train() could without held-out texts. The cv column is that estimate per lever.
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { closePool } from '../src/index.js';
import { fitAndMeasure } from '../src/train/fit-head.js';
import type { LabelWordsLever } from '../src/train/label-words.js';
import { kHeadKinds } from '../src/train/train.js';
import { intOption } from './_common.js';
import { drawEmbeddings, kBodies, kLeverBodies } from './_accuracy-cache.js';
import type { Body, DrawEmbeddings } from './_accuracy-cache.js';
import { kTasks } from './_accuracy-tasks.js';
import { listOption } from './accuracy.js';

interface LeverConfig {
  name: string;
  lever: LabelWordsLever;
  C: number;
}

const kLevers: readonly LeverConfig[] = [
  { name: 'none', lever: { kind: 'none' }, C: 1 },
  { name: 'C=0.3', lever: { kind: 'none' }, C: 0.3 },
  { name: 'C=3', lever: { kind: 'none' }, C: 3 },
  ...[1, 2, 4, 8, 16, 32].map((weight) => ({
    name: `words-examples w=${weight}`,
    lever: { kind: 'examples', weight } as LabelWordsLever,
    C: 1,
  })),
  ...[1, 3, 10, 30].map((scale) => ({ name: `words-direction s=${scale}`, lever: { kind: 'direction', scale } as LabelWordsLever, C: 1 })),
];

/**
 * The levers `cv-choice` chooses among, SetFit's plain head first (it wins ties). Measured as a
 * way for train() to choose per request; it lost (docs/benchmark-history.md), so train() does not.
 */
const kCandidates: readonly LabelWordsLever[] = [
  { kind: 'none' },
  { kind: 'examples', weight: 2 },
  { kind: 'examples', weight: 8 },
  { kind: 'direction', scale: 10 },
];

/** kCandidates as indices into kLevers. */
const kChoice = kCandidates.map((lever) => {
  const k = kLevers.findIndex((config) => config.C === 1 && JSON.stringify(config.lever) === JSON.stringify(lever));
  if (k < 0) throw new Error(`the bench lacks the candidate ${JSON.stringify(lever)}`);
  return k;
});

interface Scored {
  accuracy: number;
  cv: number;
}

function score(on: DrawEmbeddings, config: LeverConfig, cvOn: DrawEmbeddings): Scored {
  const fit = (d: DrawEmbeddings, withTest: boolean) =>
    fitAndMeasure({
      kind: 'fit',
      head: kHeadKinds[d.taskType],
      embeddings: d.train,
      targets: d.targets,
      dim: d.dim,
      C: config.C,
      balanced: false,
      validation: withTest ? { embeddings: d.test, targets: d.testTargets } : null,
      crossValidate: !withTest,
      labelWords: { embeddings: d.words, targets: d.wordTargets, lever: config.lever },
    });
  return { accuracy: fit(on, true).validation!.accuracy, cv: fit(cvOn, false).crossValidation!.accuracy };
}

const average = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const seeds = intOption(args, 'seeds', 5);
  const tasks = listOption(args, 'tasks', Object.keys(kTasks)).map((name) => kTasks[name]!());
  const bodies = (args.includes('--bodies') ? listOption(args, 'bodies', [...kBodies, ...kLeverBodies]) : kBodies) as Body[];
  const at = args.indexOf('--cache');
  const cacheDir = at >= 0 ? args[at + 1]! : join(tmpdir(), 'svc-accuracy-cache');
  const names = [...kLevers.map((l) => l.name), 'cv-choice'];
  // results[task][body][lever] = per-seed scores
  const results: Record<string, Record<string, Record<string, Scored[]>>> = {};
  const bodySeconds: Record<string, Record<string, number[]>> = {};
  try {
    for (const task of tasks) {
      results[task.name] = {};
      bodySeconds[task.name] = {};
      for (const body of bodies) {
        const perLever: Record<string, Scored[]> = Object.fromEntries(names.map((n) => [n, []]));
        bodySeconds[task.name]![body] = [];
        for (let seed = 1; seed <= seeds; seed++) {
          const base = await drawEmbeddings(task, seed, 'frozen', cacheDir);
          const on = body === 'frozen' ? base : await drawEmbeddings(task, seed, body, cacheDir);
          bodySeconds[task.name]![body]!.push(on.bodySeconds);
          const scored = kLevers.map((config) => score(on, config, base));
          scored.forEach((s, k) => perLever[kLevers[k]!.name]!.push(s));
          // Among the candidates, the first with the highest estimate.
          const best = kChoice.reduce((b, k) => (scored[k]!.cv > scored[b]!.cv ? k : b), kChoice[0]!);
          perLever['cv-choice']!.push(scored[best]!);
          if (!json)
            console.error(
              `${task.name} ${body} seed ${seed}: none ${scored[0]!.accuracy.toFixed(4)}, cv-choice ${kLevers[best]!.name} ${scored[best]!.accuracy.toFixed(4)}`,
            );
        }
        results[task.name]![body] = perLever;
      }
    }
  } finally {
    await closePool();
  }
  const mean = (xs: Scored[], key: keyof Scored) => average(xs.map((x) => x[key]));
  if (json) {
    const summary = Object.fromEntries(
      Object.entries(results).map(([task, byBody]) => [
        task,
        Object.fromEntries(
          Object.entries(byBody).map(([body, byLever]) => [
            body,
            Object.fromEntries(
              Object.entries(byLever).map(([lever, xs]) => [
                lever,
                { accuracy: mean(xs, 'accuracy'), cv: mean(xs, 'cv'), perSeed: xs.map((x) => x.accuracy) },
              ]),
            ),
          ]),
        ),
      ]),
    );
    console.log(JSON.stringify({ seeds, tasks: summary, bodySeconds }, null, 2));
    return;
  }
  const pct = (x: number) => (x * 100).toFixed(1);
  const signed = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)}`;
  console.log(
    `\n${seeds} seeds; held-out accuracy %, its change against the same body's \`none\`, and the cv estimate on base embeddings\n`,
  );
  console.log(
    `| body | lever | ${tasks.map((t) => `${t.name} % (Δ) [cv]`).join(' | ')} | mean Δ vs same body | mean Δ vs full none | mean abs(cv - held-out) |`,
  );
  console.log(`|---|---|${tasks.map(() => '---|').join('')}---|---|---|`);
  for (const body of bodies) {
    for (const lever of names) {
      const cells = tasks.map((t) => {
        const xs = results[t.name]![body]![lever]!;
        const d = mean(xs, 'accuracy') - mean(results[t.name]![body]!['none']!, 'accuracy');
        return `${pct(mean(xs, 'accuracy'))} (${signed(d)}) [${pct(mean(xs, 'cv'))}]`;
      });
      const delta = average(
        tasks.map((t) => mean(results[t.name]![body]![lever]!, 'accuracy') - mean(results[t.name]![body]!['none']!, 'accuracy')),
      );
      const vsFull = bodies.includes('full')
        ? signed(
            average(
              tasks.map((t) => mean(results[t.name]![body]![lever]!, 'accuracy') - mean(results[t.name]!['full']!['none']!, 'accuracy')),
            ),
          )
        : '-';
      const cvError = average(tasks.map((t) => average(results[t.name]![body]![lever]!.map((x) => Math.abs(x.cv - x.accuracy)))));
      console.log(`| ${body} | ${lever} | ${cells.join(' | ')} | ${signed(delta)} | ${vsFull} | ${pct(cvError)} |`);
    }
  }
  for (const body of bodies.filter((b) => b !== 'frozen')) {
    console.log(
      `\n${body} body, fine-tuning s per draw: ${tasks.map((t) => `${t.name} ${average(bodySeconds[t.name]![body]!).toFixed(1)}`).join(', ')}`,
    );
  }
}
