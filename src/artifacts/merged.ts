// The hub's transformers.js files of adapter models. A model directory of an adapter model holds the adapter, the head
// and the manifest (under a megabyte); transformers.js cannot apply an adapter, so the hub serves it config.json, the
// tokenizer files and onnx/model.onnx of base + adapter merged, built by a pool worker on the first request and put in
// the hub under `_merged/<sha256 of what they are built from>` (no organization name starts with '_'):
// built once per adapter and head, whichever replica asks, and shared by identical models.
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SvcError } from '../errors.js';
import { kAdapterConfigFile } from '../model/adapter.js';
import { readManifest } from '../model/directory.js';
import type { Hub, HubFileReader } from '../model/hub.js';
import { kMergedExportVersion, kMergedFiles } from '../model/merged-export.js';
import { runTask } from '../pool/pool.js';

/** The hub "organization" of merged exports: organization names start with a letter or digit. */
export const kMergedOrg = '_merged';

/**
 * The content address of an adapter model's merged export: SHA-256 over the export's version, the base, the labels
 * and the bytes of the adapter, its config and the head (the id, dates and metrics do not change the export).
 */
export async function mergedKey(modelDir: string): Promise<string> {
  const manifest = await readManifest(modelDir);
  if (manifest.adapter_file === undefined || manifest.adapter_config_file === undefined) {
    throw new SvcError('internal', `${modelDir} is not an adapter model`);
  }
  const hash = createHash('sha256');
  const part = (bytes: string | Uint8Array) => hash.update(`${bytes.length}:`).update(bytes);
  part(
    JSON.stringify({
      v: kMergedExportVersion,
      base: manifest.base_model,
      task: manifest.task_type,
      label: manifest.label_text,
      labels: manifest.labels,
    }),
  );
  for (const name of [manifest.adapter_file, manifest.adapter_config_file, manifest.head_file]) part(await readFile(join(modelDir, name)));
  return hash.digest('hex');
}

/**
 * A model's files in a {@link Hub}, with an adapter model's transformers.js files merged on demand from the local
 * copy of the model the hub resolves to.
 *
 * @example
 * ```ts
 * const files = new MergedExports(hub);
 * await files.list('acme/svc-small-1a2b3c4d5e6f');
 * // ['adapter_config.json', 'adapter_model.safetensors', 'config.json', 'head.json', 'manifest.json',
 * //  'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json']
 * ```
 */
export class MergedExports {
  readonly #hub: Hub;
  // One build per export at a time in this process: concurrent downloads wait for the same one.
  readonly #building = new Map<string, Promise<void>>();

  constructor(hub: Hub) {
    this.#hub = hub;
  }

  /** The model's files, sorted; an adapter model's include the transformers.js files, built or not. */
  async list(id: string): Promise<string[]> {
    const names = (await this.#hub.list(id)).map((f) => f.name);
    if (!names.includes(kAdapterConfigFile)) return names;
    return [...new Set([...names, ...kMergedFiles])].sort();
  }

  /** Opens one of {@link list}'s files, building an adapter model's merged export first when it is not stored yet. */
  async open(id: string, name: string): Promise<HubFileReader> {
    if (!kMergedFiles.includes(name)) return this.#hub.open(id, name);
    const names = (await this.#hub.list(id)).map((f) => f.name);
    if (!names.includes(kAdapterConfigFile)) return this.#hub.open(id, name);
    return this.#hub.open(await this.mergedId(id), name);
  }

  /** The hub id of the model's merged export, built and stored first if needed. */
  async mergedId(id: string): Promise<string> {
    const dir = await this.#hub.resolve(id);
    const mergedId = `${kMergedOrg}/${await mergedKey(dir)}`;
    const stored = await this.#hub.list(mergedId).then(
      (files) => kMergedFiles.every((name) => files.some((f) => f.name === name)),
      () => false,
    );
    if (stored) return mergedId;
    let building = this.#building.get(mergedId);
    if (building === undefined) {
      building = this.#build(dir, mergedId).finally(() => this.#building.delete(mergedId));
      this.#building.set(mergedId, building);
    }
    await building;
    return mergedId;
  }

  /** Drops the model's merged export, if it has one (a later download builds it again). */
  async forget(id: string): Promise<void> {
    // Only an adapter model has one; asking first spares fetching a full model into the cache just to delete it.
    const names = await this.#hub.list(id).then(
      (files) => files.map((f) => f.name),
      () => [] as string[],
    );
    if (!names.includes(kAdapterConfigFile)) return;
    const dir = await this.#hub.resolve(id).catch(() => null);
    const key = dir === null ? null : await mergedKey(dir).catch(() => null);
    if (key !== null) await this.#hub.remove(`${kMergedOrg}/${key}`);
  }

  async #build(modelDir: string, mergedId: string): Promise<void> {
    const out = await mkdtemp(join(tmpdir(), 'svc-classify-merged-'));
    try {
      await runTask({ kind: 'export-merged', modelDir, outDir: out });
      await this.#hub.publish(mergedId, (dir) => cp(out, dir, { recursive: true }));
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }
}
