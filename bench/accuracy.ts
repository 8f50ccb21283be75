// `npm run bench -- accuracy [--json] [--seeds 5]`: few-shot accuracy on the UCI sentiment
// tasks. Per task and seed, 10 true + 10 false examples are drawn with a seeded PRNG to
// train on; every other sentence of the task is the test set. Prints mean and standard
// deviation of test accuracy over the seeds, and the mean training time.
//
// Methods are rows of `kMethods`: each trains through the public API with its own options,
// on the same draws, so a new method (e.g. fine-tuning) is one more entry.
import { performance } from 'node:perf_hooks';

import { closePool, train } from '../src/index.js';
import type { Classifier, TrainOptions, TrainRequest } from '../src/index.js';
import { intOption } from './_common.js';
import { kPerClass, split } from './_draw.js';
import { uciSentences } from './corpora.js';
import type { LabelledText, UciTask } from './corpora.js';

interface Method {
  name: string;
  /** Extra fields of the train request (e.g. `finetune: true`). */
  request: Record<string, unknown>;
  options: TrainOptions;
}

const kMethods: readonly Method[] = [{ name: 'frozen', request: {}, options: {} }];
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
    } as TrainRequest,
    method.options,
  );
  const seconds = (performance.now() - started) / 1000;
  const predictions = await classifier.predict(testSet.map((row) => row.text));
  const correct = predictions.filter((p, i) => p.label === testSet[i].label).length;
  classifier.dispose();
  return { accuracy: correct / testSet.length, seconds };
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const seeds = intOption(args, 'seeds', kDefaultSeeds);
  const results: Record<string, Summary & { methods: Record<string, Summary> }> = {};
  try {
    // Warm-up: start the pool's worker and load the encoder before anything is timed.
    await evaluate(kMethods[0], uciSentences(kTasks[0]), 0);
    for (const task of kTasks) {
      const rows = uciSentences(task);
      const methods: Record<string, Summary> = {};
      for (const method of kMethods) {
        const accuracies: number[] = [];
        const seconds: number[] = [];
        for (let seed = 1; seed <= seeds; seed++) {
          const result = await evaluate(method, rows, seed);
          accuracies.push(result.accuracy);
          seconds.push(result.seconds);
          if (!json) console.error(`${task} ${method.name} seed ${seed}: accuracy ${result.accuracy.toFixed(4)}, train ${result.seconds.toFixed(2)} s`);
        }
        methods[method.name] = summarize(accuracies, seconds);
      }
      // The first method is the baseline the top-level fields report.
      results[task] = { ...methods[kMethods[0].name], methods };
    }
  } finally {
    await closePool();
  }
  if (json) {
    console.log(JSON.stringify({ tasks: results }, null, 2));
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
}
