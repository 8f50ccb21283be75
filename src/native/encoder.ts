import { existsSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';

import { callNative, SvcError } from '../errors.js';
import { isBaseModelName, resolveBaseModel } from '../model/base-models.js';
import type { NativeEncoder } from './binding.js';
import { findAdapter, nativeSegments } from './adapter.js';
import type { AdapterSegments } from './adapter.js';
import { kernelChoice } from './kernel-choice.js';
import { loadAddon } from './load.js';
import { checkMaxLength, Tokenizer } from './tokenizer.js';
import * as is from '../is.js';

/**
 * Arithmetic of the encoder: fp32 (exact); int8 (weights per channel, activations per row; faster,
 * embeddings within about 0.995 cosine of fp32); bf16 (the linear layers' products in bf16 with
 * fp32 sums, on CPUs with bf16 products, `cpuInfo().bf16`; elsewhere it runs fp32, which
 * `Encoder#precision` then reports).
 */
export type EncoderPrecision = 'fp32' | 'int8' | 'bf16';

/**
 * A precision to ask for: one of {@link EncoderPrecision}, or `'auto'`: bf16 where a bf16 kernel measured faster than
 * fp32 on this CPU within bf16's accuracy bound, fp32 elsewhere ({@link kernelChoice}). int8 is never chosen for you.
 */
export type PrecisionSetting = EncoderPrecision | 'auto';

export interface EncoderOptions {
  /**
   * Default `'auto'`: bf16 where it measured faster on this CPU (embeddings within cosine 0.9999 of fp32's), fp32
   * elsewhere. `'fp32'` for fp32's exact answers on every CPU.
   */
  precision?: PrecisionSetting;
  /** Threads the encoder computes on, the calling thread included. Default: `os.availableParallelism()`. */
  threads?: number;
  /**
   * A LoRA adapter in PEFT's layout to merge into the weights at load (W + (lora_alpha / r) B A): a directory with
   * `adapter_config.json` and `adapter_model.safetensors`, or that safetensors file with the config beside it. The
   * merged copy is this adapter's own (shared by every Encoder of the process with the same adapter). Default: none.
   */
  adapter?: string;
  /**
   * How a text's token states become its embedding, as the base model's `1_Pooling/config.json` says: `'mean'` of
   * every token (default) or `'cls'`, the first token's state.
   */
  pooling?: 'mean' | 'cls';
  /** Whether embeddings are L2-normalized, as a `2_Normalize` module in `modules.json` says. Default `true`. */
  normalize?: boolean;
  /**
   * Most tokens a text keeps, special tokens included (2 to 100000; the positions the model has are checked on use). Default: a base model's own `max_seq_length`;
   * for a directory or weights file, 256. A fine-tuned copy of a base model reads as many as its base.
   */
  maxLength?: number;
}

interface ResolvedEncoderOptions {
  precision: PrecisionSetting;
  threads: number;
  adapter: { file: string; rank: number; scale: number } | null;
  pooling: 'mean' | 'cls';
  normalize: boolean;
  maxLength: number | undefined;
}

const kPrecisions: readonly PrecisionSetting[] = Object.freeze(['fp32', 'int8', 'bf16', 'auto']);
// Weight files looked for in a model directory, in order.
const kWeightFiles = Object.freeze(['model.safetensors', 'model.fp16.safetensors']);
// sentence-transformers' max_seq_length for models given as a directory.
const kDefaultMaxLength = 256;

/** Checks a precision given by a caller (`name` is how the message calls it). */
export function checkPrecision(value: unknown, name: string): PrecisionSetting {
  if (!kPrecisions.includes(value as PrecisionSetting)) {
    throw new TypeError(`${name} must be 'fp32', 'int8', 'bf16' or 'auto'`);
  }
  return value as PrecisionSetting;
}

/**
 * The precision an encoder on `threads` threads runs for a setting: `'auto'` as measured on this CPU (cached), and an
 * explicit `'bf16'` with the faster bf16 kernel where the CPU has two. `'fp32'` and `'int8'` are taken as they are.
 */
export function resolvePrecision(setting: PrecisionSetting, threads: number): EncoderPrecision {
  if (setting === 'auto') return kernelChoice(threads).precision;
  if (setting !== 'bf16') return setting;
  const cpu = loadAddon().cpuInfo();
  // Which of AMX and vdpbf16ps runs bf16 is measured too, where the CPU has both.
  if (cpu.amx) kernelChoice(threads);
  return cpu.bf16 ? 'bf16' : 'fp32';
}

function resolveOptions(options: EncoderOptions): ResolvedEncoderOptions {
  is.object(options, 'options');
  const precision = checkPrecision(options.precision ?? 'auto', 'options.precision');
  const threads = is.positiveInteger(options.threads ?? availableParallelism(), 'options.threads', 1024);
  const adapter = options.adapter === undefined ? null : findAdapter(options.adapter);
  const pooling = options.pooling ?? 'mean';
  if (pooling !== 'mean' && pooling !== 'cls') throw new TypeError("options.pooling must be 'mean' or 'cls'");
  const normalize = options.normalize ?? true;
  if (typeof normalize !== 'boolean') throw new TypeError('options.normalize must be a boolean');
  const maxLength = options.maxLength === undefined ? undefined : checkMaxLength(options.maxLength, 0);
  return { precision, threads, adapter, pooling, normalize, maxLength };
}

export interface ModelFiles {
  configFile: string;
  weightsFile: string;
  tokenizerFile: string;
  maxLength: number;
}

export function findModelFiles(model: string): ModelFiles {
  if (typeof model !== 'string' || model.length === 0) {
    throw new TypeError("model must be a base model name such as 'svc-small' or a model directory");
  }
  if (isBaseModelName(model)) {
    const base = resolveBaseModel(model);
    return {
      configFile: base.configFile,
      weightsFile: base.weightsFile,
      tokenizerFile: base.tokenizerFile,
      maxLength: base.maxLength,
    };
  }
  if (model.endsWith('.safetensors')) {
    // A weight file (a fine-tuned model's own encoder) with its config.json beside it.
    const dir = dirname(model);
    const configFile = join(dir, 'config.json');
    if (!existsSync(model) || !existsSync(configFile)) {
      throw new SvcError('invalid_request', `'${model}' is not a safetensors file with config.json beside it`, {
        param: 'model',
      });
    }
    return { configFile, weightsFile: model, tokenizerFile: join(dir, 'tokenizer.json'), maxLength: kDefaultMaxLength };
  }
  const configFile = join(model, 'config.json');
  if (!existsSync(configFile)) {
    throw new SvcError('invalid_request', `'${model}' is neither a base model nor a directory with config.json`, {
      param: 'model',
    });
  }
  const named = kWeightFiles.map((f) => join(model, f)).find((f) => existsSync(f));
  const any = readdirSync(model).filter((f) => f.endsWith('.safetensors'));
  const weightsFile = named ?? (any.length === 1 ? join(model, any[0]!) : undefined);
  if (!weightsFile) {
    throw new SvcError('invalid_request', `no safetensors weights in '${model}'`, { param: 'model' });
  }
  return { configFile, weightsFile, tokenizerFile: join(model, 'tokenizer.json'), maxLength: kDefaultMaxLength };
}

function checkIds(ids: Int32Array, lengths: Int32Array): void {
  if (!(ids instanceof Int32Array)) throw new TypeError('ids must be an Int32Array');
  if (!(lengths instanceof Int32Array)) throw new TypeError('lengths must be an Int32Array');
  let total = 0;
  for (const n of lengths) total += n;
  if (total !== ids.length) {
    throw new RangeError(`ids has ${ids.length} entries but lengths add up to ${total}`);
  }
}

/**
 * The svc-small sentence encoder (or any BERT-family model directory), running on
 * the native engine: a packed batch (no padding), its own threads, weights shared by
 * every Encoder of the process. Calls are synchronous: run them in a worker thread.
 *
 * @example
 * ```ts
 * import { Encoder } from 'svc-classify';
 * const encoder = Encoder.fromPretrained('svc-small', { threads: 2 });
 * const embedding = encoder.embedSync(['This is an example sentence']);
 * embedding.length; // 384
 * Array.from(embedding.slice(0, 4), (x) => +x.toFixed(4)); // [0.0677, 0.0636, 0.0487, 0.0794]
 * // Pre-tokenized: the same text as ids
 * encoder.embedIdsSync(Int32Array.of(101, 2023, 2003, 2019, 2742, 6251, 102), Int32Array.of(7)); // same values
 * encoder.dispose();
 * ```
 */
export class Encoder {
  #native: NativeEncoder | null;
  #tokenizer: Tokenizer | undefined;
  readonly #precision: EncoderPrecision;
  readonly #files: ModelFiles;

  private constructor(native: NativeEncoder, precision: EncoderPrecision, files: ModelFiles) {
    this.#native = native;
    this.#precision = precision;
    this.#files = files;
  }

  /**
   * Loads an encoder: `'svc-small'`, a directory with `config.json` and safetensors weights, or
   * a `.safetensors` file with `config.json` beside it (a fine-tuned model's `model.fp16.safetensors`).
   * The first load of a weight file in the process reads it; later ones share it. With `options.adapter`, a LoRA
   * adapter (a fine-tuned model's `adapter_model.safetensors`) is checked against the config and merged in.
   *
   * @example
   * ```ts
   * const encoder = Encoder.fromPretrained('svc-small', { precision: 'int8', threads: 1 });
   * encoder.dim; // 384
   * const tuned = Encoder.fromPretrained('svc-small', { adapter: './my-model' }); // base + the model's adapter
   * const bge = Encoder.fromPretrained('./bge-small-en-v1.5', { pooling: 'cls', normalize: true }); // a brought folder
   * ```
   */
  static fromPretrained(model: string, options: EncoderOptions = {}): Encoder {
    const resolved = resolveOptions(options);
    const found = findModelFiles(model);
    const files = resolved.maxLength === undefined ? found : { ...found, maxLength: resolved.maxLength };
    const { Encoder: NativeEncoderClass } = loadAddon();
    const precision = resolvePrecision(resolved.precision, resolved.threads);
    return callNative(() => {
      const { adapter } = resolved;
      const native = adapter
        ? new NativeEncoderClass(
            files.configFile,
            files.weightsFile,
            precision,
            resolved.threads,
            adapter.file,
            adapter.rank,
            adapter.scale,
          )
        : new NativeEncoderClass(files.configFile, files.weightsFile, precision, resolved.threads);
      native.setPooling(resolved.pooling === 'cls', resolved.normalize);
      return new Encoder(native, native.precision, files);
    });
  }

  #live(): NativeEncoder {
    if (!this.#native) throw new SvcError('invalid_request', 'the encoder has been disposed');
    return this.#native;
  }

  /** Embedding size (384 for svc-small). */
  get dim(): number {
    return this.#live().dim;
  }

  /** The precision in use: what `'auto'` resolved to, and `'fp32'` when `'bf16'` was asked for on a CPU without it. */
  get precision(): EncoderPrecision {
    return this.#precision;
  }

  /** Threads the encoder computes on, the calling thread included. */
  get threads(): number {
    return this.#live().threads;
  }

  /** Tokens kept per text by {@link Encoder.embedSync} (256 for svc-small). */
  get maxLength(): number {
    return this.#files.maxLength;
  }

  /**
   * Embeds texts: tokenized by the native tokenizer (truncated to {@link Encoder.maxLength}
   * tokens), encoded as one packed batch. Returns `texts.length x dim` floats, row i
   * for texts[i], each pooled and normalized as the options said (default: mean-pooled and L2-normalized).
   *
   * @example
   * ```ts
   * const out = encoder.embedSync(['This is an example sentence', 'Each sentence is converted']);
   * out.length; // 768
   * Array.from(out.slice(0, 4), (x) => +x.toFixed(4)); // [0.0677, 0.0636, 0.0487, 0.0794]
   * ```
   */
  embedSync(texts: readonly string[], segments?: AdapterSegments): Float32Array {
    this.#live();
    if (!Array.isArray(texts)) throw new TypeError('texts must be an array of strings');
    // Loaded on first use, so embedIdsSync users need no tokenizer.json.
    this.#tokenizer ??= this.#loadTokenizer();
    const { ids, lengths } = this.#tokenizer.encodeBatch(texts, { maxLength: this.#files.maxLength });
    return this.embedIdsSync(ids, lengths, segments);
  }

  #loadTokenizer(): Tokenizer {
    if (!existsSync(this.#files.tokenizerFile)) {
      throw new SvcError('invalid_request', `no tokenizer.json next to ${this.#files.configFile}; use embedIdsSync`);
    }
    return Tokenizer.fromFile(this.#files.tokenizerFile, { maxLength: this.#files.maxLength });
  }

  /**
   * Embeds pre-tokenized texts: `ids` holds every text's token ids one after the
   * other (with [CLS] and [SEP]), `lengths` the token count of each text.
   * Returns `lengths.length x dim` floats, each row pooled as {@link Encoder.embedSync}'s. With `segments`, runs of texts go
   * through LoRA adapters ({@link Adapter}) on this shared base: the base products run once over the whole batch and
   * each adapted layer adds its low-rank term to its run's rows.
   *
   * @example
   * ```ts
   * const out = encoder.embedIdsSync(Int32Array.of(101, 7592, 102, 101, 2088, 102), Int32Array.of(3, 3));
   * out.length; // 768: two texts x 384
   * const mine = Adapter.load('./my-model/adapter_model.safetensors', { base: 'svc-small' });
   * encoder.embedIdsSync(ids, Int32Array.of(3, 3), { counts: [1, 1], adapters: [mine, null] }); // text 1 adapted, text 2 base
   * ```
   */
  embedIdsSync(ids: Int32Array, lengths: Int32Array, segments?: AdapterSegments): Float32Array {
    const native = this.#live();
    checkIds(ids, lengths);
    const out = new Float32Array(lengths.length * native.dim);
    if (segments === undefined) this.#call(() => native.embed(ids, lengths, out));
    else {
      const { counts, adapters } = nativeSegments(segments, lengths.length);
      this.#call(() => native.embed(ids, lengths, out, counts, adapters));
    }
    return out;
  }

  /**
   * The last hidden state of every token (`ids.length x dim`), before pooling: what an
   * ONNX export's `last_hidden_state` holds, without the padding.
   *
   * @example
   * ```ts
   * encoder.hiddenStatesSync(Int32Array.of(101, 7592, 102), Int32Array.of(3)).length; // 1152
   * ```
   */
  // The same steps as embedIdsSync with another native call and output size; kept apart so each
  // method reads on its own.
  hiddenStatesSync(ids: Int32Array, lengths: Int32Array): Float32Array {
    const native = this.#live();
    checkIds(ids, lengths);
    const out = new Float32Array(ids.length * native.dim);
    this.#call(() => native.hiddenStates(ids, lengths, out));
    return out;
  }

  #call(fn: () => void): void {
    callNative(fn);
  }

  /** Frees the threads and this encoder's hold on the shared weights. Idempotent. */
  dispose(): void {
    this.#native?.dispose();
    this.#native = null;
    this.#tokenizer = undefined;
  }
}

/** Distinct weight sets loaded in this process right now (each shared by all its encoders). */
export function loadedWeightSets(): number {
  return loadAddon().loadedWeightSets();
}
