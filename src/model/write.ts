// Writes a complete model directory. Runs inside a pool worker: building the ONNX file
// copies the whole encoder, which is too much work for the host's event loop.
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

import { kAdapterConfigFile } from './adapter.js';
import { resolveBaseModel } from './base-models.js';
import { fileChecksums } from './checksums.js';
import { fsyncTree, renameDurably } from './durable.js';
import { isMultiHead, writeManifestAndHead } from './directory.js';
import type { Head } from './directory.js';
import type { Manifest } from '../contract/manifest.js';
import { writeTransformersJsModelDir } from './onnx/index.js';
import type { TransformersJsDirOptions } from './onnx/index.js';

/**
 * Writes the files transformers.js loads (config.json with the label maps, tokenizer.json,
 * tokenizer_config.json, onnx/model.onnx: encoder + mean pooling + normalization + head),
 * a fine-tuned model's own encoder weights (copied from `encoderFile`), then head.json and,
 * last, manifest.json: a directory with a manifest is complete. The manifest's `files` holds the
 * SHA-256 of every file written before it (see model/checksums.ts).
 */
export async function writeModelDir(dir: string, manifest: Manifest, head: Head, encoderFile: string | null = null): Promise<void> {
  if (manifest.body === 'adapter') return writeAdapterModelDir(dir, manifest, head, encoderFile as string);
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

/**
 * An adapter model's directory: the adapter (copied from beside `adapterFile`), then head.json and manifest.json;
 * no copy of the encoder and no ONNX graph, so under a megabyte. transformers.js cannot apply an adapter: the hub
 * serves it a merged graph built on first request (see model/merged-export.ts).
 */
async function writeAdapterModelDir(dir: string, manifest: Manifest, head: Head, adapterFile: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const from = [adapterFile, join(dirname(adapterFile), kAdapterConfigFile)];
  const to = [join(dir, manifest.adapter_file as string), join(dir, manifest.adapter_config_file as string)];
  for (let i = 0; i < from.length; i++) {
    if (resolve(from[i]) === resolve(to[i])) continue;
    const temporary = `${to[i]}.${process.pid}.tmp`;
    await copyFile(from[i], temporary);
    await renameDurably(temporary, to[i]);
  }
  await fsyncTree(dir);
  const checksums = await fileChecksums(dir, [manifest.adapter_file as string, manifest.adapter_config_file as string]);
  await writeManifestAndHead(dir, manifest, head, checksums);
}
