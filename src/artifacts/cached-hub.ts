// A replica's view of a shared artifact store as a Hub: training publishes into the store, and a model is fetched
// into a local cache folder (the replica's --data) before anything reads it from the disk, the cache capped in bytes
// and the least recently used models evicted first.
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';

import { positiveInteger } from '../is.js';
import { DirectoryHub, type Hub, isHubId, modelFileNames } from '../model/hub.js';
import type { ArtifactStore } from './types.js';

/** The local cache's default cap: room for about 20 fine-tuned models (90 MB each) or thousands of frozen ones. */
export const kDefaultModelCacheBytes = 2048 * 1024 * 1024;

export interface CachedArtifactHubOptions {
  /** Bytes of model files the local cache keeps at most; default {@link kDefaultModelCacheBytes}. */
  maxBytes?: number;
}

const total = (files: readonly { size: number }[]): number => files.reduce((sum, f) => sum + f.size, 0);

/**
 * A {@link Hub} on an {@link ArtifactStore} with a local cache: `publish` stores the model (and keeps it in the
 * cache), `resolve` fetches it into the cache first when it is not there. A model larger than the cap alone is still
 * fetched: it is evicted on the next fetch.
 *
 * @example
 * ```ts
 * const hub = new CachedArtifactHub(await PostgresArtifacts.open(url), './svc-data/model-cache', { maxBytes: 512 << 20 });
 * const classifier = await Classifier.load('acme/svc-small-1a2b3c4d5e6f', { hub });
 * ```
 */
export class CachedArtifactHub implements Hub {
  readonly store: ArtifactStore;
  readonly #cache: DirectoryHub;
  readonly #maxBytes: number;
  // Bytes of each model in the cache; insertion order doubles as recency: a hit is moved to the end.
  readonly #sizes = new Map<string, number>();
  // One fetch per model at a time: concurrent loads of one model wait for the same download.
  readonly #fetching = new Map<string, Promise<string>>();
  #adopted: Promise<void> | null = null;

  constructor(store: ArtifactStore, cacheRoot: string, options: CachedArtifactHubOptions = {}) {
    this.store = store;
    this.#cache = new DirectoryHub(cacheRoot);
    this.#maxBytes = positiveInteger(options.maxBytes ?? kDefaultModelCacheBytes, 'options.maxBytes');
  }

  /** The cache folder a model is fetched into (whether it is there or not). */
  pathOf(id: string): string {
    return this.#cache.pathOf(id);
  }

  /** The models in the cache, least recently used first. */
  cached(): string[] {
    return [...this.#sizes.keys()];
  }

  async resolve(id: string): Promise<string> {
    await this.#adopt();
    const size = this.#sizes.get(id);
    const dir = await this.#cache.resolve(id).catch(() => null);
    if (size !== undefined && dir !== null) {
      this.#sizes.delete(id);
      this.#sizes.set(id, size);
      return dir;
    }
    let fetching = this.#fetching.get(id);
    if (fetching === undefined) {
      fetching = this.#fetch(id).finally(() => this.#fetching.delete(id));
      this.#fetching.set(id, fetching);
    }
    return fetching;
  }

  async publish(id: string, write: (dir: string) => Promise<void>): Promise<void> {
    await this.#adopt();
    await this.#cache.publish(id, async (dir) => {
      await write(dir);
      await this.store.put(id, dir);
    });
    await this.#admit(id, total(await this.store.list(id)));
  }

  async remove(id: string): Promise<boolean> {
    this.#sizes.delete(id);
    await this.#cache.remove(id);
    return this.store.delete(id);
  }

  async files(id: string): Promise<string[]> {
    return (await this.store.list(id)).map((f) => f.name);
  }

  async file(id: string, path: string): Promise<string> {
    await this.resolve(id);
    return this.#cache.file(id, path);
  }

  close(): Promise<void> {
    return this.store.close();
  }

  async #fetch(id: string): Promise<string> {
    const files = await this.store.list(id);
    // Through the cache's staging folder and rename: a replica sharing this --data never loads half a model.
    await this.#cache.publish(id, async (dir) => {
      for (const file of files) {
        const target = join(dir, ...file.name.split('/'));
        await mkdir(dirname(target), { recursive: true });
        const { stream } = await this.store.open(id, file.name);
        await pipeline(stream, createWriteStream(target));
      }
    });
    await this.#admit(id, total(files));
    return this.#cache.pathOf(id);
  }

  /**
   * Counts the models an earlier process left in the cache folder, oldest first by their folder's time, so that the
   * cap holds across restarts: they are the first evicted. Staging folders start with a dot and are not models.
   */
  #adopt(): Promise<void> {
    this.#adopted ??= (async () => {
      const root = this.#cache.root;
      const found: { id: string; size: number; at: number }[] = [];
      for (const org of await readdir(root, { withFileTypes: true }).catch(() => [])) {
        if (!org.isDirectory()) continue;
        for (const model of await readdir(join(root, org.name), { withFileTypes: true })) {
          const id = `${org.name}/${model.name}`;
          if (!model.isDirectory() || !isHubId(id)) continue;
          const dir = join(root, org.name, model.name);
          let size = 0;
          for (const name of await modelFileNames(dir)) size += (await stat(join(dir, ...name.split('/')))).size;
          found.push({ id, size, at: (await stat(dir)).mtimeMs });
        }
      }
      for (const { id, size } of found.sort((a, b) => a.at - b.at)) if (!this.#sizes.has(id)) this.#sizes.set(id, size);
    })();
    return this.#adopted;
  }

  /** Records a model as the most recent in the cache, then evicts the least recent ones beyond the cap. */
  async #admit(id: string, size: number): Promise<void> {
    this.#sizes.delete(id);
    this.#sizes.set(id, size);
    let bytes = 0;
    for (const s of this.#sizes.values()) bytes += s;
    for (const [other, otherSize] of this.#sizes) {
      if (bytes <= this.#maxBytes) break;
      if (other === id) continue;
      this.#sizes.delete(other);
      bytes -= otherSize;
      await this.#cache.remove(other);
    }
  }
}
