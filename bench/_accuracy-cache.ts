// Each draw's embeddings by one body (frozen base, LoRA adapter, fully fine-tuned encoder), computed
// once and kept on disk: the training examples, the test texts and the label words' template
// sentences, all by the body train() would build for that draw. Head-level levers are then measured
// in seconds on every draw instead of a fine-tuning run each.
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { kDefaultAdapterRank, validateTrainRequest } from '../src/index.js';
import { labelNames, numIterations } from '../src/train/request.js';
import type { MultiClassTrainRequest, TaskType, TrainRequest } from '../src/index.js';
import { forgetEncoder, poolOptions, poolThreads, runTask } from '../src/pool/pool.js';
import { kDefaultSeed } from '../src/random.js';
import { runFinetuneStage } from '../src/train/finetune-stage.js';
import { labelWordTexts } from '../src/train/label-words.js';
import type { ExampleTargets } from '../src/train/pairs.js';
import { targetsOf } from '../src/train/train.js';
import type { Draw, Task } from './_accuracy-tasks.js';

export type Body = 'frozen' | 'adapter' | 'full' | 'full-wordpairs' | 'adapter-seed2' | 'adapter-seed3';
export const kBodies: readonly Body[] = ['frozen', 'adapter', 'full'];
/**
 * Bodies of the untried levers: `full-wordpairs` fine-tunes the whole encoder with the label words'
 * template sentences among the examples of the contrastive pairs (rounds scaled down so the pairs and
 * steps stay as many as the examples alone make); `adapter-seed2` / `-seed3` are the adapter trained
 * with another seed (the draw's seed + 1000 / + 2000), the members of an ensemble.
 */
export const kLeverBodies: readonly Body[] = ['full-wordpairs', 'adapter-seed2', 'adapter-seed3'];

/** The seed a body's fine-tuning runs with on a draw whose training seed is `seed`. */
function bodySeed(body: Body, seed: number): number {
  return body === 'adapter-seed2' ? seed + 1000 : body === 'adapter-seed3' ? seed + 2000 : seed;
}

/** Class targets of `a` then `b`. */
function concatClasses(a: ExampleTargets, b: ExampleTargets): ExampleTargets {
  if (a.kind !== 'classes' || b.kind !== 'classes') throw new TypeError('word pairs are measured on single-label tasks');
  const classes = new Int32Array(a.classes.length + b.classes.length);
  classes.set(a.classes);
  classes.set(b.classes, a.classes.length);
  return { kind: 'classes', classes, count: a.count };
}

/** One draw as the head sees it: embeddings (rows x dim) and targets of examples, test texts and label words. */
export interface DrawEmbeddings {
  dim: number;
  taskType: TaskType;
  train: Float32Array;
  targets: ExampleTargets;
  test: Float32Array;
  testTargets: ExampleTargets;
  words: Float32Array;
  wordTargets: ExampleTargets;
  /** Seconds the body took to fine-tune (0 for frozen), on the machine that filled the cache. */
  bodySeconds: number;
}

const kChunk = 64;
const kDim = 384;

/** Embeddings of `texts` by the base encoder or `encoderFile`, in chunks over every worker. */
async function embed(texts: string[], encoderFile: string | null): Promise<Float32Array> {
  const out = new Float32Array(texts.length * kDim);
  const starts: number[] = [];
  for (let s = 0; s < texts.length; s += kChunk) starts.push(s);
  let next = 0;
  const lane = async () => {
    while (next < starts.length) {
      const start = starts[next++]!;
      const vectors = await runTask<Float32Array>({
        kind: 'embed',
        baseModel: 'svc-small',
        encoderFile,
        texts: texts.slice(start, start + kChunk),
      });
      out.set(vectors, start * kDim);
    }
  };
  await Promise.all(Array.from({ length: poolOptions().workers }, lane));
  return out;
}

/** The base encoder's embedding of each text seen so far in this process: frozen draws share their test texts. */
const baseMemo = new Map<string, Float32Array>();

async function embedBase(texts: string[]): Promise<Float32Array> {
  const missing = [...new Set(texts.filter((t) => !baseMemo.has(t)))];
  const fresh = await embed(missing, null);
  missing.forEach((t, i) => baseMemo.set(t, fresh.subarray(i * kDim, (i + 1) * kDim)));
  const out = new Float32Array(texts.length * kDim);
  texts.forEach((t, i) => out.set(baseMemo.get(t)!, i * kDim));
  return out;
}

/** The request train() would validate for this draw and body. */
function requestOf(draw: Draw, body: Body): TrainRequest {
  const finetune =
    body === 'frozen'
      ? false
      : body === 'full' || body === 'full-wordpairs'
        ? { method: 'full' as const }
        : { method: 'adapter' as const, rank: kDefaultAdapterRank };
  return validateTrainRequest({ model: 'svc-small', ...draw.request, finetune } as TrainRequest);
}

