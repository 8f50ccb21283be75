// The one piscina pool that runs all native work. Only this module decides which thread runs
// what; everything else awaits `runTask`.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { debuglog } from 'node:util';
import { BroadcastChannel } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';

import { Piscina } from 'piscina';

import { SvcError, fromNativeError } from '../errors.js';
import { checkPrecision } from '../native/encoder.js';
import { cpuInfo } from '../native/index.js';
import type { PrecisionSetting } from '../native/encoder.js';
import type { SvcErrorCode } from '../errors.js';
import { BackgroundGate } from './background-gate.js';
import { kEncoderChannel, kWorkerError } from './tasks.js';
import type { PoolTask, PooledTask, WorkerError, WorkerSettings } from './tasks.js';
import { baseModelRegistrations } from '../model/base-models.js';
import * as is from '../is.js';

const debug = debuglog('svc');

/** Options of {@link configurePool}; all optional. */
export interface PoolOptions {
  /** Worker threads, each with its own encoders. */
  workers?: number;
  /** Threads each worker's engine uses. Keep workers x engineThreads <= cores. */
  engineThreads?: number;
  /**
   * Arithmetic of the encoders that predict: `auto` (default: bf16 where it measured faster than fp32 on this CPU,
   * with embeddings within cosine 0.9999 of fp32's and probabilities within 1e-3; fp32 elsewhere: `kernelChoice`),
   * `fp32` (probabilities equal the exported ONNX model's within 1e-3), `int8` (about 3x faster on CPUs with VNNI,
   * probabilities within about 0.01 of fp32's: docs/benchmarks.md, "HTTP predict") or `bf16` (on CPUs with bf16
   * products). Training always embeds in fp32.
   */
  precision?: PrecisionSetting;
  /**
   * Bytes of LoRA adapters each worker keeps in memory, least recently used evicted first (default 256 MiB: about
   * 400 adapters of rank 8 on all six linear layers of svc-small, 0.66 MB each in fp16 as the file holds them). A model whose adapter left
   * reads it again on its next predict (a few milliseconds).
   */
  adapterCacheBytes?: number;
}

/** {@link PoolOptions.adapterCacheBytes}'s default. */
export const kDefaultAdapterCacheBytes = 256 * 2 ** 20;

export type ResolvedPoolOptions = Required<PoolOptions>;

/**
 * Two workers (one on a single core), each engine on its share of the cores. With two, a long
 * task (saving a model builds its ONNX file, ~0.8 s) never holds up predictions, and on a
 * busy machine one-thread engines beat two threads that wait on each other; `npm run bench --
 * pool` measured both layouts (docs/engine.md, "Threads").
 */
function defaultPoolOptions(): ResolvedPoolOptions {
  const cores = availableParallelism();
  const workers = Math.min(2, cores);
  return {
    workers,
    engineThreads: Math.max(1, Math.floor(cores / workers)),
    precision: 'auto',
    adapterCacheBytes: kDefaultAdapterCacheBytes,
  };
}

/** Workers run a little below normal priority: native work yields the CPU to the host's event loop. */
const kWorkerNiceness = 5;

let configured: ResolvedPoolOptions | undefined;
let pool: Piscina | undefined;
// Tasks given to the pool and not finished, running or waiting in piscina's queue: while they are as many
// as the workers, a new task would wait in that queue, where no limit or deadline applies; the predict
// batcher holds its calls back instead (see `freePredictSlots`) and is told when a task ends.
let tasksInPool = 0;
// Predict tasks among them.
let predictsInPool = 0;
const taskEndListeners = new Set<() => void>();

/** What the pool is doing now (zeros before its first task). */
export interface PoolStats {
  /** Worker threads. */
  workers: number;
  /** Workers running a task. */
  busy: number;
  /** Tasks waiting for a free worker. */
  queued: number;
}

/** The pool's state for monitoring (`svc_pool_*` on /metrics). */
export function poolStats(): PoolStats {
  const workers = poolOptions().workers;
  if (!pool) return { workers, busy: 0, queued: 0 };
  return { workers, busy: Math.min(tasksInPool, workers), queued: pool.queueSize };
}

function checkCount(value: unknown, name: string): void {
  if (value !== undefined) is.positiveInteger(value, name);
}

/**
 * Sets the pool's size before its first task. Calling it once the pool runs is an error
 * (call {@link closePool} first).
 *
 * @example
 * ```ts
 * import { configurePool } from 'svc-classify';
 * configurePool({ workers: 2, engineThreads: 1 });
 * ```
 */
