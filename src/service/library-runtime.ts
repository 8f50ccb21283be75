import { CachedArtifactHub } from '../artifacts/cached-hub.js';
import { DirectoryArtifacts } from '../artifacts/directory.js';
import { MergedExports } from '../artifacts/merged.js';
import type { ArtifactReader, ArtifactStore } from '../artifacts/types.js';
import type { DirectoryHub, Hub } from '../model/hub.js';
import { closePool, trainingWorkers } from '../pool/pool.js';
import { SvcError } from '../errors.js';
import { Classifier } from '../predict/classifier.js';
import type { TaskType } from '../contract/train-request.js';
import { finetuneThreads } from '../train/finetune-stage.js';
import { train } from '../train/train.js';
import { storedTrainRequest } from './examples.js';
import type { AnyRuntimePrediction, ModelRuntime, RuntimePredictOptions, RuntimeTrainHooks, RuntimeTrainJob } from './runtime.js';

/** Loaded classifiers kept in memory (a head is a few kilobytes; the encoder is shared per worker). */
export const kDefaultCachedModels = 256;
// Loads of a model whose cached files went away between its load and its predict (see predict).
const kFetchAttempts = 3;

export interface LibraryRuntimeOptions {
  /** The hub directory: models live in `<hubRoot>/<org>/<model_id>/`; with `artifacts`, this replica's cache of them. */
  hubRoot: string;
  /** Model files in a store that replicas share (PostgreSQL); closed with the runtime. Default: the files in `hubRoot`. */
  artifacts?: ArtifactStore;
  /** With `artifacts`: the bytes of model files `hubRoot` caches at most (least recently used evicted). */
  maxCacheBytes?: number;
  maxCachedModels?: number;
  /** Close the library's worker pool with the runtime (default true; false when the host app uses the library too). */
  closePool?: boolean;
}

/**
 * The model runtime on svc-classify's own library: `train()` publishes into a
 * `DirectoryHub`, `Classifier.load()` reads from it, all native work in the
 * library's pool. Training jobs run on all pool workers but one, which stays for predictions, and
 * fine-tune with their worker's engine threads only.
 *
 * @example
 * ```ts
 * const runtime = new LibraryRuntime({ hubRoot: './svc-data/hub' });
 * const service = new SvcService({ store: SqliteStore.open('./svc-data'), runtime });
 * ```
 */
export class LibraryRuntime implements ModelRuntime {
  readonly hub: DirectoryHub | CachedArtifactHub;
  readonly #artifacts: ArtifactStore;
  // The hub's files, with adapter models' merged transformers.js files built on first download.
  readonly #files: MergedExports;
  readonly #maxCached: number;
  readonly #closePool: boolean;
  // Insertion order doubles as recency: a hit is moved to the end.
  readonly #loaded = new Map<string, Promise<Classifier<TaskType>>>();

  constructor(options: LibraryRuntimeOptions) {
    if (options.artifacts === undefined) {
      const local = new DirectoryArtifacts(options.hubRoot);
      this.hub = local.hub;
      this.#artifacts = local;
    } else {
      this.hub = new CachedArtifactHub(options.artifacts, options.hubRoot, { maxBytes: options.maxCacheBytes });
      this.#artifacts = options.artifacts;
    }
    this.#files = new MergedExports(this.#artifacts, (id) => this.hub.resolve(id));
    this.#maxCached = options.maxCachedModels ?? kDefaultCachedModels;
    this.#closePool = options.closePool ?? true;
  }

  get trainingSlots(): number {
    return trainingWorkers();
  }

  modelDir(orgId: string, modelId: string): string {
    return this.hub.pathOf(`${orgId}/${modelId}`);
  }

  async hubFiles(orgId: string, modelId: string): Promise<string[]> {
    return this.#files.list(`${orgId}/${modelId}`);
  }

  hubFile(orgId: string, modelId: string, name: string): Promise<ArtifactReader> {
    return this.#files.open(`${orgId}/${modelId}`, name);
  }

  async train(job: RuntimeTrainJob, hooks: RuntimeTrainHooks): Promise<void> {
    const hubId = `${job.orgId}/${job.modelId}`;
    this.#loaded.delete(hubId);
    const classifier = await train(storedTrainRequest(job.baseModel, job.taskType, job.examples, job.options), {
      hub: hooks.fence === undefined ? this.hub : fencedHub(this.hub, hooks.fence),
      id: hubId,
      signal: hooks.signal,
      onProgress: hooks.onProgress,
      // Predictions share the pool with training here: fine-tuning keeps to its worker's cores.
      threads: finetuneThreads(),
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
        // With an artifact store, this replica's cache may have evicted the model's folder while its classifier stayed
        // loaded; a worker that no longer holds the adapter then finds its file gone. The model still exists (the
        // service checked): load it again, which fetches it again. A few times, as fetching evicts other models.
        const gone = error instanceof SvcError && error.code === 'not_found';
        if (!gone || !(this.hub instanceof CachedArtifactHub) || attempt >= kFetchAttempts) throw error;
        if (this.#loaded.get(hubId) === loading) this.#loaded.delete(hubId);
      }
    }
  }

  async remove(orgId: string, modelId: string): Promise<void> {
    const hubId = `${orgId}/${modelId}`;
    const loading = this.#loaded.get(hubId);
    this.#loaded.delete(hubId);
    loading?.then(
      (c) => c.dispose(),
      () => {},
    );
    await this.#files.forget(hubId);
    await this.hub.remove(hubId);
  }

  async close(): Promise<void> {
    for (const loading of this.#loaded.values())
      loading.then(
        (c) => c.dispose(),
        () => {},
      );
    this.#loaded.clear();
    await this.#artifacts.close();
    if (this.#closePool) await closePool();
  }

  #classifier(hubId: string): Promise<Classifier<TaskType>> {
    let loading = this.#loaded.get(hubId);
    if (loading !== undefined) {
      this.#loaded.delete(hubId);
    } else {
      loading = Classifier.load<TaskType>(hubId, { hub: this.hub });
      // A failed load is not cached: the next request tries again.
      loading.catch(() => this.#loaded.get(hubId) === loading && this.#loaded.delete(hubId));
    }
    this.#loaded.set(hubId, loading);
    if (this.#loaded.size > this.#maxCached) {
      const [oldest, evicted] = this.#loaded.entries().next().value as [string, Promise<Classifier<TaskType>>];
      this.#loaded.delete(oldest);
      evicted.then(
        (c) => c.dispose(),
        () => {},
      );
    }
    return loading;
  }
}

/**
 * The hub with a fence before each publish: the model is saved into the publish's staging folder, then the fence is
 * awaited, and only then does the hub store it (the artifact store's put) and rename it into place. A fence that
 * rejects leaves the published model as it was.
 */
function fencedHub(hub: Hub, fence: () => Promise<void>): Hub {
  return {
    resolve: (id) => hub.resolve(id),
    publish: (id, write) =>
      hub.publish(id, async (dir) => {
        await write(dir);
        await fence();
      }),
    remove: (id) => hub.remove(id),
    files: (id) => hub.files(id),
    file: (id, path) => hub.file(id, path),
  };
}
