// One labelled example of each task type (binary, multi-class, multi-label): the zod schemas that the
// train request and the classify request share, their types, and the limits on one example's text and
// label names.
import { z } from 'zod';

import { typeError } from '../parse.js';

/** Longest example text, in UTF-16 code units (JavaScript string length; see {@link kMinExamples}). */
export const kMaxTextLength = 100_000;
/** Longest class or label name. */
export const kMaxLabelLength = 200;

// Messages are written without the field name; `parseRequest` puts the path in front
// (`examples[3].label must be a boolean`).
export const textSchema = z
  .string({ error: typeError('a string') })
  .min(1, { error: 'must not be empty' })
  .max(kMaxTextLength, {
    error: (issue) => `must be at most ${kMaxTextLength} characters (got ${(issue.input as string).length})`,
  });

export const exampleSchema = z
  .object({
    text: textSchema,
    label: z.boolean({ error: typeError('a boolean') }),
    label_text: z
      .string({ error: typeError('a non-empty string') })
      .refine((value) => value.trim().length > 0, { error: 'must be a non-empty string' })
      // config.json's id2label names the false class 'false'.
      .refine((value) => value !== 'false', { error: "must not be 'false' (that names the other class)" }),
  })
  .strict()
  .describe('One labelled example; label_text names what label: true means, e.g. "positive review"');

/** A class or label name: what predictions return and config.json's id2label holds. */
export const labelNameSchema = z
  .string({ error: typeError('a non-empty string') })
  .refine((value) => value.trim().length > 0, { error: 'must be a non-empty string' })
  .refine((value) => value.length <= kMaxLabelLength, { error: `must be at most ${kMaxLabelLength} characters` });

export const classExampleSchema = z
  .object({ text: textSchema, label: labelNameSchema })
  .strict()
  .describe('One example of a class, e.g. { "text": "Refund not received", "label": "billing" }');

export const labelSetExampleSchema = z
  .object({
    text: textSchema,
    labels: z
      .array(labelNameSchema, { error: typeError('an array of strings') })
      .refine((labels) => new Set(labels).size === labels.length, { error: 'must not name a label twice' }),
  })
  .strict()
  .describe('One example with its labels, possibly none, e.g. { "text": "Slow and pricey", "labels": ["speed", "price"] }');

/** One labelled example of a binary request. `label_text` names what `label: true` means, e.g. "positive review". */
export type TrainExample = z.infer<typeof exampleSchema>;
/** One example of a multi-class request: its class. */
export type ClassExample = z.infer<typeof classExampleSchema>;
/** One example of a multi-label request: its labels (possibly none). */
export type LabelSetExample = z.infer<typeof labelSetExampleSchema>;
