// Reading and writing a model directory: manifest.json, the head, and the files that let
// transformers.js load it (config.json, tokenizer files, onnx/model.onnx).
import { mkdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { SvcError } from '../errors.js';
import { readAdapterSettings } from './adapter.js';
import { writeFileDurably } from './durable.js';
import { sha256Hex } from './checksums.js';
import { kManifestFile, parseManifestAndChecksums } from '../contract/manifest.js';
import type { FileChecksums, Manifest } from '../contract/manifest.js';

/** A trained logistic-regression head: P(true | text) = sigmoid(weights . embedding + bias). */
export interface LogisticHead {
  /** One coefficient per embedding dimension, float64 as fitted. */
  readonly weights: Float64Array;
  readonly bias: number;
}

/**
 * A head with a row per label: `softmax` gives P(class k | text) = softmax(W e + b)_k (multi-class);
 * `one-vs-rest`, P(label k | text) = sigmoid(w_k . e + b_k), each label on its own (multi-label).
 */
export interface MultiHead {
  readonly kind: 'softmax' | 'one-vs-rest';
  /** Labels x dim, row-major, float64 as fitted. */
  readonly weights: Float64Array;
  readonly biases: Float64Array;
}

/** A binary model's head, or a multi-class or multi-label model's. */
export type Head = LogisticHead | MultiHead;

/** Whether `head` has a row per label (multi-class, multi-label). */
export function isMultiHead(head: Head): head is MultiHead {
  return 'kind' in head;
}

/** head.json of a binary model (format 1). */
interface HeadFile {
  kind: 'logistic-regression';
  dim: number;
  weights: number[];
  bias: number;
}

/** head.json of a multi-class or multi-label model: a row per label, in the manifest's `labels` order. */
interface MultiHeadFile {
  kind: 'softmax-regression' | 'one-vs-rest-logistic-regression';
  dim: number;
  weights: number[][];
  biases: number[];
}

const kMultiHeadKinds = Object.freeze({ 'softmax-regression': 'softmax', 'one-vs-rest-logistic-regression': 'one-vs-rest' } as const);

/** What {@link readModelDir} finds in a model directory. */
export interface ModelFiles {
  manifest: Manifest;
  head: Head;
  /**
   * What the pool loads beside the base model (absolute path): a `finetuned` model's encoder weights, an `adapter`
   * model's adapter_model.safetensors (its adapter_config.json checked here; its tensors are checked against the base
   * where they are read, natively in a pool worker: `Classifier.load`); null for the frozen base encoder.
   */
  encoderFile: string | null;
  /** manifest.json's SHA-256 of the directory's files (null: written before they existed); see `verifyModelFiles`. */
  checksums: FileChecksums | null;
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

const finite = (values: unknown): values is number[] =>
  Array.isArray(values) && values.every((w) => typeof w === 'number' && Number.isFinite(w));

/** Parses a multi-class or multi-label head.json: `labels` rows of `dim` finite numbers, a finite bias each. */
function parseMultiHead(raw: Partial<MultiHeadFile>, file: string, labels: number): MultiHead {
  const kind = kMultiHeadKinds[raw.kind as MultiHeadFile['kind']];
  const dim = raw.dim as number;
  const ok =
    kind !== undefined &&
    Number.isInteger(dim) &&
    dim > 0 &&
    Array.isArray(raw.weights) &&
    raw.weights.length === labels &&
    raw.weights.every((row) => finite(row) && row.length === dim) &&
    finite(raw.biases) &&
    raw.biases.length === labels;
  if (!ok) throw new SvcError('invalid_request', `${file} is not a head of ${labels} labels`);
  return Object.freeze({
    kind,
    weights: Float64Array.from((raw.weights as number[][]).flat()),
    biases: Float64Array.from(raw.biases as number[]),
  });
}

/**
 * Parses head.json; every number must be finite, and there must be `dim` weights (a row of them
 * per label when `labels` is given: multi-class and multi-label models).
 */
export function parseHead(raw: unknown, file: string, labels?: number): Head {
  if (labels !== undefined) {
    if (raw === null || typeof raw !== 'object') throw new SvcError('invalid_request', `${file} is not a head of ${labels} labels`);
    return parseMultiHead(raw as Partial<MultiHeadFile>, file, labels);
  }
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

/** Reads and parses a model directory's manifest.json alone. */
export async function readManifest(dir: string): Promise<Manifest> {
  return (await readManifestAndChecksums(dir)).manifest;
}

async function readManifestAndChecksums(dir: string): Promise<{ manifest: Manifest; files: FileChecksums | null }> {
  const manifestText = await readFile(join(dir, kManifestFile), 'utf8').catch((cause: NodeJS.ErrnoException) => {
    if (cause.code === 'ENOENT' || cause.code === 'ENOTDIR') {
      throw new SvcError('not_found', `${dir} is not a svc-classify model directory (no ${kManifestFile})`, { cause });
    }
    throw cause;
  });
  return parseManifestAndChecksums(manifestText, dir);
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
  const { manifest, files: checksums } = await readManifestAndChecksums(dir);
  // Files are named by the manifest; refuse anything that could leave the directory.
  for (const key of ['head_file', 'encoder_file', 'adapter_file', 'adapter_config_file'] as const) {
    const name = manifest[key];
    if (name !== undefined && (basename(name) !== name || name.startsWith('.'))) {
      throw new SvcError('invalid_request', `${manifestFile}: ${key} '${name}' is not a plain file name`);
    }
  }
  // The head, the weight file's presence and an adapter's config at once: each is a trip to libuv's threads, and on a
  // busy machine a model's first predict waited for four of them in turn. An adapter's config only: checking its
  // tensors' 331,776 values (rank 8) here cost the main thread 2 to 3.5 ms per load (a pool worker checks them).
  const headFile = join(dir, manifest.head_file);
  const weights = manifest.adapter_file ?? manifest.encoder_file;
  const encoderFile = weights === undefined ? null : join(dir, weights);
  const [rawHead, found] = await Promise.all([
    readJson(headFile, 'the model head'),
    encoderFile === null || exists(encoderFile),
    manifest.adapter_config_file === undefined || readAdapterSettings(join(dir, manifest.adapter_config_file)),
  ]);
  const head = parseHead(rawHead, headFile, manifest.labels?.length);
  if (!found) {
    throw new SvcError(
      'not_found',
      `${manifest.body === 'adapter' ? 'the adapter' : 'the fine-tuned encoder'}: ${encoderFile} does not exist`,
    );
  }
  return { manifest, head, encoderFile, checksums };
}

/**
 * Writes the head, then manifest.json, into `dir` (created if missing). The manifest's `files` records the head's
 * SHA-256 and those of `files`, the other files written into the directory before it (see `writeModelDir`).
 */
export async function writeManifestAndHead(dir: string, manifest: Manifest, head: Head, files: FileChecksums = {}): Promise<void> {
  await mkdir(dir, { recursive: true });
  const headFile: HeadFile | MultiHeadFile = isMultiHead(head)
    ? multiHeadFile(head)
    : {
        kind: 'logistic-regression',
        dim: head.weights.length,
        weights: Array.from(head.weights),
        bias: head.bias,
      };
  // Doubles print with enough digits to read back bit for bit.
  const headText = `${JSON.stringify(headFile)}\n`;
  await writeFileDurably(join(dir, manifest.head_file), headText);
  const checksums = { ...files, [manifest.head_file]: sha256Hex(headText) };
  const sorted = Object.fromEntries(
    Object.keys(checksums)
      .sort()
      .map((name) => [name, checksums[name]]),
  );
  await writeFileDurably(join(dir, kManifestFile), `${JSON.stringify({ ...manifest, files: sorted }, null, 2)}\n`);
}

function multiHeadFile(head: MultiHead): MultiHeadFile {
  const labels = head.biases.length;
  const dim = head.weights.length / labels;
  return {
    kind: head.kind === 'softmax' ? 'softmax-regression' : 'one-vs-rest-logistic-regression',
    dim,
    weights: Array.from({ length: labels }, (_, k) => Array.from(head.weights.subarray(k * dim, (k + 1) * dim))),
    biases: Array.from(head.biases),
  };
}
