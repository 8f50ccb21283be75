// Model files in a folder, in the hub's layout (`<root>/<org>/<model_id>/...`): the default store, and the shared
// one when every replica mounts the same volume.
import { createReadStream } from 'node:fs';
import { cp, stat } from 'node:fs/promises';

import { positiveInteger } from '../is.js';
import { DirectoryHub } from '../model/hub.js';
import { type ArtifactFile, type ArtifactReader, type ArtifactStore, kChunkBytes } from './types.js';

export interface DirectoryArtifactsOptions {
  /** Bytes per piece a stream delivers; default {@link kChunkBytes}. */
  chunkBytes?: number;
}

/**
 * An {@link ArtifactStore} on a {@link DirectoryHub}: `put` publishes through the hub's staging folder and rename,
 * so readers see the old model or the new one.
 *
 * @example
 * ```ts
 * const artifacts = new DirectoryArtifacts('/mnt/svc-models');
 * await artifacts.put('acme/svc-small-1a2b3c4d5e6f', './trained');
 * (await artifacts.list('acme/svc-small-1a2b3c4d5e6f')).map((f) => f.name);
 * // ['config.json', 'head.json', 'manifest.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json']
 * ```
 */
export class DirectoryArtifacts implements ArtifactStore {
  readonly hub: DirectoryHub;
  readonly #chunkBytes: number;

  constructor(root: string, options: DirectoryArtifactsOptions = {}) {
    this.hub = new DirectoryHub(root);
    this.#chunkBytes = positiveInteger(options.chunkBytes ?? kChunkBytes, 'options.chunkBytes');
  }

  async put(id: string, dir: string): Promise<void> {
    await this.hub.publish(id, (staging) => cp(dir, staging, { recursive: true }));
  }

  async open(id: string, name: string): Promise<ArtifactReader> {
    const path = await this.hub.file(id, name);
    const { size } = await stat(path);
    return { size, stream: createReadStream(path, { highWaterMark: this.#chunkBytes }) };
  }

  async list(id: string): Promise<ArtifactFile[]> {
    const names = await this.hub.files(id);
    return Promise.all(names.map(async (name) => ({ name, size: (await stat(await this.hub.file(id, name))).size })));
  }

  delete(id: string): Promise<boolean> {
    return this.hub.remove(id);
  }

  async close(): Promise<void> {}
}
