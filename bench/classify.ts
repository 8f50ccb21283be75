// `npm run bench -- classify [--json] [--runs 30] [--accuracy] [--seeds 3] [--chunks [--max-chars N]] [--explain [--examples N]]`: POST /v2/classify's work
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
// yelp and sites tasks, on its held-out texts (the first 480 of each, to keep the run short); then
// zero-shot alone on the other binary tasks of bench/_zero-shot-tasks.ts (amazon sentiment, each site
// one-vs-rest, spam) and the mean over all seven binary zero-shot tasks.
//
// `--chunks [--max-chars 2000]`: truncate 'end' against 'chunks' read three ways (pooling) on the
// SpamAssassin e-mails (easy ham / hard ham / spam, 8 examples per class, bodies up to 2,000
// characters as the accuracy bench's email task cuts them, or --max-chars), with frozen heads, and
// the embedding time per text of each.
//
// `--explain [--examples 200]`: a stored model's predict with and without explain: 3, beside the time
// to embed its examples again (what storing their embeddings saves an explain call).
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { Classifier, classify, closePool, train } from '../src/index.js';
import type { ClassifyResponse } from '../src/index.js';
import { clearClassifyHeads } from '../src/train/classify.js';
import { embedThroughBatcher, poolWindows, windowsOf } from '../src/predict/embed-windows.js';
import { headOf, kHeadC, targetsOf } from '../src/train/train.js';
import { runTask } from '../src/pool/pool.js';
import type { FitResult } from '../src/pool/tasks.js';
import { scoreTexts } from '../src/predict/batcher.js';
import { packHeads } from '../src/predict/call.js';
import { scoreSegments } from '../src/predict/head.js';
import { emailClasses, uciSentences, uciSites } from '../fixtures/corpora.js';
import { split, splitClasses } from '../fixtures/draw.js';
import { intOption } from './_common.js';
import { binaryZeroShotTasks } from './_zero-shot-tasks.js';

const kInputs = 8;
const kTestTexts = 480;
const kBatch = 96;

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

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
  const result = {
    inputs: kInputs,
    examples: examples.length,
    runs,
    predict,
    cached,
    uncached,
    loadavg: { before: loadBefore, after: load() },
  };
  if (json) return console.log(JSON.stringify(result, null, 2));
  console.log(
    `\n${kInputs} inputs, ${examples.length} examples, ${runs} calls each; load average (1, 5, 15 min) ${loadBefore} before, ${load()} after\n`,
  );
  console.log('| head | p50 ms | p90 ms |\n| --- | ---: | ---: |');
  console.log(`| predict path, same texts (no classify) | ${predict.p50.toFixed(1)} | ${predict.p90.toFixed(1)} |`);
  console.log(`| cached | ${cached.p50.toFixed(1)} | ${cached.p90.toFixed(1)} |`);
  console.log(`| uncached (embed 20 examples + fit) | ${uncached.p50.toFixed(1)} | ${uncached.p90.toFixed(1)} |`);
}

type Examples = Parameters<typeof classify>[1];
type Options = Parameters<typeof classify>[2];

