// Token ids from the HF Rust tokenizer (npm `tokenizers`), an independent reference for
// the engine's tests: no padding, truncation at 256 like sentence-transformers.
import { Tokenizer } from 'tokenizers';

import { resolveBaseModel } from '../../src/model/base-models.js';

export interface PackedIds {
  ids: Int32Array;
  lengths: Int32Array;
}

let tokenizer: Tokenizer | undefined;

export async function referenceIds(texts: string[], maxLength = 256): Promise<PackedIds> {
  if (!tokenizer) {
    tokenizer = Tokenizer.fromFile(resolveBaseModel('svc-small').tokenizerFile);
    tokenizer.disablePadding();
    tokenizer.setTruncation(maxLength);
  }
  const encodings = await tokenizer.encodeBatch(texts);
  const rows = encodings.map((e) => e.getIds());
  const ids = Int32Array.from(rows.flat());
  return { ids, lengths: Int32Array.from(rows, (r) => r.length) };
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** Row `i` of a row-major matrix with `dim` columns. */
export function row(matrix: Float32Array, i: number, dim: number): Float32Array {
  return matrix.subarray(i * dim, (i + 1) * dim);
}
