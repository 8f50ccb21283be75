// Reading a sentence-transformers folder a user brings as a base model: what config.json,
// tokenizer.json, the weights and the sentence-transformers files say, checked against each other,
// and the fingerprint of the files that define the model's output.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';

import { SvcError } from '../errors.js';

/** The encoder architectures a base model may be (config.json `model_type`). */
export type BaseModelFamily = 'bert' | 'xlm-roberta' | 'mpnet';
/** How token vectors become a text's embedding (1_Pooling/config.json). */
export type BaseModelPooling = 'mean' | 'cls';

const kFamilies: readonly BaseModelFamily[] = ['bert', 'xlm-roberta', 'mpnet'];
const kWeightDtypes = new Set(['F32', 'F16', 'BF16']);
/** Pooling modes sentence-transformers has besides mean and CLS, none of which this engine computes. */
const kOtherPoolingModes = [
  'pooling_mode_max_tokens',
  'pooling_mode_mean_sqrt_len_tokens',
  'pooling_mode_weightedmean_tokens',
  'pooling_mode_lasttoken',
];

/** What a brought folder says about its model, with the files it was read from. */
export interface BaseModelFolder {
  readonly dir: string;
  readonly configFile: string;
  readonly tokenizerFile: string;
  readonly weightsFile: string;
  readonly family: BaseModelFamily;
  readonly hiddenSize: number;
  readonly pooling: BaseModelPooling;
  readonly normalize: boolean;
  /** Tokens a text keeps: `max_seq_length`, at most `contextWindow`. */
  readonly maxLength: number;
  /** Positions the encoder can address after its offset (`max_position_embeddings` less `pad_token_id + 1` for xlm-roberta and mpnet). */
  readonly contextWindow: number;
  /** The prefix put before every text a classifier reads ('' for none); see `choosePrompt`. */
  readonly prompt: string;
  /** The files `fingerprint` covers, in the order they are hashed. */
  readonly definingFiles: readonly string[];
}

function invalid(file: string, why: string): SvcError {
  return new SvcError('invalid_request', `${file}: ${why}`, { param: 'dir' });
}

