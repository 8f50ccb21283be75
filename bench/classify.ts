// `npm run bench -- classify [--json] [--runs 30] [--accuracy] [--seeds 3] [--chunks]`: POST /v2/classify's work
// through the library's classify(), the same code the route calls.
//
// Latency (default): one call of 8 inputs with 20 examples (10 positive, 10 negative IMDB sentences),
// p50 and p90 over `--runs` calls with the head cached (the same examples every call) and uncached
// (the cache emptied before each call: the examples are embedded and the head fitted). The machine's
// load average is printed beside the figures: on a shared machine they move with it. For scale, the
// same 8 texts scored as a frozen model's predict call scores them (the batcher, a binary head).
//
// `--accuracy`: zero-shot (examples: [], label names) against 20-example heads (10 per class for
// binary; 8 per class for `sites`, as the accuracy bench draws them) on the accuracy bench's imdb,
// yelp and sites tasks, on its held-out texts (the first 480 of each, to keep the run short).
//
// `--chunks`: truncate 'end' against 'chunks' on the SpamAssassin e-mails (easy ham / hard ham /
// spam, 8 examples per class, bodies up to 8,000 characters), with the time per text of each.
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';

import { classify, closePool } from '../src/index.js';
import type { ClassifyResponse, TruncateMode } from '../src/index.js';
import { clearClassifyHeads } from '../src/train/classify.js';
import { scoreTexts } from '../src/predict/batcher.js';
import { emailClasses, uciSentences, uciSites } from '../fixtures/corpora.js';
import { split, splitClasses } from '../fixtures/draw.js';
import { intOption } from './_common.js';

const kInputs = 8;
const kTestTexts = 480;
const kBatch = 96;

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

async function latency(runs: number, json: boolean): Promise<void> {
  const { trainSet, testSet } = split(uciSentences('imdb'), 0);
  const examples = trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' }));
  const inputs = testSet.slice(0, kInputs).map((row) => row.text);
  await classify(inputs, examples); // warm-up: the worker loads the encoder
  const loadBefore = load();
  const time = async (uncached: boolean) => {
    const ms: number[] = [];
    for (let i = 0; i < runs; i++) {
      if (uncached) clearClassifyHeads();
      const start = performance.now();
      await classify(inputs, examples);
      ms.push(performance.now() - start);
    }
    return { p50: percentile(ms, 0.5), p90: percentile(ms, 0.9) };
  };
  // The same 8 texts as a frozen model's predict call scores them (one batcher call, a 384-weight head):
  // what classify adds to it is the difference.
  const head = { weights: new Float64Array(384).fill(0.01), bias: 0 };
  const predictMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await scoreTexts('svc-small', null, head, inputs);
    predictMs.push(performance.now() - start);
  }
  const predict = { p50: percentile(predictMs, 0.5), p90: percentile(predictMs, 0.9) };
  const cached = await time(false);
  const uncached = await time(true);
  const result = { inputs: kInputs, examples: examples.length, runs, predict, cached, uncached, loadavg: { before: loadBefore, after: load() } };
  if (json) return console.log(JSON.stringify(result, null, 2));
  console.log(`\n${kInputs} inputs, ${examples.length} examples, ${runs} calls each; load average (1, 5, 15 min) ${loadBefore} before, ${load()} after\n`);
  console.log('| head | p50 ms | p90 ms |\n| --- | ---: | ---: |');
  console.log(`| predict path, same texts (no classify) | ${predict.p50.toFixed(1)} | ${predict.p90.toFixed(1)} |`);
  console.log(`| cached | ${cached.p50.toFixed(1)} | ${cached.p90.toFixed(1)} |`);
  console.log(`| uncached (embed 20 examples + fit) | ${uncached.p50.toFixed(1)} | ${uncached.p90.toFixed(1)} |`);
}

type Examples = Parameters<typeof classify>[1];
type Options = Parameters<typeof classify>[2];

