// The piscina worker entry (tsup builds it to dist/worker.js): all native work runs here,
// never on the main thread. Each worker keeps one encoder per base model, shared by every
// classifier on it; results go back transferred, not copied.
import { statSync } from 'node:fs';
import { setPriority } from 'node:os';
import { BroadcastChannel, threadId } from 'node:worker_threads';

import { move, workerData } from 'piscina';

import { SvcError } from '../errors.js';
import { isAdapterFile } from '../model/adapter.js';
import { adoptBaseModels, resolveBaseModel } from '../model/base-models.js';
import { writeMergedTransformersDir } from '../model/merged-export.js';
import { writeModelDir } from '../model/write.js';
import { Encoder } from '../native/encoder.js';
import { resolvePrecision } from '../native/encoder.js';
import type { PrecisionSetting } from '../native/encoder.js';
import { kernelChoice } from '../native/kernel-choice.js';
import type { TruncationSide } from '../native/tokenizer.js';
import { cpuInfo } from '../native/index.js';
import { scoreSegments } from '../predict/head.js';
import { fitAndMeasure } from '../train/fit-head.js';
import { AdapterCache } from './adapter-cache.js';
import { baseEncoderOptions, promptedTexts } from './base-model-use.js';
import { embedTexts, tokenizerFor } from './embed-texts.js';
import { finetune, movedResult } from './finetune.js';
import { nearestExamples } from './nearest-search.js';
import { withSetup } from './warm-up.js';
import { kEncoderChannel, kWorkerError } from '../pool/tasks.js';
import type {
  AdapterTask,
  EmbedTask,
  FitsTask,
  PingResult,
  PoolTask,
  PooledTask,
  PredictResult,
  PredictTask,
  SaveTask,
  WorkerSettings,
} from '../pool/tasks.js';

const settings = workerData as WorkerSettings;

// On Linux a nice value belongs to a thread: lowering this worker's (before the engine starts
// its threads, which inherit it) lets the host's event loop win a busy CPU. Elsewhere it is
// process-wide or refused, so it is only applied where it is per thread.
if (process.platform === 'linux' && settings.niceness > 0) {
  try {
    setPriority(settings.niceness);
  } catch {
    // not permitted: keep the normal priority
  }
}
/**
 * Fine-tuning runs further below normal priority than the workers: on a contended CPU a
 * prediction's engine thread wins over a training step's (CFS weights 335 against 36), so the
 * cores training shares with predictions go to predictions first.
 */
const kTrainingNiceness = 15;

/**
 * Runs `work` with this thread, and the engine threads it starts, at the training priority, until
 * it returns or, for a promise, settles (a worker runs one task at a time, so nothing else runs on
 * this thread meanwhile).
 */
async function atTrainingPriority<T>(work: () => T | Promise<T>): Promise<T> {
  if (process.platform !== 'linux' || settings.niceness >= kTrainingNiceness) return work();
  try {
    setPriority(kTrainingNiceness);
  } catch {
    return work();
  }
  try {
    return await work();
  } finally {
    try {
      setPriority(settings.niceness);
    } catch {
      // Raising a thread's priority back needs CAP_SYS_NICE: without it this worker stays at the
      // training priority, which only ever puts it behind other work, never ahead.
    }
  }
}

// Base encoders, by precision and base model name: always kept.
const encoders = new Map<string, Encoder>();
/** Adapter models' adapters, predicted on the base encoders above (the segmented path). */
const adapters = new AdapterCache(settings.adapterCacheBytes);
/**
 * Fine-tuned encoders by weight file, least recently used first, at most 4 (about 90 MB each in
 * fp32, shared by the workers of the process); a disposed classifier's goes at once. An adapter model lands here
 * only when training embeds with its adapter merged (fp32, as its ONNX export computes). `identity`
 * tells a model saved again to the same path from the one loaded.
 */
const finetuned = new Map<string, { identity: string; encoder: Encoder }>();
const kMaxFinetunedEncoders = 4;
// Encoders this worker loaded: a predict task that loaded one warms it up and says so (warm-up.ts).
let encoderLoads = 0;

