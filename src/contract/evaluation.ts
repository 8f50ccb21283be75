// The evaluation report of a model version over HTTP (`GET /v2/models/{id}/evaluation`), from its validation set or,
// without one, from the cross-validation of its examples that training keeps in the manifest.
import { z } from 'zod';

import { kCvEncoders } from './manifest.js';
import { versionTextSchema } from './versions.js';

const averages = z.object({ precision: z.number(), recall: z.number(), f1: z.number() });
const scores = z.object({ accuracy: z.number(), macro_f1: z.number() });

export const evaluationQuerySchema = z.strictObject({
  version: versionTextSchema.optional().describe('The version to report on; default the live one'),
});

export const evaluationSchema = z
  .object({
    object: z.literal('model.evaluation'),
    model: z.string().describe('<model>@<version>'),
    source: z
      .enum(['validation', 'cross-validation'])
      .describe(
        "'validation': the held-out examples the version was trained with (its validation set); 'cross-validation', when it had " +
          'none: each training example scored by the head of the fold that held it out',
      ),
    folds: z.number().int().optional().describe("'cross-validation': the folds (up to 5)"),
    encoder: z
      .enum(kCvEncoders)
      .optional()
      .describe(
        "'cross-validation': the encoder that embedded the examples, as the model's cv_encoder ('base' for fine-tuned models: a conservative estimate)",
      ),
    examples: z.number().int(),
    labels: z.array(z.string()).describe("Class or label names; a binary model's are 'true' then 'false'"),
    accuracy: z.number().describe('Multi-label: the whole label set right'),
    confusion_matrix: z
      .array(z.array(z.number().int()))
      .describe('Single-label: rows the true class, columns the predicted one, in labels order. Multi-label: per label [tn, fp, fn, tp]'),
    per_label: z.array(
      z.object({ label: z.string(), precision: z.number(), recall: z.number(), f1: z.number(), support: z.number().int() }),
    ),
    macro: averages,
    micro: averages,
    hamming_loss: z.number().optional().describe('Multi-label: share of (text, label) pairs wrong'),
    thresholds: z
      .array(averages.extend({ threshold: z.number() }))
      .optional()
      .describe("Binary: precision, recall and F1 of 'true' at thresholds 0.05 to 0.95"),
    calibration: z
      .object({
        ece: z.number().describe('Expected calibration error over 10 equal-width bins'),
        bins: z.array(
          z.object({
            lower: z.number(),
            upper: z.number(),
            count: z.number().int(),
            mean_probability: z.number().nullable(),
            fraction_true: z.number().nullable(),
          }),
        ),
      })
      .optional()
      .describe('Binary: the reliability table'),
    ms_per_text: z
      .number()
      .optional()
      .describe(
        "Milliseconds per text the version took to score its validation set at training, batched on training's share of the " +
          "pool: what a text costs the classifier, beside a teacher's ms_per_text (versions trained before this was kept have none)",
      ),
    compared_with_live: z
      .object({
        version: z.number().int().describe('The live version'),
        examples: z.number().int().describe("The live version's validation set, scored by both"),
        this: scores,
        live: scores,
      })
      .optional()
      .describe('When another version is live and was trained with a validation set: both scored on its texts'),
  })
  .meta({ id: 'ModelEvaluation' });

export type EvaluationObject = z.infer<typeof evaluationSchema>;

/** A report without its envelope (whose model, from what, compared with what): the scores alone. */
export type EvaluationScores = Omit<EvaluationObject, 'object' | 'model' | 'source' | 'folds' | 'encoder' | 'compared_with_live'>;
