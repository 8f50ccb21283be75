// The tasks the pool's workers run: plain data in, typed arrays out. Shared by the
// worker (which runs them) and the main thread (which only builds and awaits them).
import type { Manifest } from '../model/manifest.js';

/** Sentence embeddings of `texts` (n x dim, L2-normalized), as one engine batch. */
export interface EmbedTask {
  kind: 'embed';
  baseModel: string;
  texts: string[];
}

/**
 * Probabilities for a merged batch: `texts` in segments, segment s holds `counts[s]` texts
 * scored by head `heads[s]` (row `heads[s]` of `weights`, with `biases[heads[s]]`).
 */
export interface PredictTask {
  kind: 'predict';
  baseModel: string;
  texts: string[];
  counts: Int32Array;
  heads: Int32Array;
  /** Head count x dim, float64 as fitted. */
  weights: Float64Array;
  biases: Float64Array;
}

/** Fits the logistic-regression head on embeddings (n x dim) and labels (0/1). */
export interface FitTask {
  kind: 'fit';
  embeddings: Float32Array;
  labels: Uint8Array;
  dim: number;
  C: number;
}

export interface FitResult {
  weights: Float64Array;
  bias: number;
  iterations: number;
  gradientNorm: number;
  /** Share of the training examples the fitted head labels correctly. */
  trainAccuracy: number;
}

/** Writes a complete model directory (manifest, head, config, tokenizer, ONNX). */
export interface SaveTask {
  kind: 'save';
  dir: string;
  manifest: Manifest;
  weights: Float64Array;
  bias: number;
}

/** Loads the addon and reports the worker's engine thread count. */
export interface PingTask {
  kind: 'ping';
}

export interface PingResult {
  threadId: number;
  engineThreads: number;
  cpuLevel: string;
}

export type PoolTask = EmbedTask | PredictTask | FitTask | SaveTask | PingTask;

/** What the worker is started with. */
export interface WorkerSettings {
  engineThreads: number;
  /** Nice value for the worker's threads (Linux), so the host's event loop comes first. */
  niceness: number;
}

/** Key of the value a worker returns in place of throwing an SvcError. */
export const kWorkerError = '__svcError';

export interface WorkerError {
  [kWorkerError]: { code: string; message: string; param: string | null };
}
