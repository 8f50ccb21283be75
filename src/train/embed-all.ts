// Embedding a training job's texts in the pool: spread over every worker in small chunks, so progress
// reports keep coming, an abort is noticed between chunks rather than after the whole job, and in the
// service other organizations' jobs take their turns between them (pool/background-gate.ts).
import { estimateTextTokens } from '../contract/train-request.js';
import { SvcError } from '../errors.js';
import { resolveBaseModel } from '../model/base-models.js';
import { poolOptions, runTask } from '../pool/pool.js';
import type { TruncationSide } from '../native/tokenizer.js';

/** Examples per embedding task: small enough that aborting and progress stay prompt. */
const kEmbedChunk = 64;
/**
 * Estimated tokens per embedding task (at most): 16 texts the encoder reads whole, about 0.7 s of one engine thread
 * (5,700 tokens/s measured for long texts), so another organization's task never waits long for its turn.
 */
const kEmbedChunkTokens = 4_096;

/** What embedding reports to and listens to: train()'s options, or only its signal. */
export interface EmbedOptions {
  onProgress?: (progress: { stage: 'embed'; done: number; total: number }) => void;
  signal?: AbortSignal;
  /** Whose job it is: its chunks take that organization's turns in the training share (train()'s `tenant`). */
  tenant?: string;
  /** Which tokens a text too long for the encoder loses (`'start'`: its first ones; default `'end'`). */
  truncate?: TruncationSide;
}

/** Rejects (throws) with the error an aborted training gives. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new SvcError('aborted', 'training was aborted');
}

/** Rejects as soon as `signal` aborts, without waiting for `work` (which runs on in the pool). */
function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new SvcError('aborted', 'training was aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The texts' embeddings (n x dim) by the base model, or by a trained encoder file when given. */
export async function embedAll(
  baseModel: string,
  texts: string[],
  dim: number,
  options: EmbedOptions,
  encoderFile: string | null = null,
): Promise<Float32Array> {
  const embeddings = new Float32Array(texts.length * dim);
  options.onProgress?.({ stage: 'embed', done: 0, total: texts.length });
  const chunks = chunksOf(
    texts,
    Math.min(kEmbedChunk, Math.ceil(texts.length / poolOptions().workers)),
    resolveBaseModel(baseModel).maxLength,
  );
  let done = 0;
  let next = 0;
  const { signal, tenant } = options;
  // As many chunks in flight as there are workers; each lands at its own offset.
  const lane = async () => {
    while (next < chunks.length) {
      throwIfAborted(signal);
      const [start, end] = chunks[next++];
      const part = texts.slice(start, end);
      const task = { kind: 'embed', baseModel, encoderFile, texts: part, truncate: options.truncate } as const;
      const vectors = await abortable(runTask<Float32Array>(task, undefined, undefined, { tenant, waitSignal: signal }), signal);
      embeddings.set(vectors, start * dim);
      done += part.length;
      options.onProgress?.({ stage: 'embed', done, total: texts.length });
    }
  };
  await Promise.all(Array.from({ length: Math.min(poolOptions().workers, chunks.length) }, lane));
  return embeddings;
}

/**
 * `[start, end)` of each chunk: consecutive texts, at most `size` of them (spread even a small job over every
 * worker) and at most {@link kEmbedChunkTokens} estimated tokens (each at most `readTokens`), never empty.
 */
function chunksOf(texts: readonly string[], size: number, readTokens: number): [number, number][] {
  const chunks: [number, number][] = [];
  let start = 0;
  let tokens = 0;
  for (let i = 0; i < texts.length; i++) {
    const estimate = estimateTextTokens(texts[i], readTokens);
    if (i > start && (i - start === size || tokens + estimate > kEmbedChunkTokens)) {
      chunks.push([start, i]);
      start = i;
      tokens = 0;
    }
    tokens += estimate;
  }
  if (start < texts.length) chunks.push([start, texts.length]);
  return chunks;
}
