// The train request: its zod schema, limits and types, and the one function that turns any input
// into a validated request or an SvcError whose message names the field and index at fault.
// What training does with a valid request (defaults it applies, pair rounds) is train/request.ts.
import { z } from 'zod';

import { parseRequest, typeError } from '../parse.js';
import { truncateSchema } from './long-texts.js';
import { baseModelNames, isBaseModelName } from './base-models.js';
import {
  checkDistinctNames,
  classExampleSchema,
  exampleSchema,
  kMaxTextLength,
  kMinClassifyExamplesPerLabel,
  labelSetExampleSchema,
} from './labelled-examples.js';

// The example shapes and the text limit are the classify request's too (labelled-examples.ts); the train request's
// users take them from here.
export { kMaxTextLength } from './labelled-examples.js';
export type { ClassExample, LabelSetExample, TrainExample } from './labelled-examples.js';

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
/** SetFit's pair rounds per example when fine-tuning (each gives one same-label and one other-label pair). */
export const kDefaultNumIterations = 20;
/** Most pair rounds per example a request may ask for. */
export const kMaxNumIterations = 100;
/**
 * With the default `num_iterations`, large example sets get fewer rounds so that fine-tuning
 * stays within this many pairs (250 steps of 16, about a minute on two cores).
 */
export const kDefaultMaxPairs = 4_000;

/**
 * How `finetune: true` fine-tunes: `adapter` trains a low-rank adapter on the frozen base (about 0.7 MB); `full` trains
 * every weight of the encoder (the model carries a copy of it, about 90 MB). `adapter` is the default because on the
 * accuracy bench's draws it stays within the issue's bar of full fine-tuning (docs/engine.md); this is the one place
 * the default is set.
 */
export const kDefaultFinetuneMethod: FinetuneMethod = 'adapter';
/** The fine-tuning methods a request may name. */
export const kFinetuneMethods = ['adapter', 'full'] as const;
export type FinetuneMethod = (typeof kFinetuneMethods)[number];
/** The adapter's rank when a request names none: 8 on all six linear layers is 331,776 parameters (0.66 MB in fp16). */
export const kDefaultAdapterRank = 8;
/** Largest rank a request may ask for (the adapter file's reader allows up to 256). */
export const kMaxRequestAdapterRank = 64;

/** The task types a classifier is trained for. */
export const kTaskTypes = ['binary-classification', 'multi-class-classification', 'multi-label-classification'] as const;

export type TaskType = (typeof kTaskTypes)[number];

/** Fewest and most classes (multi-class) or distinct labels (multi-label) a request may name. */
export const kMinClasses = 2;
export const kMaxClasses = 100;
/** Fewest examples of each class a multi-class request carries: fewer cannot be cross-validated or learned. */
export const kMinExamplesPerClass = 8;

/** Most unlabelled texts a request may send for self-training. */
export const kMaxUnlabeled = 10_000;

/**
 * Most tokens of text one training request may ask the service to embed: its examples, validation and unlabelled
 * texts together, each as the encoder reads it (contract/train-work.ts estimates it). About three minutes of one engine
 * thread per pass over them (5,700 tokens/s measured for long texts), and a fine-tuned job makes two or three passes;
 * 10,000 texts of 1,550 characters are 2,560,000. A fixed bound of the service (`SvcService`, so `svc serve` and
 * `POST /v2/train`), answered 413; the library's `train()` does not apply it.
 */
export const kMaxTrainTokens = 1_000_000;
/** Characters per token of the estimate: WordPiece read 3.5 (e-mails) to 4.3 (short reviews) characters a token. */
export const kCharsPerToken = 4;

/**
 * A text's tokens estimated from its length alone, the one estimate every bound and batch size uses (the tokenizer
 * is pool work): {@link kCharsPerToken} characters a token plus [CLS] and [SEP], at most `readTokens` (what the
 * encoder reads of it; left out: the whole text).
 *
 * @example
 * ```ts
 * estimateTextTokens('x'.repeat(1550), 256); // 256
 * estimateTextTokens('x'.repeat(1550)); // 390
 * ```
 */
export function estimateTextTokens(text: string, readTokens = Infinity): number {
  return Math.min(readTokens, Math.ceil(text.length / kCharsPerToken) + 2);
}

