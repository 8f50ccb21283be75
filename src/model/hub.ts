// The hub: where trained model directories are published and found again by id
// (`<org>/<model_id>`, as on the Hugging Face hub).
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';

import { SvcError } from '../errors.js';
import { positiveInteger } from '../is.js';
import { fsyncPath, fsyncTree } from './durable.js';

// Staging and trash folders start with a dot, which no hub id segment can.
const kStagingPrefix = '.staging-';
const kOldPrefix = '.old-';

/** A hub id split in its parts. */
export interface HubId {
  org: string;
  modelId: string;
}

// Letters, digits, '.', '_' and '-', not starting with a dot: no segment can be '..' or hidden.
const kSegment = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/**
 * True for a model file name that can only name a file inside the model directory: `/`-separated segments of
 * letters, digits, `.`, `_` and `-`, none empty or starting with a dot (so no `..`, no absolute path, no `\\`, no
 * drive letter, no hidden file). The hub serves only such names and `svc pull` writes only such names.
 *
 * @example
 * ```ts
 * isModelFileName('onnx/model.onnx');  // true
 * isModelFileName('../../.bashrc');    // false
 * isModelFileName('/etc/passwd');      // false
 * ```
 */
export function isModelFileName(path: string): boolean {
  if (typeof path !== 'string' || path.length === 0 || path.length > 1024) return false;
  const segments = path.split('/');
  return segments.length <= 16 && segments.every((segment) => kSegment.test(segment));
}

/**
 * True for strings shaped like `<org>/<model_id>`.
 *
 * @example
 * ```ts
 * isHubId('acme/svc-small-1a2b3c4d5e6f'); // true
 * isHubId('./models/positive');           // false
 * ```
 */
export function isHubId(id: string): boolean {
  const parts = id.split('/');
  return parts.length === 2 && parts.every((part) => kSegment.test(part));
}

/**
 * Splits `<org>/<model_id>`; throws `SvcError('invalid_request')` for anything else.
 *
 * @example
 * ```ts
 * parseHubId('acme/svc-small-1a2b3c4d5e6f'); // { org: 'acme', modelId: 'svc-small-1a2b3c4d5e6f' }
 * ```
 */
export function parseHubId(id: string): HubId {
  if (typeof id !== 'string' || !isHubId(id)) {
    throw new SvcError('invalid_request', `'${String(id)}' is not a hub id (expected <org>/<model_id>)`, {
      param: 'id',
    });
  }
  const [org, modelId] = id.split('/');
  return { org, modelId };
}

/** One file of a model, by its name inside the model directory (`/`-separated, e.g. `onnx/model.onnx`). */
export interface HubFile {
  name: string;
  /** Bytes. */
  size: number;
}

/** One file opened for reading: its size (for `content-length`) and its bytes as a stream. */
export interface HubFileReader {
  size: number;
  /** The bytes, in pieces of at most the hub's chunk size: a file is never whole in memory. */
  stream: Readable;
}

/**
 * Pieces files are streamed in: 1 MiB, small next to a database row's limits, few pieces for a 90 MB encoder; also
 * the size PostgreSQL's content-defined chunks aim at.
 */
export const kChunkBytes = 1024 * 1024;

/**
 * Where model files live, by hub id (`<org>/<model_id>`). Implementations: {@link DirectoryHub} (a local folder, or
 * a volume every replica mounts) and `PostgresHub` (svc-classify/server: files in PostgreSQL, each replica keeping
 * the models it reads in a local cache folder). Every method rejects with `SvcError('invalid_request')` for a
 * malformed hub id.
 */
export interface Hub {
  /** A local directory holding the model (fetched first where the files are remote); rejects with `not_found`. */
  resolve(id: string): Promise<string>;
  /**
   * Publishes a model: `write` fills a fresh, empty directory, whose files then replace the model's in one step, so
   * readers see the old model or the new one, never half.
   */
  publish(id: string, write: (dir: string) => Promise<void>): Promise<void>;
  /** Removes a model; resolves to false when there was none. */
  remove(id: string): Promise<boolean>;
  /** The model's files sorted by name (see {@link isModelFileName}); rejects with `not_found` for no such model. */
  list(id: string): Promise<HubFile[]>;
  /** Opens one file as a stream; rejects with `not_found` when the model or the file does not exist. */
  open(id: string, name: string): Promise<HubFileReader>;
  /** Releases what the hub holds open (a database pool); a folder holds nothing. */
  close(): Promise<void>;
}

export interface DirectoryHubOptions {
  /** Bytes per piece an opened file's stream delivers; default {@link kChunkBytes}. */
  chunkBytes?: number;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function listFiles(root: string, dir: string, out: string[]): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) await listFiles(root, full, out);
    else if (entry.isFile()) out.push(relative(root, full).split(sep).join('/'));
  }
}

