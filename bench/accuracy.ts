// `npm run bench -- accuracy [--json] [--seeds 5] [--methods frozen,finetuned]`: few-shot
// accuracy on the UCI sentiment tasks. Per task and seed, 10 true + 10 false examples are
// drawn with a seeded PRNG to train on; every other sentence of the task is the test set.
// Prints mean and standard deviation of test accuracy over the seeds, the mean training time
// (train() end to end, as a user waits for it) and the process's peak resident memory.
//
// Methods are rows of `kMethods`: each trains through the public API with its own options,
// on the same draws. `frozen` is the baseline (base encoder, logistic head); `finetuned` is
// the library's default (SetFit: the encoder fine-tuned on 800 pairs, then the head).
import { performance } from 'node:perf_hooks';

import { closePool, train } from '../src/index.js';
import type { Classifier, TrainOptions, TrainRequest } from '../src/index.js';
import { intOption } from './_common.js';
import { kPerClass, split } from '../fixtures/draw.js';
import { uciSentences } from '../fixtures/corpora.js';
import type { LabelledText, UciTask } from '../fixtures/corpora.js';

interface Method {
  name: string;
  /** Extra fields of the train request (e.g. `finetune: true`). */
  request: { finetune?: boolean };
  options: TrainOptions;
}

const kMethods: readonly Method[] = [
  { name: 'frozen', request: { finetune: false }, options: {} },
  { name: 'finetuned', request: {}, options: {} },
];
const kTasks: readonly UciTask[] = ['imdb', 'yelp'];
const kDefaultSeeds = 5;
const kLabelText = 'positive';

interface Summary {
  mean: number;
  std: number;
  trainSeconds: number;
}

function summarize(accuracies: number[], seconds: number[]): Summary {
  const mean = accuracies.reduce((s, a) => s + a, 0) / accuracies.length;
  // Sample standard deviation (n - 1) over the seeds.
  const variance = accuracies.reduce((s, a) => s + (a - mean) ** 2, 0) / Math.max(1, accuracies.length - 1);
  const trainSeconds = seconds.reduce((s, a) => s + a, 0) / seconds.length;
  return { mean, std: Math.sqrt(variance), trainSeconds };
}

async function evaluate(method: Method, rows: LabelledText[], seed: number): Promise<{ accuracy: number; seconds: number }> {
  const { trainSet, testSet } = split(rows, seed);
  const started = performance.now();
  const classifier: Classifier = await train(
    {
      model: 'svc-small',
      task_type: 'binary-classification',
      examples: trainSet.map((row) => ({ text: row.text, label: row.label, label_text: kLabelText })),
      ...method.request,
    },
    method.options,
  );
  const seconds = (performance.now() - started) / 1000;
  const predictions = await classifier.predict(testSet.map((row) => row.text));
  const correct = predictions.filter((p, i) => p.label === testSet[i].label).length;
  classifier.dispose();
  return { accuracy: correct / testSet.length, seconds };
}

function methodsOption(args: string[]): readonly Method[] {
  const i = args.indexOf('--methods');
  if (i < 0) return kMethods;
  const names = (args[i + 1] ?? '').split(',');
  const chosen = kMethods.filter((m) => names.includes(m.name));
  if (chosen.length !== names.length) {
    throw new Error(`--methods takes a comma-separated list of ${kMethods.map((m) => m.name).join(', ')}`);
  }
  return chosen;
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const seeds = intOption(args, 'seeds', kDefaultSeeds);
  const methods = methodsOption(args);
  const results: Record<string, Summary & { methods: Record<string, Summary> }> = {};
  try {
    // Warm-up: start the pool's worker and load the encoder before anything is timed.
    await evaluate(kMethods[0]!, uciSentences(kTasks[0]!), 0);
    for (const task of kTasks) {
      const rows = uciSentences(task);
      const summaries: Record<string, Summary> = {};
      for (const method of methods) {
        const accuracies: number[] = [];
        const seconds: number[] = [];
        for (let seed = 1; seed <= seeds; seed++) {
          const result = await evaluate(method, rows, seed);
          accuracies.push(result.accuracy);
          seconds.push(result.seconds);
          if (!json) console.error(`${task} ${method.name} seed ${seed}: accuracy ${result.accuracy.toFixed(4)}, train ${result.seconds.toFixed(2)} s`);
        }
        summaries[method.name] = summarize(accuracies, seconds);
      }
      // The first method is the baseline the top-level fields report.
      results[task] = { ...summaries[methods[0]!.name]!, methods: summaries };
    }
  } finally {
    await closePool();
  }
  const peakRssMB = Math.round(process.resourceUsage().maxRSS / 1024);
  const gains = methods.slice(1).map((m) => ({
    method: m.name,
    // Mean over tasks of (method mean - baseline mean), in accuracy points.
    points: (100 * Object.values(results).reduce((sum, r) => sum + r.methods[m.name]!.mean - r.mean, 0)) / kTasks.length,
  }));
  if (json) {
    console.log(JSON.stringify({ tasks: results, gains, peakRssMB }, null, 2));
    return;
  }
  const percent = (x: number) => (x * 100).toFixed(1);
  console.log(`\n${kPerClass} + ${kPerClass} training examples, ${seeds} seeds, the rest of each task as test set\n`);
  console.log('| task | method | accuracy % (mean ± std) | training s |');
  console.log('|---|---|---|---|');
  for (const [task, summary] of Object.entries(results)) {
    for (const [name, m] of Object.entries(summary.methods)) {
      console.log(`| ${task} | ${name} | ${percent(m.mean)} ± ${percent(m.std)} | ${m.trainSeconds.toFixed(2)} |`);
    }
  }
  for (const gain of gains) {
    console.log(`\n${gain.method} vs ${methods[0]!.name}: ${gain.points >= 0 ? '+' : ''}${gain.points.toFixed(2)} points averaged over the tasks`);
  }
  console.log(`peak resident memory of the process: ${peakRssMB} MB`);
}
