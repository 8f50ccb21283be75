// Shared by the ONNX tests: tokenize with Hugging Face's own tokenizer (the npm `tokenizers`
// package) and run a graph in onnxruntime-node on batches padded to their longest text.
import * as ort from 'onnxruntime-node';
import { Tokenizer } from 'tokenizers';

import { resolveBaseModel } from '../../src/model/base-models.js';

let tokenizer: Tokenizer | undefined;

/** Token ids per text, truncated to svc-small's 256 tokens, [CLS] ... [SEP]. */
export async function tokenize(texts: string[]): Promise<number[][]> {
  if (!tokenizer) {
    tokenizer = Tokenizer.fromFile(resolveBaseModel('svc-small').tokenizerFile);
    tokenizer.disablePadding();
    tokenizer.setTruncation(256);
  }
  const encodings = await tokenizer.encodeBatch(texts);
  return encodings.map((encoding) => encoding.getIds());
}

/** The three int64 inputs for a batch padded with id 0 to its longest row. */
export function paddedFeeds(rows: number[][]): Record<string, ort.Tensor> {
  const seq = Math.max(...rows.map((row) => row.length));
  const ids = new BigInt64Array(rows.length * seq);
  const mask = new BigInt64Array(rows.length * seq);
  rows.forEach((row, r) => {
    row.forEach((id, t) => {
      ids[r * seq + t] = BigInt(id);
      mask[r * seq + t] = 1n;
    });
  });
  const dims = [rows.length, seq];
  return {
    input_ids: new ort.Tensor('int64', ids, dims),
    attention_mask: new ort.Tensor('int64', mask, dims),
    token_type_ids: new ort.Tensor('int64', new BigInt64Array(rows.length * seq), dims),
  };
}

export function createSession(model: Uint8Array): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(model, { intraOpNumThreads: 2, interOpNumThreads: 1 });
}

/** Runs `rows` in batches of `batchSize` and returns one output, concatenated row by row. */
export async function runBatches(
  session: ort.InferenceSession,
  rows: number[][],
  output: string,
  batchSize = 32,
): Promise<Float32Array[]> {
  const results: Float32Array[] = [];
  for (let start = 0; start < rows.length; start += batchSize) {
    const batch = rows.slice(start, start + batchSize);
    const out = (await session.run(paddedFeeds(batch)))[output];
    const width = out.dims[out.dims.length - 1];
    const data = out.data as Float32Array;
    for (let r = 0; r < batch.length; r++) results.push(data.slice(r * width, (r + 1) * width));
  }
  return results;
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}