export function configurePool(options: PoolOptions = {}): ResolvedPoolOptions {
  checkCount(options.workers, 'options.workers');
  checkCount(options.engineThreads, 'options.engineThreads');
  if (options.precision !== undefined) checkPrecision(options.precision, 'options.precision');
  if (options.adapterCacheBytes !== undefined) is.nonNegativeInteger(options.adapterCacheBytes, 'options.adapterCacheBytes');
  if (pool) throw new SvcError('conflict', 'configurePool must be called before the pool starts (call closePool first)');
  const cores = availableParallelism();
  const wanted = { ...defaultPoolOptions(), ...definedOnly(options) };
  // Given only one of the two, the other follows so that the product fits the cores.
  if (options.workers !== undefined && options.engineThreads === undefined) {
    wanted.engineThreads = Math.max(1, Math.floor(cores / wanted.workers));
  }
  if (wanted.workers * wanted.engineThreads > cores) {
    throw new RangeError(
      `options.workers x options.engineThreads must be at most the ${cores} available cores (got ${wanted.workers} x ${wanted.engineThreads})`,
    );
  }
  configured = wanted;
  return configured;
}

// A flag left out arrives as an undefined field: it must not hide the default.
function definedOnly(options: PoolOptions): PoolOptions {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as PoolOptions;
}

/** The pool's size as it is or will be. */
export function poolOptions(): ResolvedPoolOptions {
  return configured ?? defaultPoolOptions();
}

/** Engine threads of the whole pool (workers x engine threads): what a task may use when no other one runs. */
export function poolThreads(): number {
  const options = poolOptions();
  return options.workers * options.engineThreads;
}

/**
 * Training's share of the pool: how many workers may run training tasks at once. All but one, so that
 * a worker, and the cores its engine threads use, is always left for predictions however many jobs
 * train (with one worker there is nothing to keep back: training and predictions take turns).
 */
export function trainingWorkers(): number {
  return Math.max(1, poolOptions().workers - 1);
}

/**
 * Tasks that answer a predict call at once and run in milliseconds: they never wait behind training. Every other
 * kind (embedding and fine-tuning for training, head fits, explain's neighbour search, saving, merged exports) is
 * background work and takes its tenant's turn in {@link backgroundGate}.
 */
const kForegroundKinds: ReadonlySet<PoolTask['kind']> = new Set(['predict', 'adapter', 'ping']);

// Off by default: the library's own train() may use every worker; a service keeps one for predictions.
let keepPredictWorker = false;

/**
 * Keeps (true) or stops keeping a worker for predictions: background work then runs on at most
 * {@link trainingWorkers} workers at once, however much of it is queued. The service's runtime keeps one; the
 * library alone lets its own training use every worker.
 */
export function keepWorkerForPredictions(keep: boolean): void {
  keepPredictWorker = keep;
  backgroundGate.poke();
}

/** Background tasks in front of the pool: training's share of the workers when one is kept for predictions, tenants in turn. */
const backgroundGate = new BackgroundGate(() => (keepPredictWorker ? trainingWorkers() : poolOptions().workers));

/** Background tasks running and waiting for their turn (tests, /metrics). */
export function backgroundStats(): { running: number; waiting: number } {
  return backgroundGate.stats;
}

/**
 * Where the worker entry is. Built: dist/worker.js (or .cjs) next to the bundle that runs
 * this code. From the TypeScript sources (tests, `tsx`): src/worker/worker.ts, run through
 * tsx's loader in the worker.
 */
export function workerEntry(): { filename: string; execArgv: string[] } {
  const self = fileURLToPath(import.meta.url);
  const dir = dirname(self);
  const extension = extname(self);
  if (extension === '.ts') {
    // Resolved from here, so the worker finds tsx whatever the current directory is.
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    return { filename: join(dir, '..', 'worker', 'worker.ts'), execArgv: ['--import', tsx] };
  }
  const filename = join(dir, `worker${extension === '.cjs' ? '.cjs' : '.js'}`);
  if (!existsSync(filename)) throw new SvcError('internal', `svc-classify: the pool worker ${filename} is missing`);
  return { filename, execArgv: [] };
}

function startPool(): Piscina {
  const options = poolOptions();
  const { filename, execArgv } = workerEntry();
  const workerData: WorkerSettings = {
    engineThreads: options.engineThreads,
    predictThreads: poolThreads(),
    niceness: kWorkerNiceness,
    precision: options.precision,
    adapterCacheBytes: options.adapterCacheBytes,
  };
  // Say where the operator looks what a setting that depends on the CPU becomes (each worker resolves 'auto' itself,
  // from the same cached measurement; a ping task reports it).
  const precision =
    options.precision === 'bf16' && !cpuInfo().bf16
      ? 'bf16 (fp32 products: this CPU has no bf16 products)'
      : options.precision === 'auto'
        ? 'auto (bf16 where measured faster, else fp32)'
        : options.precision;
  debug('pool: %d worker(s) x %d engine thread(s), predicting in %s, %s', options.workers, options.engineThreads, precision, filename);
  return new Piscina({
    filename,
    // Not the parent's flags: a CLI's own loaders (tsx, vitest) are no business of the worker.
    execArgv,
    workerData,
    minThreads: options.workers,
    maxThreads: options.workers,
    // Workers hold loaded encoders: keep them while the pool lives.
    idleTimeout: Infinity,
  });
}