/** Accuracy of `examples` + `options` on test texts, classified `kBatch` at a time; and the milliseconds per text. */
async function accuracyOf(texts: string[], expected: (string | boolean)[], examples: Examples, options: Options): Promise<{ accuracy: number; msPerText: number }> {
  let right = 0;
  const start = performance.now();
  for (let at = 0; at < texts.length; at += kBatch) {
    const answer: ClassifyResponse = await classify(texts.slice(at, at + kBatch), examples, options);
    answer.predictions.forEach((p, i) => (right += (p as { label: string | boolean }).label === expected[at + i] ? 1 : 0));
  }
  return { accuracy: right / texts.length, msPerText: (performance.now() - start) / texts.length };
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

// Zero-shot names for the sites task: the site names say nothing to an encoder, what is reviewed does.
const kSiteNames: Record<string, string> = { imdb: 'movie', yelp: 'restaurant', amazon: 'product' };

async function zeroShot(seeds: number, json: boolean): Promise<void> {
  const rows: { task: string; method: string; accuracy: number }[] = [];
  for (const task of ['imdb', 'yelp'] as const) {
    const all = uciSentences(task);
    const zs = split(all, 0).testSet.slice(0, kTestTexts);
    const zero = await accuracyOf(zs.map((r) => r.text), zs.map((r) => r.label), [], { taskType: 'binary-classification', labelText: 'positive review' });
    rows.push({ task, method: "zero-shot (label_text 'positive review')", accuracy: zero.accuracy });
    const few: number[] = [];
    for (let seed = 0; seed < seeds; seed++) {
      const { trainSet, testSet } = split(all, seed);
      const test = testSet.slice(0, kTestTexts);
      const examples = trainSet.map((r) => ({ text: r.text, label: r.label, label_text: 'positive' }));
      few.push((await accuracyOf(test.map((r) => r.text), test.map((r) => r.label), examples, {})).accuracy);
    }
    rows.push({ task, method: `20 examples, frozen head (mean of ${seeds} draws)`, accuracy: mean(few) });
  }
  const sites = uciSites().map((r) => ({ text: r.text, label: r.label as string }));
  // Every other row: the test rows of the three sites alike.
  const spread = (rows_: typeof sites) => rows_.filter((_, i) => i % Math.floor(rows_.length / kTestTexts) === 0).slice(0, kTestTexts);
  const zsTest = spread(splitClasses(sites, 0, 8).testSet);
  const zero = await accuracyOf(zsTest.map((r) => r.text), zsTest.map((r) => kSiteNames[r.label]!), [], {
    taskType: 'multi-class-classification', labels: Object.values(kSiteNames),
  });
  rows.push({ task: 'sites', method: "zero-shot (labels 'movie', 'restaurant', 'product')", accuracy: zero.accuracy });
  const few: number[] = [];
  for (let seed = 0; seed < seeds; seed++) {
    const { trainSet, testSet } = splitClasses(sites, seed, 8);
    const test = spread(testSet);
    few.push((await accuracyOf(test.map((r) => r.text), test.map((r) => r.label), trainSet, {})).accuracy);
  }
  rows.push({ task: 'sites', method: `24 examples (8 per class), frozen head (mean of ${seeds} draws)`, accuracy: mean(few) });
  if (json) return console.log(JSON.stringify(rows, null, 2));
  console.log(`\n${kTestTexts} held-out texts per task; load average ${load()}\n`);
  console.log('| task | method | accuracy % |\n| --- | --- | ---: |');
  for (const r of rows) console.log(`| ${r.task} | ${r.method} | ${(100 * r.accuracy).toFixed(1)} |`);
}

async function chunks(seeds: number, json: boolean): Promise<void> {
  const mail = emailClasses(250, 8000);
  const rows: { mode: TruncateMode; accuracy: number; msPerText: number }[] = [];
  for (const mode of ['end', 'chunks'] as const) {
    const runs: { accuracy: number; msPerText: number }[] = [];
    for (let seed = 0; seed < seeds; seed++) {
      const { trainSet, testSet } = splitClasses(mail, seed, 8);
      const test = testSet.filter((_, i) => i % 2 === 0).slice(0, 192);
      runs.push(await accuracyOf(test.map((r) => r.text), test.map((r) => r.label), trainSet, { truncate: mode }));
    }
    rows.push({ mode, accuracy: mean(runs.map((r) => r.accuracy)), msPerText: mean(runs.map((r) => r.msPerText)) });
  }
  if (json) return console.log(JSON.stringify(rows, null, 2));
  console.log(`\nSpamAssassin e-mails up to 8,000 characters, 8 examples per class, 192 test texts, ${seeds} draws; load average ${load()}\n`);
  console.log('| truncate | accuracy % | ms per text |\n| --- | ---: | ---: |');
  for (const r of rows) console.log(`| ${r.mode} | ${(100 * r.accuracy).toFixed(1)} | ${r.msPerText.toFixed(1)} |`);
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  try {
    if (args.includes('--accuracy')) await zeroShot(intOption(args, 'seeds', 3), json);
    else if (args.includes('--chunks')) await chunks(intOption(args, 'seeds', 3), json);
    else await latency(intOption(args, 'runs', 30), json);
  } finally {
    await closePool();
  }
}
