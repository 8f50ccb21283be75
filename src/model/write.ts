// Writes a complete model directory. Runs inside a pool worker: building the ONNX file
// copies the whole encoder, which is too much work for the host's event loop.
import { writeManifestAndHead } from './directory.js';
import type { LogisticHead } from './directory.js';
import type { Manifest } from './manifest.js';

/**
 * Writes manifest.json, head.json, and the files transformers.js loads (config.json,
 * tokenizer.json, tokenizer_config.json, onnx/model.onnx) into `dir`.
 */
export async function writeModelDir(dir: string, manifest: Manifest, head: LogisticHead): Promise<void> {
  await writeManifestAndHead(dir, manifest, head);
}
