// One labelled example of each task type (binary, multi-class, multi-label): the zod schemas that the
// train request and the classify request share, their types, and the limits on one example's text and
// label names.
import { z } from 'zod';

import { typeError } from '../parse.js';

/** Longest example text, in UTF-16 code units (JavaScript string length; see {@link kMinExamples}). */
export const kMaxTextLength = 100_000;
/** Longest class or label name. */
export const kMaxLabelLength = 200;
/**
 * Fewest examples of each label (binary: of each side) a classify call carries: fewer cannot be told from noise.
 * Here rather than in classify-request.ts because the train request's refusal of a small set points to it.
 */
export const kMinClassifyExamplesPerLabel = 2;

/**
 * What is wrong with a text a caller sends to be trained on or classified, worded without the field name
 * (`must not be empty`), or null. Empty and whitespace-only texts are refused: the encoder would read only its
 * special tokens and answer the same scores for every one of them. Every text that enters (predict, classify, train,
 * their routes) is checked by this one rule.
 *
 * @example
 * ```ts
 * textProblem('   '); // 'must not be empty (it holds only whitespace)'
 * textProblem('Refund not received'); // null
 * ```
 */
export function textProblem(text: string): string | null {
  if (text.length === 0) return 'must not be empty';
  if (text.length > kMaxTextLength) return `must be at most ${kMaxTextLength} characters (got ${text.length})`;
  if (text.trim().length === 0) return 'must not be empty (it holds only whitespace)';
  return null;
}

// Messages are written without the field name; `parseRequest` puts the path in front
// (`examples[3].label must be a boolean`, `inputs[3] must not be empty`).
// min and max state the bounds in the OpenAPI document too; each issue aborts, so a text gets one message.
export const textSchema = z
  .string({ error: typeError('a string') })
  .min(1, { error: (issue) => textProblem(issue.input as string)!, abort: true })
  .max(kMaxTextLength, { error: (issue) => textProblem(issue.input as string)!, abort: true })
  .refine((text) => textProblem(text) === null, { error: (issue) => textProblem(issue.input as string)! });

// C0 controls (NUL, tab, line breaks), DEL and C1 controls: a name is shown on one line of a page, a CLI table and
// config.json's id2label, where none of them reads as text.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const kControlCharacter = /[\u0000-\u001f\u007f-\u009f]/;

