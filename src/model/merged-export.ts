// The transformers.js files of an adapter model into a folder of their own: transformers.js cannot apply an adapter,
// so it gets the base with the adapter merged in, exported as a full ONNX graph (about 87 MB). The hub builds them on
// request, once per adapter (see artifacts/merged.ts), never at training time: most adapter models it keeps are never
// downloaded. `Classifier.save` writes them beside the adapter (model/write.ts).
import { join } from 'node:path';

import { SvcError } from '../errors.js';
import { verifyModelFiles } from './checksums.js';
import { readModelDir } from './directory.js';
import { readModelAdapter, writeMergedTransformersFiles } from './write.js';

/** The files {@link writeMergedTransformersDir} writes, sorted: what transformers.js' text-classification pipeline reads. */
export const kMergedFiles: readonly string[] = Object.freeze(['config.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json']);
/** Bump when the merged export's bytes change for the same inputs (the hub then builds each one anew). */
export const kMergedExportVersion = 1;

/**
 * Writes the transformers.js files of the adapter model in `modelDir` into `outDir`: config.json with its labels,
 * the tokenizer files, and onnx/model.onnx computing base + adapter, mean pooling and the head. Rejects with
 * `SvcError('invalid_request')` for a model that is not an adapter model or whose adapter does not check.
 * Seconds of CPU (about 8 s on two cores for svc-small): the service runs it in a pool worker.
 *
 * @example
 * ```ts
 * await writeMergedTransformersDir('./my-adapter-model', './my-adapter-model-js');
 * // ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx']
 * const classify = await pipeline('text-classification', './my-adapter-model-js');
 * ```
 */
export async function writeMergedTransformersDir(modelDir: string, outDir: string): Promise<string[]> {
  const { manifest, head, encoderFile, checksums } = await readModelDir(modelDir);
  if (manifest.body !== 'adapter' || encoderFile === null) {
    throw new SvcError('invalid_request', `${modelDir} is not an adapter model; its transformers.js files are in its directory`);
  }
  const adapter = await readModelAdapter(manifest, join(modelDir, manifest.adapter_config_file as string), encoderFile);
  // A download carries what the model predicts: not an adapter or head changed since the model was saved.
  await verifyModelFiles(modelDir, manifest, checksums);
  return writeMergedTransformersFiles(outDir, manifest, head, adapter);
}