/** `model`: the base model's name or a fine-tuned encoder's weights; either way pooled as `baseModel` says. */
function loadEncoder(model: string, baseModel: string, precision: PrecisionSetting, adapter?: string): Encoder {
  encoderLoads++;
  return Encoder.fromPretrained(model, {
    precision,
    threads: settings.predictThreads,
    ...baseEncoderOptions(baseModel),
    ...(adapter ? { adapter } : {}),
  });
}

/**
 * The base model's encoder, or a fine-tuned model's (`encoderFile`: its weights or its adapter), loaded on first use. Training
 * embeds in fp32, so that a head is fitted on the numbers the exported ONNX model computes; predictions
 * run in the pool's precision (a fine-tuned model predicts in it too).
 */
function encoderFor(baseModel: string, encoderFile: string | null, precision: PrecisionSetting): Encoder {
  if (encoderFile === null) {
    const key = `${precision}:${baseModel}`;
    let encoder = encoders.get(key);
    if (!encoder) {
      encoder = loadEncoder(baseModel, baseModel, precision);
      encoders.set(key, encoder);
    }
    return encoder;
  }
  const { ino, size, mtimeMs } = statSync(encoderFile);
  const identity = `${ino}:${size}:${mtimeMs}`;
  let entry = finetuned.get(encoderFile);
  if (entry?.identity !== identity) {
    forget(encoderFile);
    // An adapter model's encoder is its base with the adapter merged in (a private copy, like a fine-tuned one's).
    const encoder = isAdapterFile(encoderFile)
      ? loadEncoder(baseModel, baseModel, precision, encoderFile)
      : loadEncoder(encoderFile, baseModel, precision);
    entry = { identity, encoder };
  }
  finetuned.delete(encoderFile); // re-inserted last: most recently used
  finetuned.set(encoderFile, entry);
  for (const [file] of finetuned) {
    if (finetuned.size <= kMaxFinetunedEncoders) break;
    forget(file);
  }
  return entry.encoder;
}

function forget(encoderFile: string): void {
  adapters.forget(encoderFile);
  finetuned.get(encoderFile)?.encoder.dispose();
  finetuned.delete(encoderFile);
}

// Disposed fine-tuned classifiers are announced here (see `forgetEncoder` in pool.ts), and each
// worker drops its copy before its next task. (Piscina parks idle workers in Atomics.wait, so
// messages are only read when a task gives the event loop a turn: see `run`.)
const forgotten = new BroadcastChannel(kEncoderChannel);
forgotten.unref();
forgotten.onmessage = (event) => forget((event as { data: { encoderFile: string } }).data.encoderFile);

function embed(task: EmbedTask): Float32Array {
  const precision = task.asPredicted === true ? settings.precision : 'fp32';
  const encoder = encoderFor(task.baseModel, task.encoderFile ?? null, precision);
  return embedTexts(task.baseModel, encoder, task.texts, undefined, task.truncate).embeddings;
}

// The tokenizer alone: no encoder is loaded for the check.
function fits(task: FitsTask): Uint8Array {
  const texts = promptedTexts(task.baseModel, task.texts);
  return tokenizerFor(task.baseModel).encodeBatch(texts, { maxLength: resolveBaseModel(task.baseModel).maxLength }).truncated;
}

function predict(task: PredictTask): PredictResult {
  const adapterFiles = task.adapters?.some((file) => file !== null) ? task.adapters : null;
  // Adapter models share the base encoder.
  const { encoder, setup } = withSetup(
    task.baseModel,
    () => encoderLoads,
    () => encoderFor(task.baseModel, adapterFiles ? null : task.encoderFile, settings.precision),
  );
  const result = adapterFiles ? predictThroughAdapters(task, encoder, adapterFiles) : predictOn(task, encoder);
  if (setup) result.setup = setup;
  return result;
}

/** Each text's side of a predict batch (its call's `truncate`). */
function sidesOf(task: PredictTask): TruncationSide[] | undefined {
  return task.fromStart && Array.from(task.fromStart, (fromStart): TruncationSide => (fromStart === 1 ? 'start' : 'end'));
}