const codePoint = (char: string) => `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * A class or label name, and a binary model's `label_text`: what predictions return and config.json's id2label holds.
 * Stored in Unicode NFC, so that "été" typed composed or decomposed is one name; no control characters; at most
 * {@link kMaxLabelLength} characters (of the NFC form).
 */
export const labelNameSchema = z
  .string({ error: typeError('a non-empty string') })
  .overwrite((value) => value.normalize('NFC'))
  .refine((value) => value.trim().length > 0, { error: 'must be a non-empty string' })
  .refine((value) => !kControlCharacter.test(value), {
    error: (issue) => {
      const value = issue.input as string;
      const at = value.search(kControlCharacter);
      return `must not contain control characters (${codePoint(value[at])} at character ${at})`;
    },
  })
  .refine((value) => value.length <= kMaxLabelLength, {
    error: (issue) => `must be at most ${kMaxLabelLength} characters (got ${(issue.input as string).length})`,
  });

/**
 * The form two class or label names are compared in: NFC, then case folded (upper then lower case, which folds
 * "ß" with "SS" and "ς" with "σ" as Unicode's full case folding does), then NFC again. Two names with one key are
 * one name to a reader, and a head (or zero-shot's templates) cannot tell them apart.
 *
 * @example
 * ```ts
 * labelNameKey('Billing') === labelNameKey('billing'); // true
 * labelNameKey('STRASSE') === labelNameKey('straße');  // true
 * ```
 */
export function labelNameKey(name: string): string {
  return name.normalize('NFC').toUpperCase().toLowerCase().normalize('NFC');
}

/** The first two different names among `names` that are one name by {@link labelNameKey}; null when there are none. */
export function sameLabelNames(names: Iterable<string>): [string, string] | null {
  const seen = new Map<string, string>();
  for (const name of names) {
    const key = labelNameKey(name);
    const earlier = seen.get(key);
    if (earlier !== undefined && earlier !== name) return [earlier, name];
    seen.set(key, name);
  }
  return null;
}

/**
 * Adds the refusal of two spellings of one class or label name, naming both, as a whole sentence at `path`; true
 * when `names` has none.
 */
export function checkDistinctNames(
  ctx: z.core.$RefinementCtx,
  names: Iterable<string>,
  what: 'class' | 'label',
  path: PropertyKey[],
): boolean {
  const same = sameLabelNames(names);
  if (same === null) return true;
  const message = `'${same[0]}' and '${same[1]}' are one ${what} name written two ways (they differ only in letter case); use one spelling`;
  ctx.addIssue({ code: 'custom', message, path, params: { whole: true } });
  return false;
}

/** A list of names (a multi-label example's labels, zero-shot's `labels`): none twice, nor two spellings of one. */
export const distinctNames = (names: readonly string[], ctx: z.core.$RefinementCtx): void => {
  if (new Set(names).size !== names.length) ctx.addIssue({ code: 'custom', message: 'must not name a label twice' });
  else checkDistinctNames(ctx, names, 'label', []);
};

/** Most characters of a wrong label a message quotes back. */
const kEchoedLabelChars = 40;

/**
 * Why a binary example's label is not a boolean, with the value it holds and what to write instead: `"true"` in
 * quotes, 1/0 from a spreadsheet, or words such as "yes"/"no" or class names, which are a multi-class task's labels.
 */
function booleanLabelError(issue: { input?: unknown }): string {
  const { input } = issue;
  if (input === undefined) return 'is required';
  if (input === 'true' || input === 'false') return `must be a boolean, not the string "${input}": write ${input} without quotes`;
  if (input === 1 || input === 0) return `must be a boolean (got ${input}): write ${input === 1 ? 'true' : 'false'} for ${input}`;
  if (typeof input === 'string') {
    const shown = input.length > kEchoedLabelChars ? `${input.slice(0, kEchoedLabelChars)}…` : input;
    return (
      `must be a boolean (got ${JSON.stringify(shown)}): write label: true or false, ` +
      `or for named classes send task_type: "multi-class-classification" with the class as label`
    );
  }
  const got = input === null ? 'null' : Array.isArray(input) ? 'an array' : typeof input === 'object' ? 'an object' : String(input);
  return `must be a boolean (got ${got}): write label: true or false`;
}

export const exampleSchema = z
  .object({
    text: textSchema,
    label: z.boolean({ error: booleanLabelError }),
    // config.json's id2label names the false class 'false'.
    label_text: labelNameSchema.refine((value) => labelNameKey(value) !== 'false', {
      error: "must not be 'false' (that names the other class)",
    }),
  })
  .strict()
  .describe('One labelled example; label_text names what label: true means, e.g. "positive review"');

export const classExampleSchema = z
  .object({ text: textSchema, label: labelNameSchema })
  .strict()
  .describe('One example of a class, e.g. { "text": "Refund not received", "label": "billing" }');

export const labelSetExampleSchema = z
  .object({
    text: textSchema,
    labels: z.array(labelNameSchema, { error: typeError('an array of strings') }).superRefine(distinctNames),
  })
  .strict()
  .describe('One example with its labels, possibly none, e.g. { "text": "Slow and pricey", "labels": ["speed", "price"] }');

/** One labelled example of a binary request. `label_text` names what `label: true` means, e.g. "positive review". */
export type TrainExample = z.infer<typeof exampleSchema>;
/** One example of a multi-class request: its class. */
export type ClassExample = z.infer<typeof classExampleSchema>;
/** One example of a multi-label request: its labels (possibly none). */
export type LabelSetExample = z.infer<typeof labelSetExampleSchema>;