// Messages are written without the field name; `parseRequest` puts the path in front
// (`examples[3].label must be a boolean`). Issues flagged `whole` are complete sentences.
// Fields every task type shares.
const commonFields = {
  model: z
    .string({ error: typeError('a string') })
    .refine(isBaseModelName, {
      error: (issue) => `must be one of ${baseModelNames.join(', ')} (got '${String(issue.input)}')`,
    })
    .describe('Base encoder, e.g. svc-small'),
  model_id: z
    .string({ error: typeError('a string') })
    .min(1, { error: 'must not be empty' })
    .optional()
    .describe(
      "An existing classifier's id, e.g. svc-small-1a2b3c4d5e6f: the request trains its next version (same base model, task " +
        'type and labels; not live until promoted), as POST /v2/models/{id}/versions does. Absent: a new classifier',
    ),
  finetune: z
    .union(
      [
        z.boolean(),
        z
          .object({
            // Strings and numbers refined rather than z.enum / z.int: a failed refinement keeps its own message and
            // path through the union with the boolean, where a failed type check reports only the union's.
            method: z
              .string()
              .refine((value) => kFinetuneMethods.includes(value as FinetuneMethod), {
                error: (issue) => `must be 'adapter' or 'full' (got ${JSON.stringify(issue.input)})`,
              })
              .describe(
                "'adapter': a low-rank adapter on the frozen base (PEFT LoRA, about 0.7 MB); 'full': every encoder weight",
              ) as unknown as z.ZodType<FinetuneMethod>,
            rank: z
              .number()
              .refine(Number.isInteger, { error: 'must be an integer' })
              .refine((value) => value >= 1, { error: 'must be at least 1' })
              .refine((value) => value <= kMaxRequestAdapterRank, { error: `must be at most ${kMaxRequestAdapterRank}` })
              .optional()
              .describe(`The adapter's rank r (method 'adapter'); default ${kDefaultAdapterRank}`),
          })
          .strict(),
      ],
      { error: typeError("a boolean or { method: 'adapter' | 'full', rank? }") },
    )
    .optional()
    .describe(
      'Fine-tune the encoder on pairs of examples (SetFit) before fitting the head; default true, which is ' +
        `{ method: '${kDefaultFinetuneMethod}' }. false keeps the base encoder frozen and only fits the head (faster, less accurate). ` +
        "{ method: 'adapter', rank } trains a LoRA adapter on the frozen base instead of a copy of the whole encoder",
    ),
  truncate: truncateSchema.describe(
    "Examples longer than the encoder reads (256 tokens): 'end' (default) drops their end, 'start' their start, 'none' refuses them " +
      "(400), 'chunks' fits the head on each example read whole, in overlapping windows whose embeddings are averaged " +
      '(fine-tuning reads the first window)',
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
  unlabeled: z
    // Empty texts are let through: a blank row in a file of texts is no reason to refuse the rest.
    .array(z.string({ error: typeError('a string') }).max(kMaxTextLength, { error: `must be at most ${kMaxTextLength} characters` }), {
      error: typeError('an array of strings'),
    })
    .max(kMaxUnlabeled, { error: `must hold at most ${kMaxUnlabeled} texts` })
    .optional()
    .describe(
      'Texts of the same task without labels (binary and multi-class requests): embedded by the trained encoder, the half the ' +
        'head is surest of join the examples with the labels it gives them, and the head is fitted again (self-training, with ' +
        "the label's own words as examples). With 500 to 1,000 such texts it gained 1.7 to 4 points of held-out accuracy on the accuracy bench",
    ),
};

/** The request object of a multi-class or multi-label task: the shared fields, its examples, class_weight and validation. */
function multiTaskObject<T extends 'multi-class-classification' | 'multi-label-classification', E extends z.ZodType>(
  type: T,
  example: E,
  examplesDescription: string,
) {
  return z
    .object({
      ...commonFields,
      task_type: z.literal(type).describe(`'${type}'`),
      examples: z.array(example, { error: typeError('an array') }).describe(examplesDescription),
      class_weight: z
        .literal('balanced', { error: (issue) => `must be 'balanced' (got ${JSON.stringify(issue.input)})` })
        .optional()
        .describe("'balanced' weighs each example by n / (classes x its class's count), as scikit-learn does, for skewed data"),
      validation: z
        .array(example, { error: typeError('an array') })
        .min(1, { error: 'must hold at least one example' })
        .max(kMaxExamples, { error: `must hold at most ${kMaxExamples} examples` })
        .optional()
        .describe('Held-out examples of the same shape: the model reports validation_accuracy and validation_macro_f1 on them'),
    })
    .strict();
}

type Issues = z.core.$RefinementCtx;

function addWhole(ctx: Issues, message: string, path: PropertyKey[] = ['examples']): void {
  ctx.addIssue({ code: 'custom', message, path, params: { whole: true } });
}

/** What a set too small to train on can do instead: classify fits a head within the call, on far fewer examples. */
const kTooFewToTrain =
  `to label texts from fewer without training a model, classify needs only ${kMinClassifyExamplesPerLabel} examples per label ` +
  '(POST /v2/classify, svc classify, or classify() in the library)';

/** Checks the shared bounds; false when an issue was added. */
function checkCounts(ctx: Issues, examples: readonly unknown[], min: number): boolean {
  if (examples.length < min) {
    addWhole(ctx, `at least ${min} examples are required (got ${examples.length}); ${kTooFewToTrain}`);
    return false;
  }
  if (examples.length > kMaxExamples) {
    addWhole(ctx, `at most ${kMaxExamples} examples are allowed (got ${examples.length})`);
    return false;
  }
  return true;
}

function checkFinetuneOptions(ctx: Issues, request: { finetune?: FinetuneRequest; num_iterations?: number }): void {
  if (request.finetune === false && request.num_iterations !== undefined) {
    ctx.addIssue({ code: 'custom', message: 'is only used when finetune is true', path: ['num_iterations'] });
  }
  const finetune = request.finetune;
  if (typeof finetune === 'object' && finetune.method !== 'adapter' && finetune.rank !== undefined) {
    ctx.addIssue({ code: 'custom', message: "is only used when method is 'adapter'", path: ['finetune', 'rank'] });
  }
}

/** A request's `finetune` field as given. */
export type FinetuneRequest = boolean | { method: FinetuneMethod; rank?: number };

function checkLabelCount(ctx: Issues, labels: ReadonlySet<string>, what: 'classes' | 'distinct labels'): boolean {
  if (labels.size < kMinClasses || labels.size > kMaxClasses) {
    addWhole(ctx, `examples need ${kMinClasses} to ${kMaxClasses} ${what} (got ${labels.size})`);
    return false;
  }
  return checkDistinctNames(ctx, labels, what === 'classes' ? 'class' : 'label', ['examples']);
}

/** Validation examples may only name labels the training examples have: a head has no row for any other. */
function checkValidationLabels(ctx: Issues, known: ReadonlySet<string>, validation: readonly string[][] | undefined): void {
  if (validation === undefined) return;
  for (let i = 0; i < validation.length; i++) {
    const unknown = validation[i].find((label) => !known.has(label));
    if (unknown !== undefined) {
      addWhole(ctx, `validation[${i}] names the label '${unknown}', which no training example has`, ['validation', i]);
      return;
    }
  }
}

const binaryRequestSchema = z
  .object({
    ...commonFields,
    task_type: z.literal('binary-classification').describe("'binary-classification'"),
    examples: z
      .array(exampleSchema, { error: typeError('an array') })
      .describe(`${kMinExamples} to ${kMaxExamples} examples with both labels and one shared label_text`),
    validation: z
      .array(exampleSchema, { error: typeError('an array') })
      .min(1, { error: 'must hold at least one example' })
      .max(kMaxExamples, { error: `must hold at most ${kMaxExamples} examples` })
      .optional()
      .describe("Held-out examples of the same shape and label_text: GET /v2/models/{id}/evaluation reports the model's scores on them"),
  })
  .strict()
  .superRefine((request, ctx) => {
    const { examples } = request;
    if (!checkCounts(ctx, examples, kMinExamples)) return;
    const trueCount = examples.filter((example) => example.label).length;
    if (trueCount === 0 || trueCount === examples.length) {
      addWhole(ctx, 'examples need at least one true and one false label');
      return;
    }
    if (examples.some((example) => example.label_text !== examples[0].label_text)) {
      addWhole(ctx, 'all examples must share one label_text');
      return;
    }
    const other = request.validation?.findIndex((example) => example.label_text !== examples[0].label_text) ?? -1;
    if (other >= 0) {
      addWhole(ctx, `validation[${other}].label_text must be the examples' '${examples[0].label_text}'`, ['validation', other]);
      return;
    }
    checkFinetuneOptions(ctx, request);
  })
  .meta({ id: 'BinaryTrainRequest' });

const multiClassRequestSchema = multiTaskObject(
  'multi-class-classification',
  classExampleSchema,
  `${kMinClasses} to ${kMaxClasses} classes, at least ${kMinExamplesPerClass} examples each, at most ${kMaxExamples} examples`,
)
  .superRefine((request, ctx) => {
    const { examples } = request;
    if (!checkCounts(ctx, examples, kMinClasses * kMinExamplesPerClass)) return;
    const counts = new Map<string, number>();
    for (const { label } of examples) counts.set(label, (counts.get(label) ?? 0) + 1);
    if (!checkLabelCount(ctx, new Set(counts.keys()), 'classes')) return;
    for (const [label, count] of counts) {
      if (count < kMinExamplesPerClass) {
        addWhole(ctx, `the class '${label}' has ${count} examples; each class needs at least ${kMinExamplesPerClass}`);
        return;
      }
    }
    checkValidationLabels(
      ctx,
      new Set(counts.keys()),
      request.validation?.map((example) => [example.label]),
    );
    checkFinetuneOptions(ctx, request);
  })
  .meta({ id: 'MultiClassTrainRequest' });

const multiLabelRequestSchema = multiTaskObject(
  'multi-label-classification',
  labelSetExampleSchema,
  `${kMinExamples} to ${kMaxExamples} examples naming ${kMinClasses} to ${kMaxClasses} distinct labels overall`,
)
  .superRefine((request, ctx) => {
    const { examples } = request;
    if (!checkCounts(ctx, examples, kMinExamples)) return;
    const labels = new Set(examples.flatMap((example) => example.labels));
    if (!checkLabelCount(ctx, labels, 'distinct labels')) return;
    checkValidationLabels(
      ctx,
      labels,
      request.validation?.map((example) => example.labels),
    );
    checkFinetuneOptions(ctx, request);
    if (request.unlabeled !== undefined) {
      // Self-training labels a text with the one class its head is surest of; a label set has no such class.
      ctx.addIssue({ code: 'custom', message: 'is used by binary and multi-class requests only', path: ['unlabeled'] });
    }
  })
  .meta({ id: 'MultiLabelTrainRequest' });

/**
 * The zod schema of a train request: one object per task type, told apart by `task_type`
 * (strict: unknown fields are rejected). Prefer {@link validateTrainRequest}, which turns the
 * first issue into a readable SvcError.
 *
 * @example
 * ```ts
 * const result = trainRequestSchema.safeParse({ model: 'svc-small', task_type: 'binary-classification', examples: [] });
 * result.success;                  // false
 * result.error.issues[0].message;  // 'at least 20 examples are required (got 0); to label texts from fewer …'
 * ```
 */
export const trainRequestSchema = z.discriminatedUnion(
  'task_type',
  [binaryRequestSchema, multiClassRequestSchema, multiLabelRequestSchema],
  {
    error: (issue) => {
      const input = issue.input as Record<string, unknown> | undefined;
      if (input === null || typeof input !== 'object' || Array.isArray(input)) return 'the request must be an object';
      if (input.task_type === undefined) return 'is required';
      return `must be one of ${kTaskTypes.map((type) => `'${type}'`).join(', ')} (got ${JSON.stringify(input.task_type)})`;
    },
  },
);

/** A binary train request. */
export type BinaryTrainRequest = z.infer<typeof binaryRequestSchema>;
/** A multi-class train request. */
export type MultiClassTrainRequest = z.infer<typeof multiClassRequestSchema>;
/** A multi-label train request. */
export type MultiLabelTrainRequest = z.infer<typeof multiLabelRequestSchema>;

/** What `train()`, `SvcService.train` and `POST /v2/train` accept. */
export type TrainRequest = z.infer<typeof trainRequestSchema>;

/**
 * Checks a train request and returns it typed; throws `SvcError('invalid_request')` for the
 * first problem, with `param` naming the field.
 *
 * @example
 * ```ts
 * validateTrainRequest({ model: 'svc-small', task_type: 'binary-classification', examples: [] });
 * // throws SvcError: at least 20 examples are required (got 0); to label texts from fewer without training a model,
 * // classify needs only 2 examples per label (POST /v2/classify, svc classify, or classify() in the library)
 * // (code 'invalid_request', param 'examples')
 * ```
 */
export function validateTrainRequest(input: unknown): TrainRequest {
  return parseRequest(trainRequestSchema, input);
}
