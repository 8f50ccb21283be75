// The /v2 HTTP contract, one zod schema per body: the routes validate and document with them
// (OpenAPI is generated from them), `SvcService` parses with them, and the types below, inferred
// from them, are what the service returns and the CLI client reads. Nothing here loads Fastify.
// Request schemas are strict: an unknown field is a 400 that names it. The train request is the
// library's own `trainRequestSchema` (train-request.ts): `train()` and `POST /v2/train` share it.
import { z } from 'zod';

import { typeError } from '../parse.js';
import { explainSchema, kExplainTextChars, kMaxExplain, kMaxExplainComparisons, kMaxExplainInputs, truncateSchema } from './long-texts.js';
import { textSchema } from './labelled-examples.js';
import { kCvEncoders } from './manifest.js';
import { trainingDataSchema } from './training-data.js';
import { kMaxTextLength, kTaskTypes } from './train-request.js';

export { trainRequestSchema } from './train-request.js';
export { classifyRequestSchema } from './classify-request.js';

/** Most texts one predict request may carry. */
export const kMaxPredictInputs = 2048;

export const predictRequestSchema = z.strictObject({
  model: z.string({ error: typeError('a string') }).describe('A trained model id, e.g. svc-small-1a2b3c4d5e6f'),
  inputs: z
    // Training's rule for a text: not blank, and tokenizing a megabyte costs far more than the 256 tokens it is cut to.
    .array(textSchema, { error: typeError('an array') })
    .min(1, { error: 'must hold at least one text' })
    .max(kMaxPredictInputs, { error: `holds more than ${kMaxPredictInputs} texts, the limit per request` })
    .describe(`1 to ${kMaxPredictInputs} texts of at most ${kMaxTextLength} characters each`),
  threshold: z
    .union(
      [
        z.number().min(0).max(1),
        z.record(
          z.string(),
          z
            .number({ error: typeError('a number from 0 to 1') })
            .min(0, { error: 'must be a number from 0 to 1' })
            .max(1, { error: 'must be a number from 0 to 1' }),
        ),
      ],
      { error: 'must be a number from 0 to 1, or an object of such numbers by label' },
    )
    .optional()
    .describe(
      'Multi-label models: the probability a label needs to be predicted, for every label or per label (the others keep 0.5); default 0.5',
    ),
  truncate: truncateSchema,
  explain: explainSchema.describe(
    `Per text, the k training examples nearest to it in the model's embedding space, with their labels and cosine similarity; 1 to ${kMaxExplain}; ` +
      `at most ${kMaxExplainInputs} inputs a call, and inputs x the model's examples at most ${kMaxExplainComparisons}`,
  ),
});

export const modelParamsSchema = z.strictObject({ model_id: z.string() });

export const modelSchema = z
  .object({
    id: z.string(),
    object: z.literal('model'),
    created_at: z.number().int().describe('Unix seconds'),
    status: z.enum(['training', 'trained', 'failed']),
    owned_by: z.string(),
    task_type: z.enum(kTaskTypes),
    labels: z.array(z.string()).optional().describe('Multi-class and multi-label models: the class or label names'),
    label_text: z
      .string()
      .optional()
      .describe("Binary models: what label true means, e.g. 'billing question' (what /v2/predict answers with)"),
    version: z
      .number()
      .int()
      .optional()
      .describe("The version this object describes: the live one for the classifier's id, n for <id>@<n>"),
    live_version: z
      .number()
      .int()
      .optional()
      .describe("The version predict uses for the classifier's id (POST /v2/models/{id}/promote changes it)"),
    metrics: z
      .object({
        train_accuracy: z.number(),
        train_seconds: z.number(),
        cv_accuracy: z
          .number()
          .optional()
          .describe(
            'Accuracy estimated by stratified k-fold cross-validation of the head on the training examples, embedded by the encoder cv_encoder names',
          ),
        cv_macro_f1: z.number().optional().describe('Macro-averaged F1 of that cross-validation (multi-label: over the labels)'),
        cv_folds: z.number().int().optional(),
        cv_encoder: z
          .enum(kCvEncoders)
          .optional()
          .describe(
            "The encoder the cross-validation embedded the examples with: 'trained', the one the model uses (frozen models); 'base', the base encoder (fine-tuned models, whose own encoder saw every held-out fold in training): a conservative estimate, since fine-tuning usually adds accuracy it does not count",
          ),
        validation_accuracy: z.number().optional().describe('Accuracy on the validation examples sent with the train request'),
        validation_macro_f1: z.number().optional(),
        validation_examples: z.number().int().optional(),
      })
      .optional()
      .describe('How good the model is likely to be (trained models)'),
    context_window: z
      .number()
      .int()
      .describe(
        'Tokens read per text, [CLS] and [SEP] included: a longer text is classified on its first context_window tokens (the rest is not read)',
      ),
    error: z.string().optional().describe('Why training failed (status "failed" only)'),
    training_data: trainingDataSchema
      .optional()
      .describe('Where the labels came from when a teacher or the request log gave them: counts, skipped texts, the cost'),
  })
  .meta({ id: 'Model' });

export const proxyModelSchema = z
  .object({
    id: z.string().describe('provider-a:<name>, provider-b:<name> or provider-c:<name>'),
    object: z.literal('model'),
    created_at: z.number().int(),
    owned_by: z.string(),
  })
  .meta({ id: 'ProxyModel' });

export const modelListSchema = z.object({
  object: z.literal('list'),
  data: z.array(z.union([modelSchema, proxyModelSchema])),
});

