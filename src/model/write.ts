// Writes a complete model directory. Runs inside a pool worker: building the ONNX file
// copies the whole encoder (an adapter model's merged with its adapter), too much work for the host's event loop.
import { copyFile, mkdir, readFile, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

import { kAdapterConfigFile, readAdapter } from './adapter.js';
import type { Adapter } from './adapter.js';
import { writeMergedWeights } from './adapter-merge.js';
import { resolveBaseModel } from './base-models.js';
import { fileChecksums } from './checksums.js';
import { fsyncTree, renameDurably } from './durable.js';
import { isMultiHead, writeManifestAndHead } from './directory.js';
import type { Head } from './directory.js';
import type { Manifest } from '../contract/manifest.js';
import { parseBertConfig, writeTransformersJsModelDir } from './onnx/index.js';
import type { TransformersJsDirOptions } from './onnx/index.js';

/** How {@link writeModelDir} writes an adapter model. */
export interface WriteModelDirOptions {
  /**
   * An adapter model's transformers.js files too (base + adapter merged: seconds of CPU, about 90 MB). Default false,
   * the form the hub keeps (it builds them on a model's first download, artifacts/merged.ts); `Classifier.save` asks
   * for them unless told not to. The other bodies always have theirs, built from the weights they load.
   */
  transformersJs?: boolean;
}

/**
 * Writes the files transformers.js loads (config.json with the label maps, tokenizer.json,
 * tokenizer_config.json, onnx/model.onnx: encoder + mean pooling + normalization + head),
 * a fine-tuned model's own encoder weights (copied from `encoderFile`) or an adapter model's adapter, then head.json
 * and, last, manifest.json: a directory with a manifest is complete. The manifest's `files` holds the
 * SHA-256 of every file written before it (see model/checksums.ts).
 */
export async function writeModelDir(
  dir: string,
  manifest: Manifest,
  head: Head,
  encoderFile: string | null = null,
  options: WriteModelDirOptions = {},
): Promise<void> {
  if (manifest.body === 'adapter') {
    return writeAdapterModelDir(dir, manifest, head, encoderFile as string, options.transformersJs ?? false);
  }
  const base = resolveBaseModel(manifest.base_model);
  // Classifier guarantees that a 'finetuned' manifest comes with its encoder file, and only then.
  let weightsFile = base.weightsFile;
  if (encoderFile !== null) {
    // Copied first, so the ONNX graph is built from the directory's own weights.
    weightsFile = join(dir, manifest.encoder_file as string);
    if (resolve(encoderFile) !== resolve(weightsFile)) {
      const temporary = `${weightsFile}.${process.pid}.tmp`;
      await mkdir(dir, { recursive: true });
      await copyFile(encoderFile, temporary);
      await renameDurably(temporary, weightsFile);
    }
  }
  const written = await writeTransformersJsModelDir(dir, { baseModel: { ...base, weightsFile }, ...transformersHead(manifest, head) });
  if (encoderFile !== null) written.push(manifest.encoder_file as string);
  // Everything on the disk before the manifest that declares the directory complete.
  await fsyncTree(dir);
  await writeManifestAndHead(dir, manifest, head, await fileChecksums(dir, written));
}

/** The classification part of a transformers.js export: the labels and the head, as float32 (the graph computes in it). */
export function transformersHead(manifest: Manifest, head: Head): Omit<TransformersJsDirOptions, 'baseModel'> {
  return {
    task: 'text-classification',
    ...(isMultiHead(head)
      ? {
          labels: manifest.labels,
          multiLabel: head.kind === 'one-vs-rest',
          head: { weights: Float32Array.from(head.weights), biases: Float32Array.from(head.biases) },
        }
      : { labelText: manifest.label_text, head: { weights: Float32Array.from(head.weights), bias: head.bias } }),
  };
}

/** Reads and checks an adapter against the model's base (a wrong shape or a non-finite value names the tensor). */
export async function readModelAdapter(manifest: Manifest, configFile: string, weightsFile: string): Promise<Adapter> {
  const base = resolveBaseModel(manifest.base_model);
  const config = parseBertConfig(JSON.parse(await readFile(base.configFile, 'utf8')) as Record<string, unknown>, base.configFile);
  return readAdapter(configFile, weightsFile, config);
}

/**
 * The transformers.js files of an adapter model (transformers.js cannot apply an adapter): the base with `adapter`
 * merged in, exported as a full ONNX graph with the head. Resolves to the paths written, relative to `outDir`.
 */
export async function writeMergedTransformersFiles(outDir: string, manifest: Manifest, head: Head, adapter: Adapter): Promise<string[]> {
  const base = resolveBaseModel(manifest.base_model);
  // The merged weights go through a file because the ONNX builder reads a checkpoint; it is not one of the outputs.
  const merged = join(outDir, `.merged.${process.pid}.safetensors`);
  await mkdir(outDir, { recursive: true });
  await writeMergedWeights(base, adapter, merged);
  try {
    return await writeTransformersJsModelDir(outDir, { baseModel: { ...base, weightsFile: merged }, ...transformersHead(manifest, head) });
  } finally {
    await rm(merged, { force: true });
  }
}

/**
 * An adapter model's directory: the adapter (copied from beside `adapterFile`), with `transformersJs` the merged
 * transformers.js files, then head.json and manifest.json. Without them, no copy of the encoder and no ONNX graph:
 * under a megabyte, which is how the hub keeps them (it builds the merged files on a first download).
 */
async function writeAdapterModelDir(
  dir: string,
  manifest: Manifest,
  head: Head,
  adapterFile: string,
  transformersJs: boolean,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const from = [adapterFile, join(dirname(adapterFile), kAdapterConfigFile)];
  const to = [join(dir, manifest.adapter_file as string), join(dir, manifest.adapter_config_file as string)];
  for (let i = 0; i < from.length; i++) {
    if (resolve(from[i]) === resolve(to[i])) continue;
    const temporary = `${to[i]}.${process.pid}.tmp`;
    await copyFile(from[i], temporary);
    await renameDurably(temporary, to[i]);
  }
  const written = [manifest.adapter_file as string, manifest.adapter_config_file as string];
  // Built from the directory's own copy of the adapter, the one its manifest will vouch for.
  if (transformersJs) {
    const adapter = await readModelAdapter(manifest, to[1], to[0]);
    written.push(...(await writeMergedTransformersFiles(dir, manifest, head, adapter)));
  }
  await fsyncTree(dir);
  await writeManifestAndHead(dir, manifest, head, await fileChecksums(dir, written));
}