function currentPool(): Piscina {
  pool ??= startPool();
  return pool;
}

/** Workers with no task. */
function freeWorkers(): number {
  return Math.max(0, poolOptions().workers - tasksInPool);
}

/**
 * Predict batches the batcher may send now: one at a time, on a free worker. A predicting encoder has
 * every core of the pool, so a second batch at once would put twice as many engine threads as cores to
 * work, and each of the forward pass's fork-joins would wait for a thread the OS had set aside. One
 * batch with all the cores, while the next one gathers, cost less CPU a request and gave a lower p99
 * at concurrency 8 (docs/benchmarks.md, "Pool layout").
 */
export function freePredictSlots(): number {
  return predictsInPool > 0 ? 0 : Math.min(1, freeWorkers());
}

/** Calls `listener` after every task ends (a worker came free); returns the function that stops it. */
export function onTaskEnd(listener: () => void): () => void {
  taskEndListeners.add(listener);
  return () => taskEndListeners.delete(listener);
}

/** How a background task waits for its turn in the gate. */
export interface TaskPlacement {
  /** Whose task it is (the service's organization); tasks without one share one line. */
  tenant?: string;
  /** Milliseconds it may wait for its turn before `runTask` rejects with 503 `overloaded` (a call's deadline; Infinity: none). */
  startWithinMs?: number;
  /**
   * Stops only the wait for its turn (default: `signal`): for tasks that stop by their own means once running (a
   * fine-tuning run's stop flag), since aborting a running task ends its worker.
   */
  waitSignal?: AbortSignal;
}

/**
 * Runs one task in the pool. A task aborted while running ends its worker (piscina's rule);
 * `transferList` moves ports (a progress channel) to the worker with the task. A background task (any kind
 * but predict, adapter and ping) first waits for its tenant's turn in training's share of the workers.
 */
export function runTask<T>(task: PoolTask, signal?: AbortSignal, transferList?: MessagePort[], placement: TaskPlacement = {}): Promise<T> {
  if (kForegroundKinds.has(task.kind)) return runInPool<T>(task, signal, transferList);
  const { tenant = '', startWithinMs, waitSignal = signal } = placement;
  return backgroundGate.run(tenant, () => runInPool<T>(task, signal, transferList), { signal: waitSignal, startWithinMs });
}

async function runInPool<T>(task: PoolTask, signal?: AbortSignal, transferList?: MessagePort[]): Promise<T> {
  let result: unknown;
  const predicting = task.kind === 'predict';
  tasksInPool++;
  if (predicting) predictsInPool++;
  try {
    const registered = baseModelRegistrations();
    const pooled: PooledTask = registered.length > 0 ? { ...task, baseModels: registered } : task;
    result = await currentPool().run(pooled, { ...(signal ? { signal } : {}), ...(transferList ? { transferList } : {}) });
  } catch (error) {
    if (signal?.aborted) throw new SvcError('aborted', 'the operation was aborted', { cause: error });
    // A plain Error from the worker: a native failure (the C++ message) or a bug.
    throw fromNativeError(error);
  } finally {
    tasksInPool--;
    if (predicting) predictsInPool--;
    for (const listener of taskEndListeners) listener();
  }
  const failure = (result as Partial<WorkerError> | null)?.[kWorkerError];
  if (failure) {
    throw new SvcError(failure.code as SvcErrorCode, failure.message, failure.param ? { param: failure.param } : {});
  }
  return result as T;
}

let forgetChannel: BroadcastChannel | undefined;

/** Tells every worker to unload a fine-tuned encoder (its classifier was disposed) before its next task. */
export function forgetEncoder(encoderFile: string): void {
  if (!pool) return; // no workers, nothing loaded
  if (!forgetChannel) {
    forgetChannel = new BroadcastChannel(kEncoderChannel);
    forgetChannel.unref();
  }
  forgetChannel.postMessage({ encoderFile });
}

/**
 * Stops the pool's workers (after their current tasks). The next task starts a new pool.
 *
 * @example
 * ```ts
 * import { closePool } from 'svc-classify';
 * process.once('SIGTERM', () => void closePool());
 * ```
 */
export async function closePool(): Promise<void> {
  const closing = pool;
  pool = undefined;
  if (closing) await closing.close();
}