/** The model file names under a local directory (see {@link isModelFileName}), sorted; others are left out. */
export async function modelFileNames(dir: string): Promise<string[]> {
  const out: string[] = [];
  await listFiles(dir, dir, out);
  // A name no client could safely write (a file someone dropped in by hand) is not listed.
  return out.filter(isModelFileName).sort();
}

/**
 * A hub in a local folder: model `<org>/<model_id>` lives in `<root>/<org>/<model_id>/`.
 *
 * @example
 * ```ts
 * const hub = new DirectoryHub('./hub');
 * await classifier.save(hub.pathOf('acme/svc-small-1a2b3c4d5e6f'));
 * const again = await Classifier.load('acme/svc-small-1a2b3c4d5e6f', { hub });
 * (await hub.list('acme/svc-small-1a2b3c4d5e6f')).map((f) => f.name);
 * // ['config.json', 'head.json', 'manifest.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json']
 * ```
 */
export class DirectoryHub implements Hub {
  readonly root: string;
  readonly #chunkBytes: number;

  constructor(root: string, options: DirectoryHubOptions = {}) {
    if (typeof root !== 'string' || root.length === 0) throw new TypeError('root must be a non-empty string');
    this.root = resolve(root);
    this.#chunkBytes = positiveInteger(options.chunkBytes ?? kChunkBytes, 'options.chunkBytes');
  }

  /** The directory a model with this id lives in (whether it exists or not). */
  pathOf(id: string): string {
    const { org, modelId } = parseHubId(id);
    return join(this.root, org, modelId);
  }

  async resolve(id: string): Promise<string> {
    const dir = this.pathOf(id);
    if (!(await exists(dir))) throw new SvcError('not_found', `model '${id}' is not in the hub`, { param: 'model' });
    return dir;
  }

  async publish(id: string, write: (dir: string) => Promise<void>): Promise<void> {
    const dir = this.pathOf(id);
    const { org, modelId } = parseHubId(id);
    const staging = join(this.root, org, `${kStagingPrefix}${modelId}-${randomBytes(4).toString('hex')}`);
    await mkdir(staging, { recursive: true });
    try {
      await write(staging);
      // The whole model on the disk before the rename publishes it, and the rename on the disk before we return.
      await fsyncTree(staging);
      const trash = join(this.root, org, `${kOldPrefix}${modelId}-${randomBytes(4).toString('hex')}`);
      const replaced = await rename(dir, trash).then(
        () => true,
        () => false,
      );
      await rename(staging, dir);
      await fsyncPath(join(this.root, org));
      if (replaced) await rm(trash, { recursive: true, force: true });
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * Removes what an interrupted `publish` leaves beside the models (its staging folder, or the replaced model it
   * had not deleted yet). Call it only while no `publish` runs on this root, e.g. at start-up under the data
   * directory's lock. Resolves to the folders removed.
   */
  async sweep(): Promise<string[]> {
    const removed: string[] = [];
    const orgs = await readdir(this.root, { withFileTypes: true }).catch(() => []);
    for (const org of orgs) {
      if (!org.isDirectory()) continue;
      for (const entry of await readdir(join(this.root, org.name), { withFileTypes: true })) {
        if (!entry.name.startsWith(kStagingPrefix) && !entry.name.startsWith(kOldPrefix)) continue;
        const path = join(this.root, org.name, entry.name);
        await rm(path, { recursive: true, force: true });
        removed.push(path);
      }
    }
    return removed.sort();
  }

  async remove(id: string): Promise<boolean> {
    const dir = this.pathOf(id);
    if (!(await exists(dir))) return false;
    await rm(dir, { recursive: true, force: true });
    return true;
  }

  async list(id: string): Promise<HubFile[]> {
    const dir = await this.resolve(id);
    const names = await modelFileNames(dir);
    return Promise.all(names.map(async (name) => ({ name, size: (await stat(join(dir, ...name.split('/')))).size })));
  }

  async open(id: string, name: string): Promise<HubFileReader> {
    const path = await this.file(id, name);
    const { size } = await stat(path);
    return { size, stream: createReadStream(path, { highWaterMark: this.#chunkBytes }) };
  }

  async close(): Promise<void> {}

  /** The local path of one of the model's files; rejects with `not_found` for anything else. */
  async file(id: string, path: string): Promise<string> {
    const dir = await this.resolve(id);
    const safe = isModelFileName(path);
    const full = safe ? join(dir, ...path.split('/')) : dir;
    const info = safe ? await stat(full).catch(() => null) : null;
    if (!info?.isFile()) throw new SvcError('not_found', `model '${id}' has no file '${String(path)}'`);
    return full;
  }
}
