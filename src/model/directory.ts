// Reading and writing a model directory: manifest.json, the head, and the files that let
// transformers.js load it (config.json, tokenizer files, onnx/model.onnx).
import { mkdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { SvcError } from '../errors.js';
import { writeFileDurably } from './durable.js';
import { kManifestFile, parseManifest } from './manifest.js';
import type { Manifest } from './manifest.js';

/** A trained logistic-regression head: P(true | text) = sigmoid(weights . embedding + bias). */
export interface LogisticHead {
  /** One coefficient per embedding dimension, float64 as fitted. */
  readonly weights: Float64Array;
  readonly bias: number;
}

interface HeadFile {
  kind: 'logistic-regression';
  dim: number;
  weights: number[];
  bias: number;
}

/** What {@link readModelDir} finds in a model directory. */
export interface ModelFiles {
  manifest: Manifest;
  head: LogisticHead;
  /** A fine-tuned model's encoder weights (absolute path); null when it uses the frozen base encoder. */
  encoderFile: string | null;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
}

async function readJson(file: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new SvcError('not_found', `${what}: ${file} does not exist`, { cause });
    }
    throw cause;
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new SvcError('invalid_request', `${file} is not valid JSON`, { cause });
  }
}

/** Parses head.json; every number must be finite, and there must be `dim` weights. */
export function parseHead(raw: unknown, file: string): LogisticHead {
  const head = raw as Partial<HeadFile> | null;
  const ok =
    head !== null &&
    typeof head === 'object' &&
    head.kind === 'logistic-regression' &&
    Number.isInteger(head.dim) &&
    Array.isArray(head.weights) &&
    head.weights.length === head.dim &&
    head.weights.every((w) => typeof w === 'number' && Number.isFinite(w)) &&
    typeof head.bias === 'number' &&
    Number.isFinite(head.bias);
  if (!ok) throw new SvcError('invalid_request', `${file} is not a logistic-regression head`);
  return Object.freeze({ weights: Float64Array.from(head.weights as number[]), bias: head.bias as number });
}

/**
 * Reads a model directory's manifest and head, and finds a fine-tuned model's encoder weights
 * (the encoder itself is loaded by the pool's workers, once per weight file).
 *
 * @example
 * ```ts
 * const { manifest, head } = await readModelDir('./my-model');
 * manifest.label_text;   // 'positive review'
 * head.weights.length;   // 384
 * ```
 */
export async function readModelDir(dir: string): Promise<ModelFiles> {
  const manifestFile = join(dir, kManifestFile);
  const manifestText = await readFile(manifestFile, 'utf8').catch((cause: NodeJS.ErrnoException) => {
    if (cause.code === 'ENOENT' || cause.code === 'ENOTDIR') {
      throw new SvcError('not_found', `${dir} is not a svc-classify model directory (no ${kManifestFile})`, { cause });
    }
    throw cause;
  });
  const manifest = parseManifest(manifestText, dir);
  // Files are named by the manifest; refuse anything that could leave the directory.
  for (const key of ['head_file', 'encoder_file'] as const) {
    const name = manifest[key];
    if (name !== undefined && (basename(name) !== name || name.startsWith('.'))) {
      throw new SvcError('invalid_request', `${manifestFile}: ${key} '${name}' is not a plain file name`);
    }
  }
  const headFile = join(dir, manifest.head_file);
  const head = parseHead(await readJson(headFile, 'the model head'), headFile);
  let encoderFile: string | null = null;
  if (manifest.encoder_file !== undefined) {
    encoderFile = join(dir, manifest.encoder_file);
    if (!(await exists(encoderFile))) {
      throw new SvcError('not_found', `the fine-tuned encoder: ${encoderFile} does not exist`);
    }
  }
  return { manifest, head, encoderFile };
}

/** Writes manifest.json and the head into `dir` (created if missing). */
export async function writeManifestAndHead(dir: string, manifest: Manifest, head: LogisticHead): Promise<void> {
  await mkdir(dir, { recursive: true });
  const headFile: HeadFile = {
    kind: 'logistic-regression',
    dim: head.weights.length,
    weights: Array.from(head.weights),
    bias: head.bias,
  };
  // Doubles print with enough digits to read back bit for bit.
  await writeFileDurably(join(dir, manifest.head_file), `${JSON.stringify(headFile)}\n`);
  await writeFileDurably(join(dir, kManifestFile), `${JSON.stringify(manifest, null, 2)}\n`);
}
