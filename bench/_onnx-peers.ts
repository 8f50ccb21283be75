// The peers our native encoder is measured against, built from the same safetensors:
// onnxruntime-node on our exported graphs (fp32 and dynamic int8), fed as users feed it (each
// batch padded to its longest text, input order) or length-sorted, and transformers.js
// feature-extraction on a model directory written by our exporter.
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as ort from 'onnxruntime-node';
import { Tokenizer } from 'tokenizers';

import { resolveBaseModel } from '../src/model/base-models.js';
import { buildEncoderOnnx, type OnnxPrecision, writeTransformersJsModelDir } from '../src/model/onnx/index.js';

const kHidden = 384;

let dirPromise: Promise<string> | undefined;
let tokenizer: Tokenizer | undefined;

/**
 * Token ids per text from Hugging Face's own tokenizer (npm `tokenizers`) on svc-small's
 * tokenizer.json: [CLS] ... [SEP], truncated to 256 tokens, unpadded.
 */
export async function hfTokenize(texts: string[]): Promise<number[][]> {
  if (!tokenizer) {
    tokenizer = Tokenizer.fromFile(resolveBaseModel('svc-small').tokenizerFile);
    // The shipped tokenizer.json pads to 128 and truncates at 128; svc-small keeps 256 tokens.
    tokenizer.disablePadding();
    tokenizer.setTruncation(256);
  }
  const encodings = await tokenizer.encodeBatch(texts);
  return encodings.map((encoding) => encoding.getIds());
}

/** The three int64 inputs for a batch padded with id 0 to its longest row. */
export function paddedFeeds(rows: readonly (readonly number[])[]): Record<string, ort.Tensor> {
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

/** An onnxruntime-node session on our svc-small graph, pinned to `threads` intra-op threads. */
export function ortEncoderSession(precision: OnnxPrecision, threads: number): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(buildEncoderOnnx('svc-small', { precision }), {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
}

/** One padded batch in input order -> `rows.length x 384` sentence embeddings. */
export async function ortEmbedPadded(session: ort.InferenceSession, rows: readonly (readonly number[])[]): Promise<Float32Array> {
  const out = await session.run(paddedFeeds(rows), ['sentence_embedding']);
  return out.sentence_embedding.data as Float32Array;
}

/**
 * All rows in length-sorted batches of `batchSize` (least padding onnxruntime can get), results
 * put back in input order.
 */
export async function ortEmbedSorted(
  session: ort.InferenceSession,
  rows: readonly (readonly number[])[],
  batchSize: number,
): Promise<Float32Array> {
  const order = rows.map((_, i) => i).sort((a, b) => rows[a].length - rows[b].length);
  const out = new Float32Array(rows.length * kHidden);
  for (let start = 0; start < order.length; start += batchSize) {
    const picked = order.slice(start, start + batchSize);
    const embeddings = await ortEmbedPadded(session, picked.map((i) => rows[i]));
    picked.forEach((row, k) => out.set(embeddings.subarray(k * kHidden, (k + 1) * kHidden), row * kHidden));
  }
  return out;
}

/**
 * A transformers.js feature-extraction pipeline (mean pooling, normalized) on a model directory
 * our exporter writes once per process into the temp folder (removed at exit). `q8` loads
 * onnx/model_quantized.onnx.
 */
export async function transformersJsEmbedder(
  dtype: 'fp32' | 'q8',
  threads: number,
): Promise<{ embed(texts: string[]): Promise<Float32Array>; dispose(): Promise<void> }> {
  dirPromise ??= (async () => {
    // Written afresh per process so the directory always matches the exporter in this checkout.
    const dir = await mkdtemp(join(tmpdir(), 'svc-bench-transformers-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    await writeTransformersJsModelDir(dir, { baseModel: 'svc-small', task: 'feature-extraction', precision: 'int8' });
    return dir;
  })();
  const dir = await dirPromise;
  const { env, pipeline } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  const extract = await pipeline('feature-extraction', dir, {
    dtype,
    session_options: { intraOpNumThreads: threads, interOpNumThreads: 1 },
  });
  return {
    async embed(texts) {
      const out = await extract(texts, { pooling: 'mean', normalize: true });
      return out.data as Float32Array;
    },
    dispose: () => extract.dispose(),
  };
}
