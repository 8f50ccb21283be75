import { existsSync } from 'node:fs';

import { callNative, SvcError } from '../errors.js';
import { resolveBaseModel } from '../model/base-models.js';
import type { NativeTokenizer } from './binding.js';
import { loadAddon } from './load.js';
import * as is from '../is.js';

/**
 * Options of {@link Tokenizer.encode}.
 *
 * @example
 * ```ts
 * tokenizer.encode('Hello, world!', { maxLength: 4 }); // Int32Array(4) [101, 7592, 1010, 102]
 * ```
 */
export interface EncodeOptions {
  /** Most ids returned, special tokens included (2 to 100000). Default: the tokenizer's `maxLength`. */
  maxLength?: number;
  /**
   * Which end of a text with more tokens than `maxLength` lets in loses them: `'end'` (default) keeps its first
   * tokens, `'start'` its last ones (`[CLS]` + the last tokens that fit + `[SEP]`, as Hugging Face's truncation
   * `direction: 'left'`). The whole text is tokenized either way, so a word is split as it would be uncut.
   *
   * @example
   * ```ts
   * tokenizer.encode('Hello, world!', { maxLength: 4, truncate: 'start' }); // Int32Array(4) [101, 2088, 999, 102]
   * ```
   */
  truncate?: TruncationSide;
}

/**
 * Which tokens a text that does not fit loses: `'end'` its last ones (it keeps its start), `'start'` its first ones.
 *
 * @example
 * ```ts
 * const side: TruncationSide = 'start';
 * tokenizer.encodeBatch(['a long review ...'], { maxLength: 256, truncate: side });
 * ```
 */
export type TruncationSide = 'end' | 'start';

/**
 * Options of {@link Tokenizer.encodeBatch}.
 *
 * @example
 * ```ts
 * tokenizer.encodeBatch(['Hi!'], { maxLength: 3, offsets: true });
 * // { ids: Int32Array(3) [101, 7632, 102], lengths: Int32Array(1) [3], offsets: Int32Array(6) [0, 0, 0, 2, 0, 0] }
 * ```
 */
export interface EncodeBatchOptions extends Omit<EncodeOptions, 'truncate'> {
  /** Also return each token's UTF-16 [start, end) in its text. Default false. */
  offsets?: boolean;
  /**
   * As {@link EncodeOptions.truncate}, for every text, or one side per text (an array as long as `texts`), so texts
   * cut on different sides share one call.
   *
   * @example
   * ```ts
   * tokenizer.encodeBatch(['Good morning', 'Good morning'], { maxLength: 3, truncate: ['end', 'start'] }).ids;
   * // Int32Array(6) [101, 2204, 102, 101, 2851, 102]
   * ```
   */
  truncate?: TruncationSide | readonly TruncationSide[];
}

/**
 * Options of {@link Tokenizer.fromFile}.
 *
 * @example
 * ```ts
 * Tokenizer.fromFile('/models/minilm/tokenizer.json', { maxLength: 256 }).maxLength; // 256
 * ```
 */
export interface TokenizerFileOptions {
  /** The default `maxLength` of encode calls. Default: the file's truncation.max_length, else 512. */
  maxLength?: number;
}

/**
 * A packed batch: no padding, one length per text.
 *
 * @example
 * ```ts
 * const { ids, lengths } = tokenizer.encodeBatch(['Hi!', 'Good morning']);
 * // ids: Int32Array(8) [101, 7632, 999, 102, 101, 2204, 2851, 102], lengths: Int32Array(2) [4, 4]
 * ids.subarray(lengths[0], lengths[0] + lengths[1]); // the second text: [101, 2204, 2851, 102]
 * ```
 */
