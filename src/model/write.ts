// Writes a complete model directory. Runs inside a pool worker: building the ONNX file
// copies the whole encoder, which is too much work for the host's event loop.
import { writeManifestAndHead } from './directory.js';
import type { LogisticHead } from './directory.js';
import type { Manifest } from './manifest.js';
import { writeTransformersJsModelDir } from './onnx/index.js';

/**
 * Writes the files transformers.js loads (config.json with the label maps, tokenizer.json,
 * tokenizer_config.json, onnx/model.onnx: encoder + mean pooling + normalization + head),
 * then head.json and, last, manifest.json: a directory with a manifest is complete.
 */
export async function writeModelDir(dir: string, manifest: Manifest, head: LogisticHead): Promise<void> {
  await writeTransformersJsModelDir(dir, {
    baseModel: manifest.base_model,
    task: 'text-classification',
    labelText: manifest.label_text,
    // The ONNX graph computes in float32; our head keeps its float64 coefficients.
    head: { weights: Float32Array.from(head.weights), bias: head.bias },
  });
  await writeManifestAndHead(dir, manifest, head);
}
