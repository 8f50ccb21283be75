// Sentence embeddings of texts on a worker's encoder: the native tokenizer packs the batch
// (truncated to the base model's 256 tokens), the encoder embeds it.
import type { AdapterSegments } from '../native/adapter.js';
import type { Encoder } from '../native/encoder.js';
import { promptedTexts } from './base-model-use.js';
import { type EncodedBatch, Tokenizer, type TruncationSide } from '../native/tokenizer.js';

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
 * `segments`: runs of the texts through adapters on this base encoder (see `Encoder.embedIdsSync`); `truncate`: which
 * tokens a text too long for the encoder loses, for every text or per text (see `Tokenizer.encodeBatch`).
 */
export function embedTexts(
  baseModel: string,
  encoder: Encoder,
  texts: string[],
  segments?: AdapterSegments,
  truncate?: TruncationSide | readonly TruncationSide[],
): EmbeddedTexts {
  const tokenizer = tokenizerFor(baseModel);
  const batch = tokenizer.encodeBatch(promptedTexts(baseModel, texts), { maxLength: encoder.maxLength, truncate });
  const embeddings = encoder.embedIdsSync(batch.ids, batch.lengths, segments);
  return { embeddings, truncated: batch.truncated, unknownShare: unknownShares(batch, tokenizer.specialTokens) };
}
