import { z } from 'zod';

import { kMaxPredictInputs } from '../service/validate.js';

// Request schemas are strict: an unknown field is a 400 that names it.

export const exampleSchema = z.strictObject({
  text: z.string(),
  label: z.boolean(),
  label_text: z.string(),
});

export const trainBodySchema = z.strictObject({
  model: z.string().describe('Base model, e.g. svc-small'),
  task_type: z.string().describe('binary-classification'),
  examples: z.array(exampleSchema).describe('At least 20 examples with both labels and one shared label_text'),
  finetune: z.boolean().optional().describe('Fine-tune the encoder on pairs of examples (SetFit) before the head; default true'),
  num_iterations: z.number().optional().describe('Pair rounds per example when fine-tuning; default 20'),
});

export const predictBodySchema = z.strictObject({
  model: z.string().describe('A trained model id, e.g. svc-small-1a2b3c4d5e6f'),
  inputs: z
    .array(z.string())
    .min(1, { error: 'inputs must hold at least one text' })
    .max(kMaxPredictInputs, { error: `inputs holds more than ${kMaxPredictInputs} texts, the limit per request` }),
});

export const modelParamsSchema = z.strictObject({ model_id: z.string() });

export const modelSchema = z
  .object({
    id: z.string(),
    object: z.literal('model'),
    created_at: z.number().int().describe('Unix seconds'),
    status: z.enum(['training', 'trained', 'failed']),
    owned_by: z.string(),
    task_type: z.literal('binary-classification'),
    context_window: z.number().int(),
    error: z.string().optional().describe('Why training failed (status "failed" only)'),
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

export const predictResponseSchema = z.object({
  model: z.string(),
  label_text: z.string(),
  predictions: z.array(z.object({ label: z.boolean(), probability: z.number().describe('P(label = true)') })),
});

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
