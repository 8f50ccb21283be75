// The two options of a call that classifies texts (`/v2/predict`, `/v2/classify`, and the examples
// of `/v2/train`): how a text longer than the encoder reads is handled, and how many training
// examples to name beside each answer. One definition, shared by every request that takes them and
// by the library's options.
import { z } from 'zod';

import { typeError } from '../parse.js';

/** Most neighbours a call may ask for per text (`explain: k`). */
export const kMaxExplain = 20;
/** How a text longer than the encoder reads is handled: `end` (default) keeps its start, `start` its end, `none` refuses it, `chunks` reads it whole. */
export const kTruncateModes = ['end', 'start', 'none', 'chunks'] as const;
export type TruncateMode = (typeof kTruncateModes)[number];

/** `truncate`, optional; the description says what each mode does with a text. */
export const truncateSchema = z
  .enum(kTruncateModes, { error: (issue) => `must be one of 'end', 'start', 'none', 'chunks' (got ${JSON.stringify(issue.input)})` })
  .optional()
  .describe(
    "Texts longer than the encoder reads (256 tokens): 'end' (default) drops their end, 'start' their start, 'none' refuses them " +
      "(400), 'chunks' reads them whole in overlapping windows whose embeddings are averaged",
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