function labelsOf(request: TrainRequest): string[] | null {
  return request.task_type === 'binary-classification' ? null : labelNames(request as MultiClassTrainRequest);
}

/** Texts, targets and label words of a draw, in the head's label order. */
function drawParts(draw: Draw, request: TrainRequest) {
  const labels = labelsOf(request);
  const words =
    request.task_type === 'binary-classification'
      ? labelWordTexts('binary-classification', request.examples[0]!.label_text)
      : labelWordTexts(request.task_type, labels!);
  const testTargets: ExampleTargets =
    labels === null
      ? { kind: 'classes', classes: Int32Array.from(draw.expected, (e) => (e ? 1 : 0)), count: 2 }
      : { kind: 'classes', classes: Int32Array.from(draw.expected, (e) => labels.indexOf(e as string)), count: labels.length };
  return {
    trainTexts: request.examples.map((e) => e.text),
    targets: targetsOf(request.task_type, request.examples, labels),
    testTargets,
    words,
  };
}

async function compute(draw: Draw, body: Body): Promise<{ all: Float32Array; bodySeconds: number }> {
  const request = requestOf(draw, body);
  const parts = drawParts(draw, request);
  const texts = [...parts.trainTexts, ...draw.testTexts, ...parts.words.texts];
  if (body === 'frozen') return { all: await embedBase(texts), bodySeconds: 0 };
  const started = performance.now();
  const wordPairs = body === 'full-wordpairs';
  const n = parts.trainTexts.length;
  const all = n + parts.words.texts.length;
  const encoder = await runFinetuneStage({
    baseModel: 'svc-small',
    texts: wordPairs ? [...parts.trainTexts, ...parts.words.texts] : parts.trainTexts,
    targets: wordPairs ? concatClasses(parts.targets, parts.words.targets) : parts.targets,
    // With the words among the paired texts, fewer rounds give as many pairs (and steps) as the examples alone.
    iterations: wordPairs ? Math.max(1, Math.round((numIterations(request) * n) / all)) : numIterations(request),
    seed: bodySeed(body, draw.options.seed ?? kDefaultSeed),
    threads: poolThreads(),
    adapterRank: body.startsWith('adapter') ? kDefaultAdapterRank : null,
  });
  const bodySeconds = (performance.now() - started) / 1000;
  try {
    // As train() predicts: through the encoder file as saved (an adapter in fp16, merged at load).
    return { all: await embed(texts, encoder.encoderFile), bodySeconds };
  } finally {
    forgetEncoder(encoder.encoderFile);
    await rm(encoder.dir, { recursive: true, force: true });
  }
}

/** The draw's embeddings by `body`, from `cacheDir` when there, else computed (fine-tuning if need be) and stored. */
export async function drawEmbeddings(task: Task, seed: number, body: Body, cacheDir: string): Promise<DrawEmbeddings> {
  const draw = task.draw(seed);
  const request = requestOf(draw, body);
  const parts = drawParts(draw, request);
  const file = join(cacheDir, `${task.name}-${seed}-${body}`);
  let all: Float32Array;
  let bodySeconds: number;
  if (existsSync(`${file}.json`)) {
    const buffer = await readFile(`${file}.f32`);
    all = new Float32Array(buffer.buffer, buffer.byteOffset, buffer.byteLength / 4);
    bodySeconds = (JSON.parse(await readFile(`${file}.json`, 'utf8')) as { bodySeconds: number }).bodySeconds;
  } else {
    ({ all, bodySeconds } = await compute(draw, body));
    await mkdir(cacheDir, { recursive: true });
    await writeFile(`${file}.f32`, new Uint8Array(all.buffer, all.byteOffset, all.byteLength));
    // Written last: its presence says the embeddings beside it are complete.
    await writeFile(`${file}.json`, JSON.stringify({ bodySeconds, rows: all.length / kDim }));
  }
  const n = parts.trainTexts.length;
  const t = draw.testTexts.length;
  if (all.length !== (n + t + parts.words.texts.length) * kDim) throw new Error(`${file}.f32 does not hold this draw's rows`);
  return {
    dim: kDim,
    taskType: request.task_type,
    train: all.subarray(0, n * kDim),
    targets: parts.targets,
    test: all.subarray(n * kDim, (n + t) * kDim),
    testTargets: parts.testTargets,
    words: all.subarray((n + t) * kDim),
    wordTargets: parts.words.targets,
    bodySeconds,
  };
}

/** The share of rows whose most probable class (row-major `p`, one row per expected class) is the expected one. */
export function argmaxAccuracy(p: Float64Array, expected: ArrayLike<number>): number {
  const classes = p.length / expected.length;
  let correct = 0;
  for (let i = 0; i < expected.length; i++) {
    let best = 0;
    for (let k = 1; k < classes; k++) if (p[i * classes + k]! > p[i * classes + best]!) best = k;
    if (best === expected[i]) correct++;
  }
  return correct / expected.length;
}
