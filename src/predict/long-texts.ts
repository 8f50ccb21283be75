// Predictions that need more than the batcher's one call with the model's head: `truncate` other
// than 'end' and `explain`. 'start' and 'none' stay on that call ('start' tells the tokenizer to keep
// a text's last tokens; 'none' asks the tokenizer alone first and refuses a text that does not fit
// before any inference). 'chunks' and `explain` need the texts' embeddings (windows to pool,
// neighbours to find): the texts are embedded through the batcher with the model's own encoder and
// the head is applied here, on the pooled embeddings. None of this runs for a call that asks for neither.
import { z } from 'zod';

import { explainBoundsError, explainSchema, kDefaultTruncate, truncateSchema } from '../contract/long-texts.js';
import type { Head } from '../model/directory.js';
import { parseRequest } from '../parse.js';
import { embedTexts } from './embed-windows.js';
import { refuseTooLong } from './texts-fit.js';
import { exampleCount, findNearest, type Neighbour, type NeighbourSource } from './nearest.js';
import type { TruncateMode } from '../contract/long-texts.js';
import type { TaskType } from '../contract/train-request.js';
import { scoreTexts } from './batcher.js';
import { packHeads } from './call.js';
import { scoreSegments } from './head.js';

/** What the classifier hands over: its encoder, head and task, and how to reach its examples. */
export interface ModelParts {
  baseModel: string;
  encoderFile: string | null;
  head: Head;
  taskType: TaskType;
  /** Where the model's training examples are (called only with `explain`; throws when it kept none). */
  examples: () => Promise<NeighbourSource>;
}

export interface LongTextOptions {
  truncate: TruncateMode;
  explain: number | undefined;
  signal?: AbortSignal;
  tenant?: string;
  /** How errors name text t: `texts[t]` in the library, `inputs[t]` over HTTP. */
  paramOf: (t: number) => string;
}

/**
 * Per text: the head's probabilities (rows per text), whether it was cut, its share of unknown word pieces, and with
 * 'chunks' how many windows were read.
 */
export interface LongTextScores {
  probabilities: Float32Array;
  truncated: Uint8Array;
  unknownShare: Float64Array;
  chunks: number[] | null;
  /** With `explain`: per text, the function that names its neighbours once the answer is known. */
  neighbours: ((answers: readonly (boolean | string | null)[]) => Neighbour[][]) | null;
}

// Built on first use: a module that only predicts the default way never builds it.
let extrasSchema: z.ZodType<{ truncate?: TruncateMode; explain?: number }> | undefined;

/**
 * A library predict call's `truncate` (default {@link kDefaultTruncate}) and `explain`, checked by the same schemas
 * as the HTTP bodies: `SvcError('invalid_request')` naming the field (`explain must be an integer`). A call whose
 * options are `parsed` already (the service's, by its request schema) is taken as it is, its default filled in.
 *
 * @example
 * ```ts
 * parsePredictExtras({ truncate: 'start' }); // { truncate: 'start', explain: undefined }
 * parsePredictExtras({}); // { truncate: 'end', explain: undefined }
 * ```
 */
export function parsePredictExtras(options: { truncate?: unknown; explain?: unknown; parsed?: true }): {
  truncate: TruncateMode;
  explain: number | undefined;
} {
  if (options.parsed === true || (options.truncate === undefined && options.explain === undefined)) {
    return { truncate: (options.truncate as TruncateMode | undefined) ?? kDefaultTruncate, explain: options.explain as number | undefined };
  }
  extrasSchema ??= z.object({ truncate: truncateSchema, explain: explainSchema });
  const { truncate, explain } = parseRequest(extrasSchema, { truncate: options.truncate, explain: options.explain });
  return { truncate: truncate ?? kDefaultTruncate, explain };
}

/** Scores `texts` with a model as `truncate` and `explain` ask. */
export async function scoreLongTexts(model: ModelParts, texts: readonly string[], options: LongTextOptions): Promise<LongTextScores> {
  const { truncate, explain, paramOf } = options;
  const call = { signal: options.signal, tenant: options.tenant };
  if (truncate !== 'chunks' && explain === undefined) {
    if (truncate === 'none') await refuseTooLong(model.baseModel, texts, paramOf, options.signal);
    const side = truncate === 'start' ? 'start' : 'end';
    const scored = await scoreTexts(model.baseModel, model.encoderFile, model.head, texts, { ...call, truncate: side });
    // `truncated` is the tokenizer's own flag: set only where tokens were dropped, on either side.
    return { ...scored, chunks: null, neighbours: null };
  }
  // Where the examples are, and whether the call is within explain's bounds, before any text is embedded.
  const source = explain === undefined ? null : await model.examples();
  const refused = source === null ? null : explainBoundsError(texts.length, exampleCount(source));
  if (refused) throw refused;
  const embedded = await embedTexts(model.baseModel, texts, truncate, { ...call, encoderFile: model.encoderFile, paramOf });
  const dim = embedded.embeddings.length / texts.length;
  const probabilities = scoreSegments(embedded.embeddings, dim, Int32Array.of(texts.length), Int32Array.of(0), packHeads([model.head]));
  const truncated = Uint8Array.from(embedded.truncated, (cut) => (cut ? 1 : 0));
  const unknownShare = Float64Array.from(embedded.unknownShare);
  const chunks = truncate === 'chunks' ? embedded.chunks : null;
  if (source === null) return { probabilities, truncated, unknownShare, chunks, neighbours: null };
  const neighbours = await findNearest(source, model.taskType, embedded.embeddings, dim, explain as number, call);
  return { probabilities, truncated, unknownShare, chunks, neighbours };
}
