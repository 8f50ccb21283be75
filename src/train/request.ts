// The train request: its zod schema and the one function that turns any input into a
// validated request or an SvcError whose message names the field and index at fault.
import { z } from 'zod';

import { parseRequest, typeError } from '../parse.js';
import { baseModelNames, isBaseModelName } from '../model/base-models.js';
import { pairCount } from './pairs.js';

/**
 * Fewest examples a classifier is trained from.
 *
 * @example
 * ```ts
 * import { kMinExamples, kMaxExamples, kMaxTextLength } from 'svc-classify';
 * [kMinExamples, kMaxExamples, kMaxTextLength]; // [20, 10000, 100000]
 * ```
 */
export const kMinExamples = 20;
/** Most examples one training request may carry (see {@link kMinExamples}). */
export const kMaxExamples = 10_000;
/** Longest example text, in UTF-16 code units (JavaScript string length; see {@link kMinExamples}). */
export const kMaxTextLength = 100_000;
/** SetFit's pair rounds per example when fine-tuning (each gives one same-label and one other-label pair). */
export const kDefaultNumIterations = 20;
/** Most pair rounds per example a request may ask for. */
export const kMaxNumIterations = 100;
/**
 * With the default `num_iterations`, large example sets get fewer rounds so that fine-tuning
 * stays within this many pairs (250 steps of 16, about a minute on two cores).
 */
export const kDefaultMaxPairs = 4_000;

/** The only task type there is so far. */
export const kTaskTypes = ['binary-classification'] as const;

export type TaskType = (typeof kTaskTypes)[number];

// Messages are written without the field name; `parseRequest` puts the path in front
// (`examples[3].label must be a boolean`). Issues flagged `whole` are complete sentences.
const exampleSchema = z
  .object({
    text: z
      .string({ error: typeError('a string') })
      .min(1, { error: 'must not be empty' })
      .max(kMaxTextLength, {
        error: (issue) => `must be at most ${kMaxTextLength} characters (got ${(issue.input as string).length})`,
      }),
    label: z.boolean({ error: typeError('a boolean') }),
    label_text: z
      .string({ error: typeError('a non-empty string') })
      .refine((value) => value.trim().length > 0, { error: 'must be a non-empty string' })
      // config.json's id2label names the false class 'false'.
      .refine((value) => value !== 'false', { error: "must not be 'false' (that names the other class)" }),
  })
  .strict()
  .describe('One labelled example; label_text names what label: true means, e.g. "positive review"');

/** One labelled example. `label_text` names what `label: true` means, e.g. "positive review". */
export type TrainExample = z.infer<typeof exampleSchema>;

/**
 * The zod schema of a train request (strict: unknown fields are rejected). Prefer
 * {@link validateTrainRequest}, which turns the first issue into a readable SvcError.
 *
 * @example
 * ```ts
 * const result = trainRequestSchema.safeParse({ model: 'svc-small', task_type: 'binary-classification', examples: [] });
 * result.success;                  // false
 * result.error.issues[0].message;  // 'at least 20 examples are required (got 0)'
 * ```
 */
export const trainRequestSchema = z
  .object({
    model: z
      .string({ error: typeError('a string') })
      .refine(isBaseModelName, {
        error: (issue) => `must be one of ${baseModelNames.join(', ')} (got '${String(issue.input)}')`,
      })
      .describe('Base encoder, e.g. svc-small'),
    task_type: z.enum(kTaskTypes, {
      error: (issue) =>
        issue.input === undefined ? 'is required' : `must be 'binary-classification' (got ${JSON.stringify(issue.input)})`,
    }),
    examples: z
      .array(exampleSchema, { error: typeError('an array') })
      .describe(`${kMinExamples} to ${kMaxExamples} examples with both labels and one shared label_text`),
    finetune: z
      .boolean({ error: typeError('a boolean') })
      .optional()
      .describe(
        'Fine-tune the encoder on pairs of examples (SetFit) before fitting the head; default true. ' +
          'false keeps the base encoder frozen and only fits the head (faster, less accurate)',
      ),
    num_iterations: z
      .int({ error: typeError('an integer') })
      .min(1, { error: 'must be at least 1' })
      .max(kMaxNumIterations, { error: `must be at most ${kMaxNumIterations}` })
      .optional()
      .describe(
        `Pair rounds per example when fine-tuning (one same-label and one other-label pair each); default ${kDefaultNumIterations}, ` +
          `fewer for large sets so the pairs stay within ${kDefaultMaxPairs}`,
      ),
  })
  .strict()
  .superRefine((request, ctx) => {
    const whole = (message: string) =>
      ctx.addIssue({ code: 'custom', message, path: ['examples'], params: { whole: true } });
    const { examples } = request;
    if (examples.length < kMinExamples) {
      whole(`at least ${kMinExamples} examples are required (got ${examples.length})`);
      return;
    }
    if (examples.length > kMaxExamples) {
      whole(`at most ${kMaxExamples} examples are allowed (got ${examples.length})`);
      return;
    }
    const trueCount = examples.filter((example) => example.label).length;
    if (trueCount === 0 || trueCount === examples.length) {
      whole('examples need at least one true and one false label');
      return;
    }
    if (examples.some((example) => example.label_text !== examples[0].label_text)) {
      whole('all examples must share one label_text');
      return;
    }
    if (request.finetune === false && request.num_iterations !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'is only used when finetune is true', path: ['num_iterations'] });
    }
  });

/** What `train()`, `SvcService.train` and `POST /v2/train` accept. */
export type TrainRequest = z.infer<typeof trainRequestSchema>;

/**
 * Checks a train request and returns it typed; throws `SvcError('invalid_request')` for the
 * first problem, with `param` naming the field.
 *
 * @example
 * ```ts
 * validateTrainRequest({ model: 'svc-small', task_type: 'binary-classification', examples: [] });
 * // throws SvcError: at least 20 examples are required (got 0)   (code 'invalid_request', param 'examples')
 * ```
 */
export function validateTrainRequest(input: unknown): TrainRequest {
  return parseRequest(trainRequestSchema, input);
}

/**
 * Pair rounds per example for a fine-tuning request: `num_iterations` when given, else 20,
 * lowered for large example sets so that the pairs stay within {@link kDefaultMaxPairs}.
 *
 * @example
 * ```ts
 * numIterations({ ...request, examples: twentyExamples }); // 20 (800 pairs)
 * numIterations({ ...request, examples: thousandExamples }); // 2 (4,000 pairs)
 * ```
 */
export function numIterations(request: TrainRequest): number {
  if (request.num_iterations !== undefined) return request.num_iterations;
  const rounds = Math.floor(kDefaultMaxPairs / pairCount(request.examples.length, 1));
  return Math.max(1, Math.min(kDefaultNumIterations, rounds));
}
