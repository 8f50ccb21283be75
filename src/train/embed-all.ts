// Embedding a training job's texts in the pool: spread over every worker in small chunks, so progress
// reports keep coming and an abort is noticed between chunks rather than after the whole job.
import { SvcError } from '../errors.js';
import { poolOptions, runTask } from '../pool/pool.js';

/** Examples per embedding task: small enough that aborting and progress stay prompt. */
const kEmbedChunk = 64;

/** What embedding reports to and listens to: train()'s options, or only its signal. */
export interface EmbedOptions {
  onProgress?: (progress: { stage: 'embed'; done: number; total: number }) => void;
  signal?: AbortSignal;
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
  // Spread even a small job over every worker, in chunks of at most kEmbedChunk.
  const size = Math.min(kEmbedChunk, Math.ceil(texts.length / poolOptions().workers));
  const chunks: number[] = [];
  for (let start = 0; start < texts.length; start += size) chunks.push(start);
  let done = 0;
  let next = 0;
  // As many chunks in flight as there are workers; each lands at its own offset.
  const lane = async () => {
    while (next < chunks.length) {
      throwIfAborted(options.signal);
      const start = chunks[next++];
      const part = texts.slice(start, start + size);
      const vectors = await abortable(runTask<Float32Array>({ kind: 'embed', baseModel, encoderFile, texts: part }), options.signal);
      embeddings.set(vectors, start * dim);
      done += part.length;
      options.onProgress?.({ stage: 'embed', done, total: texts.length });
    }
  };
  await Promise.all(Array.from({ length: Math.min(poolOptions().workers, chunks.length) }, lane));
  return embeddings;
}
