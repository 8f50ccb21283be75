// Sentence embeddings of texts on a worker's encoder (tokenized natively, truncated to the
// base model's 256 tokens).
import type { Encoder } from '../native/encoder.js';

export function embedTexts(encoder: Encoder, texts: string[]): Float32Array {
  return encoder.embedSync(texts);
}