/** Accuracy of `examples` + `options` on test texts, classified `kBatch` at a time; and the milliseconds per text. */
async function accuracyOf(
  texts: string[],
  expected: (string | boolean)[],
  examples: Examples,
  options: Options,
): Promise<{ accuracy: number; msPerText: number }> {
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
    const zero = await accuracyOf(
      zs.map((r) => r.text),
      zs.map((r) => r.label),
      [],
      { taskType: 'binary-classification', labelText: 'positive review' },
    );
    rows.push({ task, method: "zero-shot (label_text 'positive review')", accuracy: zero.accuracy });
    const few: number[] = [];
    for (let seed = 0; seed < seeds; seed++) {
      const { trainSet, testSet } = split(all, seed);
      const test = testSet.slice(0, kTestTexts);
      const examples = trainSet.map((r) => ({ text: r.text, label: r.label, label_text: 'positive' }));
      few.push(
        (
          await accuracyOf(
            test.map((r) => r.text),
            test.map((r) => r.label),
            examples,
            {},
          )
        ).accuracy,
      );
    }
    rows.push({ task, method: `20 examples, frozen head (mean of ${seeds} draws)`, accuracy: mean(few) });
  }
  const sites = uciSites().map((r) => ({ text: r.text, label: r.label as string }));
  // Every other row: the test rows of the three sites alike.
  const spread = (rows_: typeof sites) => rows_.filter((_, i) => i % Math.floor(rows_.length / kTestTexts) === 0).slice(0, kTestTexts);
  const zsTest = spread(splitClasses(sites, 0, 8).testSet);
  const zero = await accuracyOf(
    zsTest.map((r) => r.text),
    zsTest.map((r) => kSiteNames[r.label]!),
    [],
    {
      taskType: 'multi-class-classification',
      labels: Object.values(kSiteNames),
    },
  );
  rows.push({ task: 'sites', method: "zero-shot (labels 'movie', 'restaurant', 'product')", accuracy: zero.accuracy });
  const few: number[] = [];
  for (let seed = 0; seed < seeds; seed++) {
    const { trainSet, testSet } = splitClasses(sites, seed, 8);
    const test = spread(testSet);
    few.push(
      (
        await accuracyOf(
          test.map((r) => r.text),
          test.map((r) => r.label),
          trainSet,
          {},
        )
      ).accuracy,
    );
  }
  rows.push({ task: 'sites', method: `24 examples (8 per class), frozen head (mean of ${seeds} draws)`, accuracy: mean(few) });
  // The other binary zero-shot tasks (amazon sentiment, topics one-vs-rest, spam), then the mean of all seven.
  const binary = rows.filter((r) => r.method.startsWith('zero-shot') && r.task !== 'sites').map((r) => r.accuracy);
  for (const task of binaryZeroShotTasks().filter((t) => t.name !== 'imdb sentiment' && t.name !== 'yelp sentiment')) {
    const options = { taskType: 'binary-classification' as const, labelText: task.labelText };
    const { accuracy } = await accuracyOf(task.texts, task.expected, [], options);
    rows.push({ task: task.name, method: `zero-shot (label_text '${task.labelText}')`, accuracy });
    binary.push(accuracy);
  }
  rows.push({ task: `all ${binary.length} binary tasks`, method: 'zero-shot, mean', accuracy: mean(binary) });
  if (json) return console.log(JSON.stringify(rows, null, 2));
  console.log(`\n${kTestTexts} held-out texts per task; load average ${load()}\n`);
  console.log('| task | method | accuracy % |\n| --- | --- | ---: |');
  for (const r of rows) console.log(`| ${r.task} | ${r.method} | ${(100 * r.accuracy).toFixed(1)} |`);
}

/** A text's windows pooled into one embedding: the library's mean (normalized), or the element-wise max (normalized). */
function poolMax(windows: readonly (readonly string[])[], rows: Float32Array, dim: number): Float32Array {
  const out = new Float32Array(windows.length * dim);
  let row = 0;
  windows.forEach((parts, t) => {
    const v = out.subarray(t * dim, (t + 1) * dim);
    v.fill(-Infinity);
    for (let w = 0; w < parts.length; w++, row++) for (let j = 0; j < dim; j++) v[j] = Math.max(v[j]!, rows[row * dim + j]!);
    const norm = Math.hypot(...v) || 1;
    for (let j = 0; j < dim; j++) v[j]! /= norm;
  });
  return out;
}

/** Index of the largest of each row of `rows`-wide probabilities. */
const argmaxRows = (p: Float32Array, rows: number) =>
  Array.from({ length: p.length / rows }, (_, i) => {
    let best = 0;
    for (let k = 1; k < rows; k++) if (p[i * rows + k]! > p[i * rows + best]!) best = k;
    return best;
  });