export interface EncodedBatch {
  /** Every text's ids, one text after the other, special tokens included. */
  ids: Int32Array;
  /** How many ids each text has, in input order. */
  lengths: Int32Array;
  /** 1 where the text had more tokens than `maxLength` let in (its ids are its first ones, or with `truncate: 'start'` its last), else 0. */
  truncated: Uint8Array;
  /**
   * How many of each text's ids are the unknown token (`[UNK]`, 100 for svc-small): words and characters the
   * vocabulary does not hold (an emoji, most CJK characters), counted on the ids returned.
   */
  unknown: Int32Array;
  /** With `offsets: true`: two numbers per id, its UTF-16 start and end in its text ([0, 0] for special tokens). */
  offsets?: Int32Array;
}

const kMinMaxLength = 2;
const kMaxMaxLength = 100_000;
// A tokenizer.json without a truncation setting gets BERT's position limit.
const kFallbackMaxLength = 512;

function checkOptions(options: unknown): Record<string, unknown> {
  if (options === undefined) return {};
  is.object(options, 'options');
  return options as Record<string, unknown>;
}

function checkSide(value: unknown): TruncationSide {
  if (value === undefined || value === 'end' || value === 'start') return value ?? 'end';
  throw new TypeError(`options.truncate must be 'end' or 'start' (got ${JSON.stringify(value)})`);
}

/** A batch's sides as the addon takes them: one for every text, or a Uint8Array of one per text (1: 'start'). */
function batchSides(value: unknown, count: number): TruncationSide | Uint8Array {
  if (!Array.isArray(value)) return checkSide(value);
  if (value.length !== count) throw new RangeError(`options.truncate must hold one side per text (${count}, got ${value.length})`);
  return Uint8Array.from(value, (side) => (checkSide(side) === 'start' ? 1 : 0));
}

/** A `maxLength` option (2 to 100000), or `fallback` when it is left out; shared by every option of that name. */
export function checkMaxLength(value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const message = `options.maxLength must be an integer from ${kMinMaxLength} to ${kMaxMaxLength}`;
  if (typeof value !== 'number') throw new TypeError(message);
  if (!Number.isInteger(value) || value < kMinMaxLength || value > kMaxMaxLength) throw new RangeError(message);
  return value;
}

/**
 * A native WordPiece tokenizer for BERT-family models, read from a Hugging
 * Face `tokenizer.json`. It returns the same ids as Hugging Face's
 * `tokenizers`, truncates to `maxLength` ids including `[CLS]` and `[SEP]`,
 * and never pads. Calls are synchronous; use one instance per thread (each
 * worker loads its own; the parsed vocabulary is shared between them).
 *
 * @example
 * ```ts
 * import { Tokenizer } from 'svc-classify';
 * const tokenizer = Tokenizer.fromPretrained('svc-small');
 * tokenizer.encode('This is an example sentence');
 * // Int32Array(7) [101, 2023, 2003, 2019, 2742, 6251, 102]
 * ```
 */
export class Tokenizer {
  readonly #native: NativeTokenizer;
  /** The default `maxLength` of encode calls. */
  readonly maxLength: number;

  private constructor(native: NativeTokenizer, maxLength: number) {
    this.#native = native;
    this.maxLength = maxLength;
  }

  /**
   * Loads a `tokenizer.json` (BertNormalizer, BertPreTokenizer, WordPiece).
   *
   * @example
   * ```ts
   * const tokenizer = Tokenizer.fromFile('/models/minilm/tokenizer.json', { maxLength: 256 });
   * tokenizer.maxLength; // 256
   * ```
   */
  static fromFile(path: string, options?: TokenizerFileOptions): Tokenizer {
    if (typeof path !== 'string' || path.length === 0) throw new TypeError('path must be a non-empty string');
    const opts = checkOptions(options);
    if (!existsSync(path)) throw new SvcError('not_found', `tokenizer file not found: ${path}`);
    const native: NativeTokenizer = callNative(() => new (loadAddon().Tokenizer)(path));
    const fileMax = native.fileMaxLength;
    const fallback = fileMax >= kMinMaxLength && fileMax <= kMaxMaxLength ? fileMax : kFallbackMaxLength;
    return new Tokenizer(native, checkMaxLength(opts.maxLength, fallback));
  }

