// The two options of a call that classifies texts (`/v2/predict`, `/v2/classify`, and the examples
// of `/v2/train`): how a text longer than the encoder reads is handled, and how many training
// examples to name beside each answer. One definition, shared by every request that takes them and
// by the library's options.
import { z } from 'zod';

import { SvcError } from '../errors.js';
import { typeError } from '../parse.js';

/** Most neighbours a call may ask for per text (`explain: k`). */
export const kMaxExplain = 20;
/**
 * Most texts one call may explain: each carries up to {@link kMaxExplain} examples of up to
 * {@link kExplainTextChars} characters, so an answer stays about a megabyte however the call is made.
 */
export const kMaxExplainInputs = 96;
/**
 * Most comparisons of an input with a training example one explain call may ask for (inputs x the model's
 * examples): about a tenth of a second of one worker, so that a large model's explanations cannot hold it.
 */
export const kMaxExplainComparisons = 250_000;
/** Most characters of an example's text an explanation carries (`text_truncated` says when it was cut). */
export const kExplainTextChars = 500;

/**
 * An example's text as an explanation shows it: the whole text, or its first `chars` UTF-16 units (never ending
 * inside a surrogate pair) with `cut` set.
 *
 * @example
 * ```ts
 * explainedText('A wonderful, moving film.', 11); // { text: 'A wonderful', cut: true }
 * ```
 */
export function explainedText(text: string, chars = kExplainTextChars): { text: string; cut: boolean } {
  if (text.length <= chars) return { text, cut: false };
  const end = /[\uD800-\uDBFF]/.test(text[chars - 1]) ? chars - 1 : chars;
  return { text: text.slice(0, end), cut: true };
}

/**
 * The 400 for an explain call over its bounds, or null: `inputs` texts against a model (or a classify call) of
 * `examples` training examples.
 *
 * @example
 * ```ts
 * explainBoundsError(30, 10_000)?.message;
 * // "explain compares every input with each of the model's 10000 training examples, at most 250000 comparisons a call:
 * //  send at most 25 inputs with explain (got 30)"
 * ```
 */
export function explainBoundsError(inputs: number, examples: number): SvcError | null {
  if (inputs > kMaxExplainInputs) {
    return new SvcError('invalid_request', `explain answers at most ${kMaxExplainInputs} inputs a call (got ${inputs})`, {
      param: 'explain',
    });
  }
  if (inputs * examples <= kMaxExplainComparisons) return null;
  const most = Math.max(1, Math.floor(kMaxExplainComparisons / Math.max(1, examples)));
  return new SvcError(
    'invalid_request',
    `explain compares every input with each of the model's ${examples} training examples, at most ${kMaxExplainComparisons} ` +
      `comparisons a call: send at most ${most} inputs with explain (got ${inputs})`,
    { param: 'explain' },
  );
}
/** How a text longer than the encoder reads is handled: `end` (default) keeps its start, `start` its end, `none` refuses it, `chunks` reads it whole. */
export const kTruncateModes = ['end', 'start', 'none', 'chunks'] as const;
export type TruncateMode = (typeof kTruncateModes)[number];
/** What a request without `truncate` gets: the text's first tokens, as the encoder reads them. */
export const kDefaultTruncate: TruncateMode = 'end';

/** `truncate`, optional; the description says what each mode does with a text. */
export const truncateSchema = z
  .enum(kTruncateModes, { error: (issue) => `must be one of 'end', 'start', 'none', 'chunks' (got ${JSON.stringify(issue.input)})` })
  .optional()
  .describe(
    "Texts longer than the encoder reads (256 tokens): 'end' (default) keeps their first tokens, 'start' their last tokens, " +
      "'none' refuses them (400) before any inference, 'chunks' reads them whole in overlapping windows whose embeddings are averaged",
  );

/** `explain: k`, optional: an integer from 1 to {@link kMaxExplain}. */
export const explainSchema = z
  .int({ error: typeError('an integer') })
  .min(1, { error: 'must be at least 1' })
  .max(kMaxExplain, { error: `must be at most ${kMaxExplain}` })
  .optional()
  .describe(
    `Per text, the k training examples nearest to it (cosine similarity of the embeddings), with their labels; 1 to ${kMaxExplain}`,
  );
