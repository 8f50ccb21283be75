import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { MergedExports } from '../artifacts/merged.js';
import { PostgresHub } from '../artifacts/postgres-hub.js';
import { DirectoryHub, type Hub, type HubFileReader } from '../model/hub.js';
import { closePool, keepWorkerForPredictions, trainingWorkers } from '../pool/pool.js';
import { SvcError } from '../errors.js';
import { Classifier } from '../predict/classifier.js';
import type { TaskType } from '../contract/train-request.js';
import { finetuneThreads } from '../train/finetune-stage.js';
import { scoreModelDir } from '../train/score-as-training.js';
import { train } from '../train/train.js';
import { storedTrainRequest } from './examples.js';
import { kJobsPerTrainingSlot } from './jobs.js';
import { storedModelLoadFailure, storedModelUseFailure } from './stored-model-errors.js';
import { kEvaluationFile } from './runtime.js';
import type { AnyRuntimePrediction, ModelRuntime, RuntimePredictOptions, RuntimeTrainHooks, RuntimeTrainJob } from './runtime.js';

/**
 * Bytes of loaded classifiers kept by default (`LibraryRuntimeOptions.maxLoadedModelBytes`): some 1,500 adapter
 * models (0.66 MB each at rank 8) or twenty full fine-tunes (45 MB files), and far more frozen ones. A count of 256
 * before made a service of 1,000 adapter models load one on nearly every call.
 */
export const kDefaultLoadedModelBytes = 1024 * 2 ** 20;
/** What a loaded classifier counts beside its weight file: its head (3 KB for svc-small), manifest and objects. */
const kClassifierBytes = 16 * 1024;
// Loads of a model whose cached files went away between its load and its predict (see predict).
const kFetchAttempts = 3;

export interface LibraryRuntimeOptions {
  /**
   * Where model files live: a folder (a `DirectoryHub`, or its root; models in `<root>/<org>/<model_id>/`) or a
   * `PostgresHub` that replicas share. Closed with the runtime.
   */
  hub: string | DirectoryHub | PostgresHub;
  /**
   * Bytes of loaded classifiers kept in memory, least recently used unloaded first: each counts its weight file's
   * bytes (an adapter model's adapter, about 0.66 MB at rank 8; a full fine-tune's encoder, 45 MB in fp16) and 16 KB
   * for its head. Default 1 GiB. An unloaded model loads again on its next predict.
   */
  maxLoadedModelBytes?: number;
  /** At most this many loaded classifiers as well. Default: no limit but `maxLoadedModelBytes`. */
  maxCachedModels?: number;
  /** Close the library's worker pool with the runtime (default true; false when the host app uses the library too). */
  closePool?: boolean;
}

/**
 * The model runtime on svc-classify's own library: `train()` publishes into the
 * hub, `Classifier.load()` reads from it, all native work in the
 * library's pool. Training jobs run on all pool workers but one, which stays for predictions, and
 * fine-tune with their worker's engine threads only.
 *
 * @example
 * ```ts
 * const runtime = new LibraryRuntime({ hub: './svc-data/hub' });
 * const service = new SvcService({ store: SqliteStore.open('./svc-data'), runtime });
 * ```
 */
export class LibraryRuntime implements ModelRuntime {
  readonly hub: DirectoryHub | PostgresHub;
  // The hub's files, with adapter models' merged transformers.js files built on first download.
  readonly #files: MergedExports;
  readonly #maxCached: number;
  readonly #maxBytes: number;
  readonly #closePool: boolean;
  // Insertion order doubles as recency: a hit is moved to the end. `bytes` is kClassifierBytes until the load ends.
  readonly #loaded = new Map<string, { classifier: Promise<Classifier<TaskType>>; bytes: number }>();
  #loadedBytes = 0;