function readJson(file: string): unknown {
  if (!existsSync(file))
    throw invalid(file, 'is missing; a base model folder is a sentence-transformers model as saved by save_pretrained');
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (cause) {
    throw new SvcError('invalid_request', `${file}: is not JSON (${(cause as Error).message})`, { param: 'dir', cause });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function objectIn(file: string): Record<string, unknown> {
  const value = readJson(file);
  if (!isRecord(value)) throw invalid(file, 'is not a JSON object');
  return value;
}

function positiveInteger(raw: Record<string, unknown>, file: string, name: string): number {
  const value = raw[name];
  if (!Number.isInteger(value) || (value as number) < 1)
    throw invalid(file, `${name} must be a positive integer (got ${JSON.stringify(value)})`);
  return value as number;
}

/** Tokens the tokenizer can produce: its model's vocabulary and any added token past it. */
export function tokenizerVocabularySize(file: string): number {
  const raw = objectIn(file);
  const model = raw.model;
  if (!isRecord(model)) throw invalid(file, 'has no model');
  const vocab = model.vocab;
  // WordPiece and BPE keep a token -> id object; Unigram a list of [piece, score] in id order.
  let size: number;
  if (Array.isArray(vocab)) size = vocab.length;
  else if (isRecord(vocab)) size = Math.max(0, ...Object.values(vocab).map((id) => (typeof id === 'number' ? id + 1 : 0)));
  else throw invalid(file, `model ${String(model.type)} has no vocab`);
  const added = Array.isArray(raw.added_tokens) ? (raw.added_tokens as unknown[]) : [];
  for (const token of added) if (isRecord(token) && typeof token.id === 'number') size = Math.max(size, token.id + 1);
  return size;
}

/** The dtypes of the tensors in a safetensors file, read from its header alone (the weights may be gigabytes). */
function weightDtypes(file: string): Set<string> {
  if (!existsSync(file)) throw invalid(file, 'is missing; the weights must be model.safetensors (fp32, fp16 or bf16)');
  const fd = openSync(file, 'r');
  try {
    const lengthBytes = Buffer.alloc(8);
    if (readSync(fd, lengthBytes, 0, 8, 0) !== 8) throw invalid(file, 'is shorter than a safetensors header');
    const headerLength = Number(lengthBytes.readBigUInt64LE(0));
    if (headerLength > 100_000_000) throw invalid(file, `is not safetensors (header length ${headerLength})`);
    const header = Buffer.alloc(headerLength);
    if (readSync(fd, header, 0, headerLength, 8) !== headerLength) throw invalid(file, 'ends inside its safetensors header');
    let parsed: unknown;
    try {
      parsed = JSON.parse(header.toString('utf8'));
    } catch {
      throw invalid(file, 'is not safetensors (its header is not JSON)');
    }
    if (!isRecord(parsed)) throw invalid(file, 'is not safetensors (its header is not an object)');
    const dtypes = new Set<string>();
    for (const [name, entry] of Object.entries(parsed)) {
      // Older exports keep the position_ids buffer (int64) beside the weights; it is not a weight.
      if (name !== '__metadata__' && !name.endsWith('_ids') && isRecord(entry)) dtypes.add(String(entry.dtype));
    }
    return dtypes;
  } finally {
    closeSync(fd);
  }
}

interface Modules {
  poolingDir: string;
  normalize: boolean;
}

function readModules(dir: string): Modules {
  const file = join(dir, 'modules.json');
  const modules = readJson(file);
  if (!Array.isArray(modules)) throw invalid(file, 'is not a list of modules');
  const types = modules.map((m) => (isRecord(m) && typeof m.type === 'string' ? m.type : ''));
  const pooling = modules.find((m, i) => types[i]!.endsWith('.Pooling')) as Record<string, unknown> | undefined;
  if (!pooling || typeof pooling.path !== 'string') throw invalid(file, 'has no sentence_transformers.models.Pooling module with a path');
  const poolingDir = resolve(dir, pooling.path);
  const inside = relative(dir, poolingDir);
  if (inside.startsWith('..') || isAbsolute(inside)) throw invalid(file, `the Pooling module's path '${pooling.path}' leaves the folder`);
  return { poolingDir, normalize: types.some((type) => type.endsWith('.Normalize')) };
}

function readPooling(file: string): BaseModelPooling {
  const raw = objectIn(file);
  // Newer sentence-transformers also write the mode by name.
  const named = raw.pooling_mode;
  if (named === 'mean' || named === 'cls') return named;
  const mean = raw.pooling_mode_mean_tokens === true;
  const cls = raw.pooling_mode_cls_token === true;
  const others = kOtherPoolingModes.filter((mode) => raw[mode] === true);
  if (mean !== cls && others.length === 0) return mean ? 'mean' : 'cls';
  const modes = [...(mean ? ['pooling_mode_mean_tokens'] : []), ...(cls ? ['pooling_mode_cls_token'] : []), ...others];
  throw invalid(
    file,
    `pooling must be exactly one of pooling_mode_mean_tokens or pooling_mode_cls_token (set: ${modes.length > 0 ? modes.join(', ') : 'none'})`,
  );
}

/**
 * The prompt a classifier puts before every text: config_sentence_transformers.json's
 * `default_prompt_name` when it names one of its `prompts`, else its `query` prompt (e5's
 * `query: `, which e5 asks for in classification), else none. Training and prediction apply
 * the same one, so a head is fitted on what it later reads.
 */
function choosePrompt(file: string): string {
  if (!existsSync(file)) return '';
  const raw = objectIn(file);
  const prompts = raw.prompts ?? {};
  if (!isRecord(prompts) || Object.values(prompts).some((p) => typeof p !== 'string'))
    throw invalid(file, 'prompts must map names to strings');
  const name = raw.default_prompt_name;
  if (typeof name === 'string') {
    if (!(name in prompts)) throw invalid(file, `default_prompt_name '${name}' is not one of its prompts`);
    return prompts[name] as string;
  }
  return typeof prompts.query === 'string' ? prompts.query : '';
}

/**
 * Reads and checks a sentence-transformers folder: every missing file or bad field is an
 * `invalid_request` naming the file.
 *
 * @example
 * ```ts
 * readBaseModelFolder('/models/bge-small-en-v1.5');
 * // { family: 'bert', pooling: 'cls', normalize: true, maxLength: 512, prompt: '', hiddenSize: 384, ... }
 * ```
 */
export function readBaseModelFolder(dir: string): BaseModelFolder {
  dir = resolve(dir);
  const configFile = join(dir, 'config.json');
  const tokenizerFile = join(dir, 'tokenizer.json');
  const weightsFile = join(dir, 'model.safetensors');
  const config = objectIn(configFile);
  const family = config.model_type as BaseModelFamily;
  if (!kFamilies.includes(family)) {
    throw invalid(configFile, `model_type ${JSON.stringify(config.model_type)} is not supported (supported: ${kFamilies.join(', ')})`);
  }
  const hiddenSize = positiveInteger(config, configFile, 'hidden_size');
  positiveInteger(config, configFile, 'num_hidden_layers');
  positiveInteger(config, configFile, 'intermediate_size');
  const heads = positiveInteger(config, configFile, 'num_attention_heads');
  if (hiddenSize % heads !== 0) throw invalid(configFile, `hidden_size ${hiddenSize} is not a multiple of num_attention_heads ${heads}`);
  const vocabSize = positiveInteger(config, configFile, 'vocab_size');
  const positions = positiveInteger(config, configFile, 'max_position_embeddings');
  const padId = Number.isInteger(config.pad_token_id) ? (config.pad_token_id as number) : family === 'bert' ? 0 : 1;
  // RoBERTa-style position ids start after the padding id; BERT's start at 0.
  const contextWindow = positions - (family === 'bert' ? 0 : padId + 1);
  if (contextWindow < 1) throw invalid(configFile, `max_position_embeddings ${positions} leaves no position after the offset ${padId + 1}`);

  const tokens = tokenizerVocabularySize(tokenizerFile);
  if (tokens !== vocabSize) {
    throw new SvcError(
      'invalid_request',
      `${tokenizerFile} has ${tokens} tokens but ${configFile} says vocab_size ${vocabSize}: the tokenizer is not this model's`,
      { param: 'dir' },
    );
  }
  const dtypes = [...weightDtypes(weightsFile)];
  const bad = dtypes.filter((dtype) => !kWeightDtypes.has(dtype));
  if (bad.length > 0 || dtypes.length === 0) {
    throw invalid(weightsFile, `weights must be F32, F16 or BF16 (found ${dtypes.length > 0 ? dtypes.join(', ') : 'no tensors'})`);
  }

  const { poolingDir, normalize } = readModules(dir);
  const poolingFile = join(poolingDir, 'config.json');
  const pooling = readPooling(poolingFile);
  const sentenceFile = join(dir, 'sentence_bert_config.json');
  const maxSeqLength = positiveInteger(objectIn(sentenceFile), sentenceFile, 'max_seq_length');
  const promptsFile = join(dir, 'config_sentence_transformers.json');
  const prompt = choosePrompt(promptsFile);
  const definingFiles = [configFile, tokenizerFile, weightsFile, join(dir, 'modules.json'), poolingFile, sentenceFile];
  if (existsSync(promptsFile)) definingFiles.push(promptsFile);
  return Object.freeze({
    dir,
    configFile,
    tokenizerFile,
    weightsFile,
    family,
    hiddenSize,
    pooling,
    normalize,
    maxLength: Math.min(maxSeqLength, contextWindow),
    contextWindow,
    prompt,
    definingFiles: Object.freeze(definingFiles),
  });
}

/**
 * sha256 over `files` (each one's path inside `dir` and its bytes), read in 1 MiB
 * pieces so the weights are never held whole.
 *
 * @example
 * ```ts
 * const folder = readBaseModelFolder('/models/e5-small-v2');
 * fingerprintFiles(folder.dir, folder.definingFiles); // 'sha256:3f2a…' (64 hex digits)
 * ```
 */
export function fingerprintFiles(dir: string, files: readonly string[]): string {
  const hash = createHash('sha256');
  const piece = Buffer.alloc(1 << 20);
  for (const file of files) {
    hash.update(`${relative(dir, file)}\0`);
    const fd = openSync(file, 'r');
    try {
      for (let read = readSync(fd, piece); read > 0; read = readSync(fd, piece)) hash.update(piece.subarray(0, read));
    } finally {
      closeSync(fd);
    }
    hash.update('\0');
  }
  return `sha256:${hash.digest('hex')}`;
}
