// `npm run bench -- accuracy-multiclass [--json] [--seeds 5] [--methods frozen,finetuned]`:
// few-shot multi-class accuracy on data from npm packages. Tasks: which site a UCI review
// sentence comes from (amazon / imdb / yelp) and SpamAssassin easy ham / hard ham / spam (the
// first 250 bodies of each, cut to 2,000 characters). Per task and seed, 8 examples of each class
// are drawn to train on; the rest of the task is the test set. Prints held-out accuracy (mean and
// standard deviation over the seeds), the model's own cross-validated estimate (cv_accuracy) and
// how far it lands from the held-out figure, and the mean training time (train() end to end).
import { performance } from 'node:perf_hooks';

import { closePool, train } from '../src/index.js';
import { intOption } from './_common.js';
import { splitClasses } from '../fixtures/draw.js';
import { emailClasses, uciSites } from '../fixtures/corpora.js';

interface ClassText {
  text: string;
  label: string;
}

const kPerClass = 8;
const kDefaultSeeds = 5;
const kMethods = [
  { name: 'frozen', finetune: false },
  { name: 'finetuned', finetune: true },
] as const;

const kTasks: Readonly<Record<string, () => ClassText[]>> = {
  'uci-site': () => uciSites(),
  spamassassin: () => emailClasses(250, 2000),
};

interface Run {
  accuracy: number;
  cvAccuracy: number;
  seconds: number;
}

async function evaluate(rows: ClassText[], finetune: boolean, seed: number): Promise<Run> {
  const { trainSet, testSet } = splitClasses(rows, seed, kPerClass);
  const started = performance.now();
  const classifier = await train({ model: 'svc-small', task_type: 'multi-class-classification', examples: trainSet, finetune }, { seed });
  const seconds = (performance.now() - started) / 1000;
  const predictions = await classifier.predict(testSet.map((row) => row.text));
  const correct = predictions.filter((p, i) => p.label === testSet[i].label).length;
  const cvAccuracy = classifier.metrics.cv_accuracy ?? NaN;
  classifier.dispose();
  return { accuracy: correct / testSet.length, cvAccuracy, seconds };
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
// Sample standard deviation (n - 1) over the seeds.
const std = (xs: number[]) => Math.sqrt(xs.reduce((s, x) => s + (x - mean(xs)) ** 2, 0) / Math.max(1, xs.length - 1));

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const seeds = intOption(args, 'seeds', kDefaultSeeds);
  const i = args.indexOf('--methods');
  const names = i < 0 ? kMethods.map((m) => m.name) : (args[i + 1] ?? '').split(',');
  const methods = kMethods.filter((m) => names.includes(m.name));
  if (methods.length !== names.length) throw new Error(`--methods takes a comma-separated list of ${kMethods.map((m) => m.name).join(', ')}`);
  const rowsOut: Record<string, unknown>[] = [];
  try {
    for (const [task, load] of Object.entries(kTasks)) {
      const rows = load();
      for (const method of methods) {
        const runs: Run[] = [];
        for (let seed = 1; seed <= seeds; seed++) {
          const result = await evaluate(rows, method.finetune, seed);
          runs.push(result);
          if (!json) {
            console.error(
              `${task} ${method.name} seed ${seed}: accuracy ${result.accuracy.toFixed(4)}, cv ${result.cvAccuracy.toFixed(4)}, train ${result.seconds.toFixed(2)} s`,
            );
          }
        }
        const accuracy = runs.map((r) => r.accuracy);
        const cv = runs.map((r) => r.cvAccuracy);
        rowsOut.push({
          task,
          method: method.name,
          accuracy: mean(accuracy),
          accuracyStd: std(accuracy),
          cvAccuracy: mean(cv),
          // How far the estimate lands from the held-out accuracy, averaged over the seeds.
          cvGap: mean(runs.map((r) => Math.abs(r.cvAccuracy - r.accuracy))),
          trainSeconds: mean(runs.map((r) => r.seconds)),
        });
      }
    }
  } finally {
    await closePool();
  }
  if (json) {
    console.log(JSON.stringify({ perClass: kPerClass, seeds, rows: rowsOut }, null, 2));
    return;
  }
  const pct = (x: unknown) => ((x as number) * 100).toFixed(1);
  console.log(`\n${kPerClass} training examples per class (3 classes), ${seeds} seeds, the rest of each task as test set\n`);
  console.log('| task | method | held-out accuracy % (mean ± std) | cv_accuracy % | mean abs(cv - held-out), points | training s |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rowsOut) {
    console.log(`| ${r.task} | ${r.method} | ${pct(r.accuracy)} ± ${pct(r.accuracyStd)} | ${pct(r.cvAccuracy)} | ${pct(r.cvGap)} | ${(r.trainSeconds as number).toFixed(2)} |`);
  }
}
