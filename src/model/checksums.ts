// SHA-256 of a model directory's files: recorded in manifest.json's `files` when the directory is written
// (model/write.ts), checked when a model is loaded. A file that still parses but holds other values (a float changed
// in place, a disk's flipped bit) would otherwise be used silently. The checks read only the model's own files (an
// adapter is 0.7 MB, a head a few kilobytes), never the base encoder's weights shipped in npm, and they come after a
// file's own checks, so a garbled file is still reported by what is wrong in it (the tensor, the field). Only at
// load: a pool worker reading an adapter again (its second worker, after an eviction) does not check it, because a
// save in place writes the adapter before its manifest, and a reader between the two would find them disagreeing.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';

import { SvcError } from '../errors.js';
import { kManifestFile } from '../contract/manifest.js';
import type { FileChecksums, Manifest } from '../contract/manifest.js';

/** The SHA-256 of bytes (a string as UTF-8), in lowercase hex. */
export function sha256Hex(bytes: string | Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Streamed, so a 45 MB fine-tuned encoder never sits in memory whole nor holds the event loop in one piece. */
async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') throw new SvcError('not_found', `${file} does not exist`, { cause });
    throw cause;
  }
  return hash.digest('hex');
}

/**
 * The SHA-256 of each of `names` (paths inside `dir`), for manifest.json's `files`.
 *
 * @example
 * ```ts
 * await fileChecksums('./my-model', ['adapter_model.safetensors', 'adapter_config.json']);
 * // { 'adapter_model.safetensors': '9b0e…', 'adapter_config.json': '3f1c…' }
 * ```
 */
export async function fileChecksums(dir: string, names: readonly string[]): Promise<Record<string, string>> {
  const hashes = await Promise.all(names.map((name) => sha256OfFile(join(dir, name))));
  return Object.fromEntries(names.map((name, i) => [name, hashes[i]]));
}

/** The files a classifier reads to predict: its head, and its adapter (weights and config) or fine-tuned encoder. */
function filesLoadReads(manifest: Manifest): string[] {
  const names = [manifest.head_file, manifest.adapter_config_file, manifest.adapter_file, manifest.encoder_file];
  return names.filter((name): name is string => name !== undefined);
}

function altered(file: string): SvcError {
  return new SvcError(
    'invalid_request',
    `${file} is not the file the model was saved with: its SHA-256 differs from the one in ${kManifestFile} (the file was damaged or changed since)`,
  );
}

/**
 * Checks the files a classifier reads (head, adapter, fine-tuned encoder) against manifest.json's checksums; rejects
 * with `SvcError('invalid_request')` naming the first file that differs. A directory written before checksums
 * existed (`checksums` null) passes, as does a file the manifest has no checksum for.
 *
 * @example
 * ```ts
 * const { manifest, checksums } = await readModelDir('./my-model');
 * await verifyModelFiles('./my-model', manifest, checksums);
 * // throws SvcError: ./my-model/head.json is not the file the model was saved with: its SHA-256 differs from …
 * ```
 */
export async function verifyModelFiles(dir: string, manifest: Manifest, checksums: FileChecksums | null): Promise<void> {
  if (checksums === null) return;
  const names = filesLoadReads(manifest).filter((name) => checksums[name] !== undefined);
  const found = await fileChecksums(dir, names);
  const bad = names.find((name) => found[name] !== checksums[name]);
  if (bad !== undefined) throw altered(join(dir, bad));
}