  constructor(options: LibraryRuntimeOptions) {
    // Plain JavaScript callers get no type check: a missing hub (or the old `hubRoot`) would fail on the first predict.
    // Checked by shape, not instanceof: the library and server entries may each carry their own copy of the classes.
    const hub: unknown = options.hub;
    if (typeof hub !== 'string' && (typeof hub !== 'object' || hub === null || typeof (hub as Hub).resolve !== 'function')) {
      const old = 'hubRoot' in options ? ' (`hubRoot` is now `hub`)' : '';
      throw new SvcError('invalid_request', `options.hub must be a folder path, a DirectoryHub or a PostgresHub${old}`);
    }
    this.hub = typeof options.hub === 'string' ? new DirectoryHub(options.hub) : options.hub;
    this.#files = new MergedExports(this.hub);
    this.#maxCached = options.maxCachedModels ?? Infinity;
    this.#maxBytes = options.maxLoadedModelBytes ?? kDefaultLoadedModelBytes;
    this.#closePool = options.closePool ?? true;
    // A service's predictions always find a worker: training, fits and explain's searches wait for the others.
    keepWorkerForPredictions(true);
  }

  get trainingSlots(): number {
    return trainingWorkers();
  }

  /** Jobs that run at once: their tasks take turns in the training share by organization (pool/background-gate.ts). */
  get concurrentJobs(): number {
    return kJobsPerTrainingSlot * trainingWorkers();
  }

  modelDir(orgId: string, modelId: string): string {
    return this.hub.pathOf(`${orgId}/${modelId}`);
  }

  async hubFiles(orgId: string, modelId: string): Promise<string[]> {
    return this.#files.list(`${orgId}/${modelId}`);
  }