  /**
   * The tokenizer of a base model, with that model's sequence length as default `maxLength`.
   *
   * @example
   * ```ts
   * Tokenizer.fromPretrained('svc-small').maxLength; // 256
   * ```
   */
  static fromPretrained(name: string): Tokenizer {
    is.string(name, 'name');
    const model = resolveBaseModel(name);
    return Tokenizer.fromFile(model.tokenizerFile, { maxLength: model.maxLength });
  }

  /**
   * The ids of one text, `[CLS]` and `[SEP]` included.
   *
   * @example
   * ```ts
   * tokenizer.encode('Hello, world!', { maxLength: 4 }); // Int32Array(4) [101, 7592, 1010, 102]
   * ```
   */
  encode(text: string, options?: EncodeOptions): Int32Array {
    is.string(text, 'text');
    const opts = checkOptions(options);
    const maxLength = checkMaxLength(opts.maxLength, this.maxLength);
    return this.#native.encode(text, maxLength, checkSide(opts.truncate));
  }

  /**
   * The ids of many texts, packed: `ids` holds them one after the other and
   * `lengths[i]` says how many belong to `texts[i]`.
   *
   * @example
   * ```ts
   * tokenizer.encodeBatch(['Hi!', 'Good morning'], { offsets: true });
   * // { ids: Int32Array(8) [101, 7632, 999, 102, 101, 2204, 2851, 102],
   * //   lengths: Int32Array(2) [4, 4],
   * //   truncated: Uint8Array(2) [0, 0],
   * //   unknown: Int32Array(2) [0, 0],
   * //   offsets: Int32Array(16) [0, 0, 0, 2, 2, 3, 0, 0, 0, 0, 0, 4, 5, 12, 0, 0] }
   * tokenizer.encodeBatch(['Good morning'], { maxLength: 3 });
   * // { ids: Int32Array(3) [101, 2204, 102], lengths: Int32Array(1) [3], truncated: Uint8Array(1) [1], unknown: Int32Array(1) [0] }
   * tokenizer.encodeBatch(['Great product 😀']).unknown; // Int32Array(1) [1]: [CLS] great product [UNK] [SEP]
   * tokenizer.encodeBatch(['Good morning'], { maxLength: 3, truncate: 'start' }).ids; // Int32Array(3) [101, 2851, 102]
   * ```
   */
  encodeBatch(texts: readonly string[], options?: EncodeBatchOptions): EncodedBatch {
    if (!Array.isArray(texts)) throw new TypeError('texts must be an array of strings');
    const opts = checkOptions(options);
    const maxLength = checkMaxLength(opts.maxLength, this.maxLength);
    if (opts.offsets !== undefined && typeof opts.offsets !== 'boolean') {
      throw new TypeError('options.offsets must be a boolean');
    }
    const sides = batchSides(opts.truncate, texts.length);
    // The addon checks each element and throws `texts[i] must be a string`.
    const out = this.#native.encodeBatch(texts, maxLength, opts.offsets === true, sides);
    const batch: EncodedBatch = { ids: out.ids, lengths: out.lengths, truncated: out.truncated, unknown: out.unknown };
    if (out.offsets) batch.offsets = out.offsets;
    return batch;
  }

  /**
   * How many special tokens every encoded text carries (`[CLS]` and `[SEP]`: 2): a text's length less these is its
   * word pieces.
   *
   * @example
   * ```ts
   * tokenizer.specialTokens; // 2
   * ```
   */
  get specialTokens(): number {
    return this.#native.specialTokenCount;
  }

  /**
   * The id of a token of the vocabulary (or an added token), or null.
   *
   * @example
   * ```ts
   * tokenizer.tokenId('[CLS]'); // 101
   * ```
   */
  tokenId(token: string): number | null {
    is.string(token, 'token');
    return this.#native.tokenId(token);
  }
}