const truncatedSchema = z
  .boolean()
  .describe("true when the input had more tokens than the model's context_window and only its start was scored");
const scoresSchema = z.record(z.string(), z.number()).describe("Every label's probability, by label");

const chunksSchema = z
  .number()
  .int()
  .optional()
  .describe("truncate: 'chunks' only: how many overlapping windows of the text were read (their embeddings averaged)");
const nearestSchema = z
  .array(
    z.object({
      text: z.string().describe(`The example's text, or its first ${kExplainTextChars} characters (text_truncated)`),
      text_truncated: z.literal(true).optional().describe('Present when text is only the start of the example'),
      label: z.union([z.boolean(), z.string()]).optional().describe("Binary and multi-class: the example's label"),
      labels: z.array(z.string()).optional().describe("Multi-label: the example's labels"),
      similarity: z.number().describe("Cosine similarity of the example and the text in the encoder's space"),
      supports: z
        .boolean()
        .optional()
        .describe('Binary and multi-class: the example carries the label answered, so pulled the head toward it'),
    }),
  )
  .optional()
  .describe('explain: k only: the k training examples nearest the text, most similar first');
const unknownTokensSchema = z
  .number()
  .optional()
  .describe(
    "Share (0 to 1) of the text's word pieces, as the encoder read them, that the base model's vocabulary does not know ([UNK]); " +
      'absent when none. 0.5 or more: the text was mostly unread (emoji-only text is 1; svc-small is English-only)',
  );
const extras = { chunks: chunksSchema, nearest: nearestSchema, unknown_tokens: unknownTokensSchema };

const binaryPredictResponseSchema = z.object({
  model: z.string(),
  label_text: z.string(),
  predictions: z.array(
    z.object({
      label: z.boolean(),
      probability: z.number().describe('P(label = true)'),
      truncated: truncatedSchema,
      ...extras,
    }),
  ),
});

const classPredictResponseSchema = z.object({
  model: z.string(),
  task_type: z.literal('multi-class-classification'),
  predictions: z.array(
    z.object({
      label: z.string().describe('The most probable class'),
      probability: z.number().describe("That class's probability"),
      scores: scoresSchema.describe("Every class's probability, by class; they sum to 1"),
      truncated: truncatedSchema,
      ...extras,
    }),
  ),
});

const labelSetPredictResponseSchema = z.object({
  model: z.string(),
  task_type: z.literal('multi-label-classification'),
  predictions: z.array(
    z.object({
      labels: z.array(z.string()).describe('The labels whose probability reaches their threshold'),
      scores: scoresSchema,
      truncated: truncatedSchema,
      ...extras,
    }),
  ),
});

/** A binary model's answer (`label_text`, boolean labels), a multi-class model's or a multi-label model's. */
export const predictResponseSchema = z.union([binaryPredictResponseSchema, classPredictResponseSchema, labelSetPredictResponseSchema]);

const zeroShotSchema = z
  .boolean()
  .describe('true when no examples were sent: the head was fitted on template sentences built from the label names');

/** `/v2/classify`'s answer: predict's shapes, `model` naming the base encoder, `zero_shot`, and `chunks` per text with truncate 'chunks'. */
export const classifyResponseSchema = z.union([
  z.object({
    model: z.string().describe('The base encoder'),
    label_text: z.string(),
    zero_shot: zeroShotSchema,
    predictions: z.array(binaryPredictResponseSchema.shape.predictions.element),
  }),
  z.object({
    model: z.string().describe('The base encoder'),
    task_type: z.literal('multi-class-classification'),
    zero_shot: zeroShotSchema,
    predictions: z.array(classPredictResponseSchema.shape.predictions.element),
  }),
  z.object({
    model: z.string().describe('The base encoder'),
    task_type: z.literal('multi-label-classification'),
    zero_shot: zeroShotSchema,
    predictions: z.array(labelSetPredictResponseSchema.shape.predictions.element),
  }),
]);

export const deletedSchema = z.object({ id: z.string(), object: z.literal('model'), deleted: z.literal(true) });

export const progressSchema = z.object({
  object: z.literal('training.progress'),
  model: z.string(),
  status: z.enum(['training', 'trained', 'failed']),
  stage: z.string().nullable(),
  done: z.number(),
  total: z.number(),
  loss: z.number().nullable().describe('Running contrastive loss (fine-tuning stage only)'),
});

export const errorSchema = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string(),
      param: z.string().nullable(),
      code: z.string().nullable(),
    }),
  })
  .meta({ id: 'Error' });

export type PredictRequest = z.infer<typeof predictRequestSchema>;
/** The model object of the HTTP contract. */
export type ModelObject = z.infer<typeof modelSchema>;
/** A provider model reachable through the proxy (`provider-a:<name>`). */
export type ProxyModelObject = z.infer<typeof proxyModelSchema>;
export type ModelList = z.infer<typeof modelListSchema>;
export type PredictResponse = z.infer<typeof predictResponseSchema>;
export type ClassifyResponseBody = z.infer<typeof classifyResponseSchema>;
/** A binary model's predict response. */
export type BinaryPredictResponse = z.infer<typeof binaryPredictResponseSchema>;
export type DeletedModel = z.infer<typeof deletedSchema>;
export type ProgressObject = z.infer<typeof progressSchema>;
/** The error body of every /v2 and hub route. */
export type ErrorBody = z.infer<typeof errorSchema>;
