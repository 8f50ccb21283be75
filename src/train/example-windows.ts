// Training examples longer than the encoder reads, as the request's `truncate` says: `end` (the
// default) and `none` embed each text whole (the tokenizer keeps its first 256 tokens; `none` has
// refused longer ones before training starts), `start` its last 256 tokens, and `chunks` every
// window of it, pooled as predict and classify pool them. Fine-tuning reads one window per example
// (its first tokens; with `start`, its last): the pairs teach the encoder what tells the labels
// apart, and the head is then fitted on the whole texts' pooled embeddings by that encoder.
import type { TruncateMode } from '../contract/long-texts.js';
import type { TrainRequest } from '../contract/train-request.js';
import type { TruncationSide } from '../native/tokenizer.js';
import { poolWindows, windowsOf } from '../predict/embed-windows.js';
import { firstTooLong, tooLongError } from '../predict/texts-fit.js';

/** `truncate: 'none'` of a train request: its examples and validation examples checked by {@link checkExamplesFit}. */
export async function checkRequestFits(request: TrainRequest, signal?: AbortSignal): Promise<void> {
  if (request.truncate !== 'none') return;
  const validation = request.task_type === 'binary-classification' ? [] : (request.validation ?? []);
  const texts = [...request.examples, ...validation].map((example) => example.text);
  await checkExamplesFit(request.model, texts, request.examples.length, signal);
}

/**
 * `truncate: 'none'`: refuses (`SvcError('invalid_request')`, 400) the first text the encoder would
 * cut, named `examples[i].text` (or `validation[i].text` past the first `examples` texts). Only the
 * tokenizer runs, in the pool.
 */
export async function checkExamplesFit(baseModel: string, texts: readonly string[], examples: number, signal?: AbortSignal): Promise<void> {
  const first = await firstTooLong(baseModel, texts, signal);
  if (first < 0) return;
  throw tooLongError(baseModel, first < examples ? `examples[${first}].text` : `validation[${first - examples}].text`, 'train on it');
}

/** Which tokens of a text too long for the encoder a mode drops: `start` keeps the last ones, the others the first. */
export function truncationSide(mode: TruncateMode): TruncationSide {
  return mode === 'start' ? 'start' : 'end';
}

/**
 * One embedding per text (n x dim) for the head, read as `mode` says; `embed` embeds plain texts
 * (the base encoder or the trained one), keeping a long text's tokens on the side it is given, all
 * windows of all texts in one call.
 */
export async function embedExamples(
  texts: readonly string[],
  mode: TruncateMode,
  dim: number,
  embed: (texts: string[], side: TruncationSide) => Promise<Float32Array>,
): Promise<Float32Array> {
  if (mode !== 'chunks') return embed([...texts], truncationSide(mode));
  const { windows } = windowsOf(texts, 'chunks');
  // Every text of one window: its embedding as it comes (pooling one unit vector changes nothing).
  if (windows.every((parts) => parts.length === 1)) return embed([...texts], 'end');
  return poolWindows(windows, await embed(windows.flat(), 'end'), dim);
}
