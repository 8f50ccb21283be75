// The hub for replicas that share no folder: model files in PostgreSQL (postgres-files.ts), and each replica's local
// cache of the models it reads (model-cache.ts), which Classifier.load and the workers read from the disk.
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';

import { type Hub, type HubFile, type HubFileReader, parseHubId } from '../model/hub.js';
import type { CdcOptions } from './cdc.js';
import { ModelCache } from './model-cache.js';
import { PostgresFiles } from './postgres-files.js';

export { kDefaultModelCacheBytes } from './model-cache.js';

export interface PostgresHubOptions {
  /** This replica's cache folder: models are fetched into `<cacheDir>/<org>/<model_id>/` before they are read. */
  cacheDir: string;
  /** Bytes of model files the cache keeps at most, least recently used evicted; default 2 GiB. */
  maxCacheBytes?: number;
  /** Bytes per piece an opened file's stream delivers, whatever the stored chunks' sizes; default `kChunkBytes`. */
  chunkBytes?: number;
  /** Where files are cut into stored chunks; the defaults are `kCdcDefaults` (256 KiB / 1 MiB / 4 MiB). */
  cdc?: CdcOptions;
}

const total = (files: readonly { size: number }[]): number => files.reduce((sum, f) => sum + f.size, 0);

/**
 * A {@link Hub} in PostgreSQL, shared by every replica on the database. Each file is stored once per distinct
 * content-defined chunk, whichever models hold it. `publish` stores the model and keeps it in this replica's cache;
 * `resolve` fetches it into the cache first when it is not there; `list` and `open` read the database.
 *
 * @example
 * ```ts
 * const hub = await PostgresHub.open('postgres://svc@db.internal/svc', { cacheDir: './svc-data/model-cache' });
 * const classifier = await Classifier.load('acme/svc-small-1a2b3c4d5e6f', { hub });
 * const { size, stream } = await hub.open('acme/svc-small-1a2b3c4d5e6f', 'onnx/model.onnx');
 * stream.pipe(createWriteStream('./model.onnx'));
 * await hub.close();
 * ```
 */
export class PostgresHub implements Hub {
  readonly #files: PostgresFiles;
  readonly #cache: ModelCache;

  private constructor(files: PostgresFiles, cache: ModelCache) {
    this.#files = files;
    this.#cache = cache;
  }

  /** Opens (and migrates, like `PostgresStore`) the database at `url`. */
  static async open(url: string, options: PostgresHubOptions): Promise<PostgresHub> {
    if (typeof options?.cacheDir !== 'string' || options.cacheDir.length === 0) {
      throw new TypeError('options.cacheDir must be a non-empty string');
    }
    const cache = new ModelCache(options.cacheDir, options.maxCacheBytes);
    return new PostgresHub(await PostgresFiles.open(url, { chunkBytes: options.chunkBytes, cdc: options.cdc }), cache);
  }

  /** The cache folder a model is fetched into (whether it is there or not). */
  pathOf(id: string): string {
    return this.#cache.pathOf(id);
  }

  /** The models in this replica's cache, least recently used first. */
  cached(): string[] {
    return this.#cache.cached();
  }

  resolve(id: string): Promise<string> {
    parseHubId(id);
    return this.#cache.resolve(id, (dir) => this.#download(id, dir));
  }

  async publish(id: string, write: (dir: string) => Promise<void>): Promise<void> {
    parseHubId(id);
    // Stored from the cache's staging folder, then renamed into the cache: this replica need not fetch it back.
    await this.#cache.fill(id, async (dir) => {
      await write(dir);
      await this.#files.put(id, dir);
      return total(await this.#files.list(id));
    });
  }

  async remove(id: string): Promise<boolean> {
    parseHubId(id);
    await this.#cache.remove(id);
    return this.#files.delete(id);
  }

  list(id: string): Promise<HubFile[]> {
    return this.#files.list(id);
  }

  open(id: string, name: string): Promise<HubFileReader> {
    return this.#files.open(id, name);
  }

  close(): Promise<void> {
    return this.#files.close();
  }

  /** Streams the model's files from the database into `dir`, one chunk at a time. */
  async #download(id: string, dir: string): Promise<number> {
    const files = await this.#files.list(id);
    for (const file of files) {
      const target = join(dir, ...file.name.split('/'));
      await mkdir(dirname(target), { recursive: true });
      const { stream } = await this.#files.open(id, file.name);
      await pipeline(stream, createWriteStream(target));
    }
    return total(files);
  }
}