/**
 * `--chunks`: which way of reading a long e-mail classifies it best with a frozen head, and what it costs.
 * Per draw, the train and test texts are embedded whole (what 'end' reads) and window by window
 * (what 'chunks' reads) through the library's batcher path; heads are fitted in the pool as classify
 * fits them. Poolings: the mean of the windows' embeddings (the library's), their element-wise max,
 * and the mean of the windows' probabilities (the head fitted on mean-pooled examples, applied to each
 * window). The cost is the embedding time of the test texts, whole against window by window.
 */
async function chunks(seeds: number, json: boolean, maxChars: number): Promise<void> {
  const mail = emailClasses(250, maxChars);
  const labels = [...new Set(mail.map((r) => r.label))].sort();
  const dim = 384;
  const methods = ['end', 'chunks: mean of embeddings', 'chunks: max of embeddings', 'chunks: mean of window probabilities'] as const;
  const right = new Map<string, number[]>(methods.map((m) => [m, []]));
  const ms = { end: [] as number[], chunks: [] as number[] };
  let windowsPerText = 0;
  for (let seed = 0; seed < seeds; seed++) {
    const { trainSet, testSet } = splitClasses(mail, seed, 8);
    const test = testSet.filter((_, i) => i % 2 === 0).slice(0, 192);
    const targets = targetsOf('multi-class-classification', trainSet, labels);
    const expected = test.map((r) => labels.indexOf(r.label));
    const embed = async (texts: string[]) => (await embedThroughBatcher('svc-small', texts, {})).embeddings;
    const fit = async (embeddings: Float32Array) =>
      packHeads([
        headOf(
          'softmax',
          await runTask<FitResult>({
            kind: 'fit',
            head: 'softmax',
            embeddings,
            targets,
            dim,
            C: kHeadC,
            balanced: false,
            validation: null,
            crossValidate: false,
          }),
        ),
      ]);
    const score = (table: ReturnType<typeof packHeads>, e: Float32Array) =>
      scoreSegments(e, dim, Int32Array.of(e.length / dim), Int32Array.of(0), table);
    const accuracy = (p: Float32Array) => argmaxRows(p, labels.length).filter((k, i) => k === expected[i]).length / test.length;

    const trainWhole = await embed(trainSet.map((r) => r.text));
    let start = performance.now();
    const testWhole = await embed(test.map((r) => r.text));
    ms.end.push((performance.now() - start) / test.length);
    right.get('end')!.push(accuracy(score(await fit(trainWhole), testWhole)));

    const trainWindows = windowsOf(
      trainSet.map((r) => r.text),
      'chunks',
    ).windows;
    const testWindows = windowsOf(
      test.map((r) => r.text),
      'chunks',
    ).windows;
    windowsPerText += testWindows.flat().length / test.length / seeds;
    const trainRows = await embed(trainWindows.flat());
    start = performance.now();
    const testRows = await embed(testWindows.flat());
    ms.chunks.push((performance.now() - start) / test.length);
    const meanHead = await fit(poolWindows(trainWindows, trainRows, dim));
    right.get('chunks: mean of embeddings')!.push(accuracy(score(meanHead, poolWindows(testWindows, testRows, dim))));
    right
      .get('chunks: max of embeddings')!
      .push(accuracy(score(await fit(poolMax(trainWindows, trainRows, dim)), poolMax(testWindows, testRows, dim))));
    // Each window scored alone, its text's probabilities the mean of its windows'.
    const perWindow = score(meanHead, testRows);
    const averaged = new Float32Array(test.length * labels.length);
    let row = 0;
    testWindows.forEach((parts, t) => {
      for (let w = 0; w < parts.length; w++, row++)
        for (let k = 0; k < labels.length; k++) averaged[t * labels.length + k]! += perWindow[row * labels.length + k]! / parts.length;
    });
    right.get('chunks: mean of window probabilities')!.push(accuracy(averaged));
  }
  const rows = methods.map((method) => ({
    method,
    accuracy: mean(right.get(method)!),
    msPerText: mean(method === 'end' ? ms.end : ms.chunks),
  }));
  if (json) return console.log(JSON.stringify({ maxChars, seeds, windowsPerText, rows }, null, 2));
  console.log(
    `\nSpamAssassin e-mails up to ${maxChars} characters, 8 examples per class, 192 test texts, ${seeds} draws; ` +
      `${windowsPerText.toFixed(2)} windows per test text; load average ${load()}\n`,
  );
  console.log('| reading | accuracy % | embedding ms per test text | cost vs end |\n| --- | ---: | ---: | ---: |');
  for (const r of rows)
    console.log(
      `| ${r.method} | ${(100 * r.accuracy).toFixed(1)} | ${r.msPerText.toFixed(1)} | ${(r.msPerText / rows[0]!.msPerText).toFixed(2)}x |`,
    );
}

