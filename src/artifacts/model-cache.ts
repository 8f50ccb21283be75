// PostgresHub's local cache: the models a replica reads, in a folder (the replica's --data), capped in bytes with the
// least recently used models evicted first. Internal to postgres-hub.ts; not a hub of its own.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

import { positiveInteger } from '../is.js';
import { DirectoryHub, isHubId, modelFileNames } from '../model/hub.js';

/** The local cache's default cap: room for about 20 fine-tuned models (90 MB each) or thousands of frozen ones. */
export const kDefaultModelCacheBytes = 2048 * 1024 * 1024;

/** Fills a fresh cache folder with the model's files and resolves to their bytes. */
export type FillModel = (dir: string) => Promise<number>;

/**
 * Model folders by hub id, counted in bytes. A model larger than the cap alone is still kept: it is evicted on the
 * next fill. Folders change only through the folder's staging and rename: a replica sharing this --data never loads
 * half a model.
 */
export class ModelCache {
  readonly #folder: DirectoryHub;
  readonly #maxBytes: number;
  // Bytes of each model in the cache; insertion order doubles as recency: a hit is moved to the end.
  readonly #sizes = new Map<string, number>();
  // One fetch per model at a time: concurrent loads of one model wait for the same download.
  readonly #fetching = new Map<string, Promise<string>>();
  #adopted: Promise<void> | null = null;

  constructor(root: string, maxBytes: number = kDefaultModelCacheBytes) {
    this.#folder = new DirectoryHub(root);
    this.#maxBytes = positiveInteger(maxBytes, 'options.maxCacheBytes');
  }

  /** The cache folder of a model (whether it is there or not). */
  pathOf(id: string): string {
    return this.#folder.pathOf(id);
  }

  /** The models in the cache, least recently used first. */
  cached(): string[] {
    return [...this.#sizes.keys()];
  }

  /** The model's cache folder, filled by `fill` first when the model is not in the cache. */
  async resolve(id: string, fill: FillModel): Promise<string> {
    await this.#adopt();
    const size = this.#sizes.get(id);
    const dir = await this.#folder.resolve(id).catch(() => null);
    if (size !== undefined && dir !== null) {
      this.#sizes.delete(id);
      this.#sizes.set(id, size);
      return dir;
    }
    let fetching = this.#fetching.get(id);
    if (fetching === undefined) {
      fetching = this.fill(id, fill)
        .then(() => this.#folder.pathOf(id))
        .finally(() => this.#fetching.delete(id));
      this.#fetching.set(id, fetching);
    }
    return fetching;
  }

  /** Replaces the model's cache folder by one `fill` writes, then records it as the most recent. */
  async fill(id: string, fill: FillModel): Promise<void> {
    await this.#adopt();
    let size = 0;
    await this.#folder.publish(id, async (dir) => {
      size = await fill(dir);
    });
    await this.#admit(id, size);
  }

  async remove(id: string): Promise<void> {
    this.#sizes.delete(id);
    await this.#folder.remove(id);
  }

  /**
   * Counts the models an earlier process left in the cache folder, oldest first by their folder's time, so that the
   * cap holds across restarts: they are the first evicted. Staging folders start with a dot and are not models.
   */
  #adopt(): Promise<void> {
    this.#adopted ??= (async () => {
      const root = this.#folder.root;
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
      await this.#folder.remove(other);
    }
  }
}
