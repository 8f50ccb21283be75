// Shared by the ONNX tests: tokenize with Hugging Face's own tokenizer (the npm `tokenizers`
// package) and run a graph in onnxruntime-node on batches padded to their longest text, with
// the same helpers the benchmark's onnxruntime peers use.
import * as ort from 'onnxruntime-node';

import { hfTokenize, paddedFeeds } from '../../fixtures/onnx-peers.js';

export { paddedFeeds };
export const tokenize = hfTokenize;

export function createSession(model: Uint8Array): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(model, { intraOpNumThreads: 2, interOpNumThreads: 1 });
}

/** Runs `rows` in batches of `batchSize` and returns one output, concatenated row by row. */
export async function runBatches(session: ort.InferenceSession, rows: number[][], output: string, batchSize = 32): Promise<Float32Array[]> {
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