  hubFile(orgId: string, modelId: string, name: string): Promise<HubFileReader> {
    const hubId = `${orgId}/${modelId}`;
    // An adapter model's merged export is built from its stored files on first download: a damaged one is ours.
    return this.#files.open(hubId, name).catch((error: unknown) => {
      throw storedModelUseFailure(error, hubId, this.hub.pathOf(hubId));
    });
  }

  async train(job: RuntimeTrainJob, hooks: RuntimeTrainHooks): Promise<void> {
    const hubId = `${job.orgId}/${job.modelId}`;
    this.#unload(hubId);
    const { evaluate, fence } = hooks;
    // Between the model's files and the fence: the report is scored on the files about to be published, and written
    // with them (a fence that refuses leaves neither).
    const beforePublish = async (dir: string) => {
      if (evaluate !== undefined) {
        const report = await evaluate((texts) => scoreModelDir(dir, texts, { signal: hooks.signal, forget: true, tenant: job.orgId }));
        if (report !== null && report !== undefined) await writeFile(join(dir, kEvaluationFile), JSON.stringify(report));
      }
      await fence?.();
    };
    const classifier = await train(storedTrainRequest(job.baseModel, job.taskType, job.examples, job.options), {
      hub: fence === undefined && evaluate === undefined ? this.hub : hubWithStepBeforePublish(this.hub, beforePublish),
      id: hubId,
      signal: hooks.signal,
      onProgress: hooks.onProgress,
      // Predictions share the pool with training here: fine-tuning keeps to its worker's cores.
      threads: finetuneThreads(),
      // Jobs running at once take turns task by task in the training share, by organization (pool/background-gate.ts).
      tenant: job.orgId,
    });
    classifier.dispose();
  }

  async predict(orgId: string, modelId: string, texts: string[], options: RuntimePredictOptions = {}): Promise<AnyRuntimePrediction[]> {
    const hubId = `${orgId}/${modelId}`;
    for (let attempt = 1; ; attempt++) {
      const loading = this.#classifier(hubId);
      const classifier = await loading;
      try {
        // Organizations take turns in the batcher: one's large calls do not hold up another's.
        return await classifier.predict(texts, { ...options, tenant: orgId });
      } catch (error) {
        // With a PostgresHub, this replica's cache may have evicted the model's folder while its classifier stayed
        // loaded; a worker that no longer holds the adapter then finds its file gone. The model still exists (the
        // service checked): load it again, which fetches it again. A few times, as fetching evicts other models.
        const gone = error instanceof SvcError && error.code === 'not_found';
        if (!gone || !(this.hub instanceof PostgresHub) || attempt >= kFetchAttempts) {
          throw storedModelUseFailure(error, hubId, this.hub.pathOf(hubId));
        }
        if (this.#loaded.get(hubId)?.classifier === loading) this.#unload(hubId);
      }
    }
  }

  async score(orgId: string, modelId: string, texts: string[], options: { signal?: AbortSignal } = {}): Promise<AnyRuntimePrediction[]> {
    // The hub's folder (with a PostgresHub, fetched into this replica's cache), read afresh: no loaded classifier needed.
    const dir = await this.hub.resolve(`${orgId}/${modelId}`);
    return scoreModelDir(dir, texts, { ...options, tenant: orgId });
  }

  async remove(orgId: string, modelId: string): Promise<void> {
    const hubId = `${orgId}/${modelId}`;
    this.#unload(hubId, { dispose: true });
    await this.#files.forget(hubId);
    await this.hub.remove(hubId);
  }

  async close(): Promise<void> {
    for (const hubId of [...this.#loaded.keys()]) this.#unload(hubId, { dispose: true });
    await this.hub.close();
    if (this.#closePool) {
      await closePool();
      keepWorkerForPredictions(false);
    }
  }

  #classifier(hubId: string): Promise<Classifier<TaskType>> {
    const held = this.#loaded.get(hubId);
    if (held !== undefined) {
      this.#loaded.delete(hubId);
      this.#loaded.set(hubId, held);
      return held.classifier;
    }
    // The service's own stored model: whatever is wrong with its files is answered as internal (stored-model-errors.ts).
    const loading = Classifier.load<TaskType>(hubId, { hub: this.hub }).catch((error: unknown) => {
      throw storedModelLoadFailure(error, hubId);
    });
    const entry = { classifier: loading, bytes: kClassifierBytes };
    this.#loaded.set(hubId, entry);
    this.#loadedBytes += entry.bytes;
    loading.then(
      // Its size once loaded, off the predict's path; then the budget is kept again.
      async (classifier) => {
        const bytes = kClassifierBytes + (await this.#weightBytes(hubId, classifier));
        if (this.#loaded.get(hubId) !== entry) return;
        this.#loadedBytes += bytes - entry.bytes;
        entry.bytes = bytes;
        this.#evict();
      },
      // A failed load is not cached: the next request tries again.
      () => this.#loaded.get(hubId) === entry && this.#unload(hubId),
    );
    this.#evict();
    return loading;
  }

  /** The bytes of a loaded model's adapter or fine-tuned encoder file (0 for a frozen model, or a file gone since). */
  async #weightBytes(hubId: string, classifier: Classifier<TaskType>): Promise<number> {
    const { adapter_file, encoder_file } = classifier.manifest;
    const file = adapter_file ?? encoder_file;
    if (file === undefined) return 0;
    return stat(join(this.hub.pathOf(hubId), file)).then(
      (s) => s.size,
      () => 0,
    );
  }

  /** Least recently used first, until both bounds hold; the one most recently used always stays. */
  #evict(): void {
    for (const hubId of this.#loaded.keys()) {
      if (this.#loaded.size <= 1 || (this.#loadedBytes <= this.#maxBytes && this.#loaded.size <= this.#maxCached)) return;
      this.#unload(hubId, { dispose: true });
    }
  }

  /** Forgets a loaded classifier; with `dispose`, releases it once loaded (a predict already holding it finishes). */
  #unload(hubId: string, options: { dispose?: boolean } = {}): void {
    const entry = this.#loaded.get(hubId);
    if (entry === undefined) return;
    this.#loaded.delete(hubId);
    this.#loadedBytes -= entry.bytes;
    if (options.dispose)
      entry.classifier.then(
        (c) => c.dispose(),
        () => {},
      );
  }
}

/**
 * The hub with a step before each publish (the evaluation report, then the fence): the model is saved into the
 * publish's staging folder, then `step` runs on that folder, and only then does the hub store it (PostgresHub's
 * database write) and rename it into place. A step that rejects (a fence that refuses) leaves the published model as
 * it was.
 */
function hubWithStepBeforePublish(hub: Hub, step: (dir: string) => Promise<void>): Hub {
  return {
    resolve: (id) => hub.resolve(id),
    publish: (id, write) =>
      hub.publish(id, async (dir) => {
        await write(dir);
        await step(dir);
      }),
    remove: (id) => hub.remove(id),
    list: (id) => hub.list(id),
    open: (id, name) => hub.open(id, name),
    close: () => hub.close(),
  };
}