function predictOn(task: PredictTask, encoder: Encoder): PredictResult {
  const { embeddings, truncated, unknownShare } = embedTexts(task.baseModel, encoder, task.texts, undefined, sidesOf(task));
  const probabilities = scoreSegments(embeddings, encoder.dim, task.counts, task.heads, task.table);
  return { probabilities, truncated, unknownShare };
}

/** One base encoder for every adapter model of the batch: each segment's texts go through its model's adapter. */
function predictThroughAdapters(task: PredictTask, encoder: Encoder, files: (string | null)[]): PredictResult {
  const held = adapters.acquire(task.baseModel, files);
  let embedded;
  try {
    const segments = { counts: task.counts, adapters: held.map((entry) => entry?.adapter ?? null) };
    embedded = embedTexts(task.baseModel, encoder, task.texts, segments, sidesOf(task));
  } finally {
    adapters.release(held);
  }
  const probabilities = scoreSegments(embedded.embeddings, encoder.dim, task.counts, task.heads, task.table);
  // After the release: the bytes held once this batch's pins are gone.
  const { hits, misses, evictions, bytes } = adapters.stats();
  const { truncated, unknownShare } = embedded;
  return { probabilities, truncated, unknownShare, adapterCache: { worker: threadId, hits, misses, evictions, bytes } };
}

/** Reads and checks an adapter into this worker's cache (a hit when it is there and unchanged). */
function loadAdapter(task: AdapterTask): void {
  adapters.release(adapters.acquire(task.baseModel, [task.file]));
}

async function save(task: SaveTask): Promise<void> {
  await writeModelDir(task.dir, task.manifest, task.head, task.encoderFile, { transformersJs: task.transformersJs });
}

function ping(): PingResult {
  const { precision, predictThreads } = settings;
  return {
    threadId,
    engineThreads: settings.engineThreads,
    predictThreads,
    cpuLevel: cpuInfo().level,
    precision: resolvePrecision(precision, predictThreads),
    // Measured (or read from the cache) only where the setting asks for a choice.
    kernels: precision === 'auto' || precision === 'bf16' ? kernelChoice(predictThreads) : null,
  };
}

async function dispatch(task: PoolTask): Promise<unknown> {
  switch (task.kind) {
    // Every task but predict and ping belongs to a training job: all of it, not only the fine-tuning
    // steps, yields the CPU to predictions (a job's last stages, fitting the head with its
    // cross-validation and writing the model and its ONNX copy, take seconds too).
    case 'embed':
      return move(await atTrainingPriority(() => embed(task)));
    case 'predict':
      // Three small arrays (13 bytes a text): copied with the object rather than moved one by one.
      return predict(task);
    case 'adapter':
      return loadAdapter(task);
    case 'fit':
      return atTrainingPriority(() => fitAndMeasure(task));
    case 'finetune':
      return atTrainingPriority(() => movedResult(finetune(task)));
    case 'save':
      return atTrainingPriority(() => save(task));
    case 'export-merged':
      // Built for a hub download, not a prediction: it yields the CPU like training does.
      return atTrainingPriority(() => writeMergedTransformersDir(task.modelDir, task.outDir));
    case 'ping':
      return ping();
    case 'fits':
      return fits(task);
    case 'nearest':
      // Answers a call: at the workers' own priority, as predictions.
      return nearestExamples(task);
  }
}

/**
 * Runs one pool task. An SvcError comes back as a value, because errors lose their extra
 * fields (code, param) when they cross threads.
 */
export default async function run(task: PooledTask): Promise<unknown> {
  // One turn of the event loop: delivers the forget announcements that came while parked.
  await new Promise((resolve) => setImmediate(resolve));
  try {
    if (task.baseModels) adoptBaseModels(task.baseModels);
    return await dispatch(task);
  } catch (error) {
    if (error instanceof SvcError) return { [kWorkerError]: { code: error.code, message: error.message, param: error.param } };
    throw error;
  }
}
