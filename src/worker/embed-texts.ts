// Sentence embeddings of texts on a worker's encoder: the native tokenizer packs the batch
// (truncated to the base model's 256 tokens), the encoder embeds it.
import type { AdapterSegments } from '../native/adapter.js';
import type { Encoder } from '../native/encoder.js';
import { Tokenizer } from '../native/tokenizer.js';

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

/** Each text's embedding (n x dim) and whether the text was cut to fit the encoder's length. */
export interface EmbeddedTexts {
  embeddings: Float32Array;
  truncated: Uint8Array;
}

/** `segments`: runs of the texts through adapters on this base encoder (see `Encoder.embedIdsSync`). */
export function embedTexts(baseModel: string, encoder: Encoder, texts: string[], segments?: AdapterSegments): EmbeddedTexts {
  const { ids, lengths, truncated } = tokenizerFor(baseModel).encodeBatch(texts, { maxLength: encoder.maxLength });
  return { embeddings: encoder.embedIdsSync(ids, lengths, segments), truncated };
}
