// Sentence embeddings of texts on a worker's encoder: the native tokenizer packs the batch
// (truncated to the base model's 256 tokens), the encoder embeds it.
import type { AdapterSegments } from '../native/adapter.js';
import type { Encoder } from '../native/encoder.js';
import { resolveBaseModel } from '../model/base-models.js';
import { promptedTexts } from './base-model-use.js';
import { type EncodedBatch, Tokenizer, type TruncationSide } from '../native/tokenizer.js';

/** A maxLength no prompt reaches: the prompt's own tokens, uncut. */
const kWholeText = 100_000;

// One tokenizer per base model in this worker, like the encoders.
const tokenizers = new Map<string, Tokenizer>();

/** The worker's tokenizer of a base model, loaded on first use. */
export function tokenizerFor(baseModel: string): Tokenizer {
  let tokenizer = tokenizers.get(baseModel);
  if (!tokenizer) {
    tokenizer = Tokenizer.fromPretrained(baseModel);
    tokenizers.set(baseModel, tokenizer);
  }
  return tokenizer;
}

/**
 * Each text's embedding (n x dim), whether the text was cut to fit the encoder's length, and the share of the word
 * pieces the encoder read that were the unknown token.
 */
export interface EmbeddedTexts {
  embeddings: Float32Array;
  truncated: Uint8Array;
  unknownShare: Float64Array;
}

/**
 * Per text, its unknown ids over its word pieces (special tokens left out). A text that leaves no word piece at all
 * (only characters the tokenizer drops, such as zero-width spaces) counts as wholly unknown: the encoder read nothing
 * of it.
 */
export function unknownShares(batch: EncodedBatch, specialTokens: number): Float64Array {
  return Float64Array.from(batch.lengths, (length, i) => {
    const pieces = length - specialTokens;
    return pieces > 0 ? batch.unknown[i] / pieces : 1;
  });
}

/**
 * The ids the encoder of `baseModel` reads for `texts`: each text after the base's prompt, at most `maxLength` ids,
 * a long text cut on its side (`truncate`, for every text or per text; see `Tokenizer.encodeBatch`). The prompt is
 * kept whatever is cut: a text cut from its start keeps `[CLS]`, the prompt's tokens, then its own last tokens that
 * fit (the prompt ends in a space, so its tokens are the same alone as before a text).
 */
export function encodeTexts(
  baseModel: string,
  texts: string[],
  maxLength: number,
  truncate?: TruncationSide | readonly TruncationSide[],
): EncodedBatch {
  const tokenizer = tokenizerFor(baseModel);
  const { prompt } = resolveBaseModel(baseModel);
  const fromStart =
    typeof truncate === 'string' ? texts.map(() => truncate === 'start') : (truncate?.map((side) => side === 'start') ?? []);
  if (prompt === '' || !fromStart.includes(true)) return tokenizer.encodeBatch(promptedTexts(baseModel, texts), { maxLength, truncate });
  const promptIds = tokenizer.encodeBatch([prompt], { maxLength: kWholeText });
  // The special tokens around a text: one before it ([CLS], <s>), the rest after it.
  const before = 1;
  const promptTokens = promptIds.ids.subarray(before, promptIds.lengths[0] - (tokenizer.specialTokens - before));
  const ends = tokenizer.encodeBatch(promptedTexts(baseModel, texts), { maxLength });
  const starts = tokenizer.encodeBatch(texts, {
    maxLength: Math.max(tokenizer.specialTokens, maxLength - promptTokens.length),
    truncate: 'start',
  });
  const lengths = Int32Array.from(texts, (_, i) => (fromStart[i] ? starts.lengths[i] + promptTokens.length : ends.lengths[i]));
  const ids = new Int32Array(lengths.reduce((sum, length) => sum + length, 0));
  const truncated = Uint8Array.from(texts, (_, i) => (fromStart[i] ? starts.truncated[i] : ends.truncated[i]));
  const unknown = Int32Array.from(texts, (_, i) => (fromStart[i] ? starts.unknown[i] + promptIds.unknown[0] : ends.unknown[i]));
  let at = 0;
  let atEnd = 0;
  let atStart = 0;
  texts.forEach((_, i) => {
    if (fromStart[i]) {
      const own = starts.ids.subarray(atStart, atStart + starts.lengths[i]);
      ids.set(own.subarray(0, before), at);
      ids.set(promptTokens, at + before);
      ids.set(own.subarray(before), at + before + promptTokens.length);
    } else {
      ids.set(ends.ids.subarray(atEnd, atEnd + ends.lengths[i]), at);
    }
    at += lengths[i];
    atEnd += ends.lengths[i];
    atStart += starts.lengths[i];
  });
  return { ids, lengths, truncated, unknown };
}

/**
 * `segments`: runs of the texts through adapters on this base encoder (see `Encoder.embedIdsSync`); `truncate`: which
 * tokens a text too long for the encoder loses, for every text or per text (see {@link encodeTexts}).
 */
export function embedTexts(
  baseModel: string,
  encoder: Encoder,
  texts: string[],
  segments?: AdapterSegments,
  truncate?: TruncationSide | readonly TruncationSide[],
): EmbeddedTexts {
  const tokenizer = tokenizerFor(baseModel);
  const batch = encodeTexts(baseModel, texts, encoder.maxLength, truncate);
  const embeddings = encoder.embedIdsSync(batch.ids, batch.lengths, segments);
  return { embeddings, truncated: batch.truncated, unknownShare: unknownShares(batch, tokenizer.specialTokens) };
}