/**
 * `--explain`: what explain costs on a stored model, and what storing the examples' embeddings saves.
 * A frozen binary model on `examples` IMDB sentences is saved and loaded; then, over `runs` calls of
 * 8 texts each: predict (no explain), predict with explain: 3 (the examples read from the model
 * directory on each call), and the examples embedded again, which is what an explain call would
 * pay if the model kept only their texts.
 */
async function explainCost(runs: number, examplesCount: number, json: boolean): Promise<void> {
  const all = uciSentences('imdb');
  const rows = [...all.filter((r) => r.label).slice(0, examplesCount / 2), ...all.filter((r) => !r.label).slice(0, examplesCount / 2)];
  const inputs = all.slice(-kInputs).map((r) => r.text);
  const trained = await train({
    model: 'svc-small',
    task_type: 'binary-classification',
    finetune: false,
    examples: rows.map((r) => ({ text: r.text, label: r.label, label_text: 'positive' })),
  });
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-explain-'));
  try {
    await trained.save(dir);
    trained.dispose();
    const model = await Classifier.load(dir);
    await model.predict(inputs, { explain: 3 }); // warm-up
    const time = async (work: () => Promise<unknown>) => {
      const ms: number[] = [];
      for (let i = 0; i < runs; i++) {
        const start = performance.now();
        await work();
        ms.push(performance.now() - start);
      }
      return { p50: percentile(ms, 0.5), p90: percentile(ms, 0.9) };
    };
    const plain = await time(() => model.predict(inputs));
    const explained = await time(() => model.predict(inputs, { explain: 3 }));
    const reembed = await time(() =>
      embedThroughBatcher(
        'svc-small',
        rows.map((r) => r.text),
        {},
      ),
    );
    const result = { examples: rows.length, inputs: kInputs, runs, plain, explained, reembed, loadavg: load() };
    if (json) return console.log(JSON.stringify(result, null, 2));
    console.log(`\n${kInputs} inputs, a model of ${rows.length} examples, ${runs} calls each; load average ${load()}\n`);
    console.log('| call | p50 ms | p90 ms |\n| --- | ---: | ---: |');
    console.log(`| predict | ${plain.p50.toFixed(1)} | ${plain.p90.toFixed(1)} |`);
    console.log(
      `| predict, explain: 3 (examples read from the model's files) | ${explained.p50.toFixed(1)} | ${explained.p90.toFixed(1)} |`,
    );
    console.log(`| embedding the ${rows.length} examples again (not stored) | ${reembed.p50.toFixed(1)} | ${reembed.p90.toFixed(1)} |`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  try {
    if (args.includes('--accuracy')) await zeroShot(intOption(args, 'seeds', 3), json);
    else if (args.includes('--explain')) await explainCost(intOption(args, 'runs', 10), intOption(args, 'examples', 200), json);
    else if (args.includes('--chunks')) await chunks(intOption(args, 'seeds', 3), json, intOption(args, 'max-chars', 2000));
    else await latency(intOption(args, 'runs', 30), json);
  } finally {
    await closePool();
  }
}
