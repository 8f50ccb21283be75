// Training examples longer than the encoder reads, as the request's `truncate` says: `end` (the
// default) and `none` embed each text whole (the encoder keeps its first 256 tokens; `none` has
// refused longer ones before training starts), `start` its last words, and `chunks` every window
// of it, pooled as predict and classify pool them. Fine-tuning reads one window per example (its
// start; with `start`, its end): the pairs teach the encoder what tells the labels apart, and the
// head is then fitted on the whole texts' pooled embeddings by that encoder.
import type { TruncateMode } from '../contract/long-texts.js';
import type { TrainRequest } from '../contract/train-request.js';
import { runTask } from '../pool/pool.js';
import { poolWindows, tooLongError, windowsOf } from '../predict/embed-windows.js';

/** `truncate: 'none'` of a train request: its examples and validation examples checked by {@link checkExamplesFit}. */
export async function checkRequestFits(request: TrainRequest, signal?: AbortSignal): Promise<void> {
  if (request.truncate !== 'none') return;
  const validation = request.task_type === 'binary-classification' ? [] : (request.validation ?? []);
  const texts = [...request.examples, ...validation].map((example) => example.text);
  await checkExamplesFit(request.model, texts, request.examples.length, signal);
}

/** Texts per tokenizer task: a large request is checked on every worker at once. */
const kFitsChunk = 512;

/**
 * `truncate: 'none'`: refuses (`SvcError('invalid_request')`, 400) the first text the encoder would
 * cut, named `examples[i].text` (or `validation[i].text` past the first `examples` texts). Only the
 * tokenizer runs, in the pool.
 */
export async function checkExamplesFit(baseModel: string, texts: readonly string[], examples: number, signal?: AbortSignal): Promise<void> {
  const parts: Promise<Uint8Array>[] = [];
  for (let at = 0; at < texts.length; at += kFitsChunk) {
    parts.push(runTask<Uint8Array>({ kind: 'fits', baseModel, texts: texts.slice(at, at + kFitsChunk) }, signal));
  }
  const cut = (await Promise.all(parts)).flatMap((flags) => [...flags]);
  const first = cut.indexOf(1);
  if (first < 0) return;
  throw tooLongError(baseModel, first < examples ? `examples[${first}].text` : `validation[${first - examples}].text`, 'train on it');
}

/** The texts fine-tuning reads: each as sent, or with `start` its last words. */
export function finetuneTexts(texts: readonly string[], mode: TruncateMode): string[] {
  return mode === 'start' ? windowsOf(texts, 'start').windows.map(([text]) => text) : [...texts];
}

/**
 * One embedding per text (n x dim) for the head, read as `mode` says; `embed` embeds plain texts
 * (the base encoder or the trained one), all windows of all texts in one call.
 */
export async function embedExamples(
  texts: readonly string[],
  mode: TruncateMode,
  dim: number,
  embed: (texts: string[]) => Promise<Float32Array>,
): Promise<Float32Array> {
  if (mode !== 'chunks') return embed(finetuneTexts(texts, mode));
  const { windows } = windowsOf(texts, 'chunks');
  // Every text of one window: its embedding as it comes (pooling one unit vector changes nothing).
  if (windows.every((parts) => parts.length === 1)) return embed([...texts]);
  return poolWindows(windows, await embed(windows.flat()), dim);
}
