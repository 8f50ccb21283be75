// The shadow classifier's HTTP contract (issue #42): a project's shadow for a proxied model
// (`PUT|GET|DELETE /v2/{project_id}/shadow`) and what its compared calls add up to (`GET .../shadow/stats`). The
// routes document with these schemas and the proxy's shadow settings (proxy/shadow-settings.ts) parse with them.
import { z } from 'zod';

import { typeError } from '../parse.js';
import { labelRuleSchema } from './log-source.js';

/** Characters of a proxied model name, a classifier id or a text pointer, at most (the label rule's bounds are log-source.ts's). */
export const kMaxShadowFieldChars = 200;

const field = (what: string) =>
  z
    .string({ error: typeError('a string') })
    .min(1, { error: 'must not be empty' })
    .max(kMaxShadowFieldChars, { error: `must be at most ${kMaxShadowFieldChars} characters` })
    .describe(what);

export const shadowSettingsRequestSchema = z.strictObject({
  model: field("The proxied model as clients send it, e.g. 'provider-a:gpt-4o-mini'"),
  classifier: field('A classifier of your organization (svc-small-...); predict answers with its live version'),
  text_pointer: field("RFC 6901 pointer to the call's text in the request JSON; default: the last user message").optional(),
  label: labelRuleSchema,
});
export type ShadowSettingsRequest = z.infer<typeof shadowSettingsRequestSchema>;

export const shadowSchema = z
  .object({
    object: z.literal('shadow'),
    project_id: z.string(),
    model: z.string(),
    classifier: z.string(),
    text_pointer: z.string().nullable(),
    label: labelRuleSchema,
    created_at: z.number().int().describe('Unix seconds'),
    updated_at: z.number().int().describe('Unix seconds'),
  })
  .meta({ id: 'Shadow' });
export type ShadowObject = z.infer<typeof shadowSchema>;

export const shadowListSchema = z.object({ object: z.literal('list'), data: z.array(shadowSchema) });
export type ShadowList = z.infer<typeof shadowListSchema>;

export const deletedShadowSchema = z.object({ object: z.literal('shadow'), model: z.string(), deleted: z.literal(true) });

export const shadowDeleteQuerySchema = z.strictObject({ model: field('The proxied model whose shadow goes') });

/** The windows stats look back over, and the bucket each is cut into. */
export const kShadowWindows = Object.freeze({ '1h': 'hour', '24h': 'hour', '7d': 'day', '30d': 'day' } as const);
export type ShadowWindow = keyof typeof kShadowWindows;

export const shadowStatsQuerySchema = z.strictObject({
  window: z
    .enum(Object.keys(kShadowWindows) as [ShadowWindow, ...ShadowWindow[]], {
      error: `must be one of ${Object.keys(kShadowWindows).join(', ')}`,
    })
    .default('7d')
    .describe('How far back: 1h and 24h by hour, 7d (default) and 30d by day'),
  model: field('Only this proxied model').optional(),
});

const agreement = z.number().nullable().describe('agreed / compared; null when nothing was compared');

export const shadowStatsSchema = z.object({
  object: z.literal('shadow_stats'),
  project_id: z.string(),
  window: z.string(),
  bucket: z.enum(['hour', 'day']),
  since: z.number().int().describe('Unix seconds'),
  calls: z.number().int().describe('Proxied calls shadowed'),
  compared: z.number().int().describe('Calls with both labels read'),
  agreed: z.number().int(),
  agreement,
  errors: z.number().int().describe('Calls the classifier did not answer (a deleted classifier, no text)'),
  classifier_p50_ms: z.number().nullable(),
  saved: z
    .object({
      calls: z.number().int(),
      tokens_in: z.number().int(),
      tokens_out: z.number().int(),
      chat_ms: z.number(),
      classifier_ms: z.number(),
    })
    .describe("The calls the classifier answered: the chat model's tokens and time it would have saved, and its own time"),
  buckets: z.array(
    z.object({
      start: z.number().int().describe('Unix seconds'),
      calls: z.number().int(),
      compared: z.number().int(),
      agreed: z.number().int(),
      agreement,
    }),
  ),
});
export type ShadowStatsObject = z.infer<typeof shadowStatsSchema>;
