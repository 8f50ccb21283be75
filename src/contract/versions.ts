// The versions of a classifier over HTTP: a version object, the list, the promote body, a deleted version. A
// classifier's id (`svc-small-<12 hex>`) names its live version; `<id>@<n>` names version n.
import { z } from 'zod';

import { typeError } from '../parse.js';
import { modelSchema } from './schemas.js';

/** `@` between a classifier's id and a version number: `svc-small-1a2b3c4d5e6f@2`. */
export const kVersionSeparator = '@';

/**
 * Splits a model name as predict takes it: a classifier's id (its live version: `version` null) or `<id>@<n>`.
 * Null when the part after `@` is not a whole number from 1.
 *
 * @example
 * ```ts
 * parseModelName('svc-small-1a2b3c4d5e6f@2'); // { id: 'svc-small-1a2b3c4d5e6f', version: 2 }
 * parseModelName('svc-small-1a2b3c4d5e6f');   // { id: 'svc-small-1a2b3c4d5e6f', version: null }
 * parseModelName('svc-small-1a2b3c4d5e6f@x'); // null
 * ```
 */
export function parseModelName(name: string): { id: string; version: number | null } | null {
  const at = name.lastIndexOf(kVersionSeparator);
  if (at < 0) return { id: name, version: null };
  const digits = name.slice(at + 1);
  if (!/^[1-9][0-9]{0,8}$/.test(digits)) return null;
  return { id: name.slice(0, at), version: Number(digits) };
}

const versionNumber = z
  .int({ error: typeError('a whole number') })
  .min(1, { error: 'must be at least 1' })
  .describe('A version number of the classifier, from 1');

export const versionParamsSchema = z.strictObject({
  model_id: z.string(),
  version: z.coerce.number({ error: typeError('a whole number') }).pipe(versionNumber),
});

export const promoteRequestSchema = z
  .strictObject({ version: versionNumber.describe('The trained version predict should use from now on (an older one rolls back)') })
  .meta({ id: 'PromoteRequest' });

export const versionSchema = z
  .object({
    id: z.string().describe('<model>@<version>: the name predict takes for this version'),
    object: z.literal('model.version'),
    model: z.string().describe('The classifier'),
    version: z.number().int(),
    live: z.boolean().describe("Predict answers the classifier's id with this version"),
    status: modelSchema.shape.status,
    created_at: z.number().int().describe('Unix seconds'),
    finished_at: z.number().int().nullable().describe('Unix seconds training ended (trained or failed); null while training'),
    metrics: modelSchema.shape.metrics,
    error: z.string().optional().describe('Why training failed (status "failed" only)'),
  })
  .meta({ id: 'ModelVersion' });

export const versionListSchema = z.object({
  object: z.literal('list'),
  model: z.string(),
  live_version: z.number().int(),
  data: z.array(versionSchema).describe('Oldest first'),
});

export const deletedVersionSchema = z.object({ id: z.string(), object: z.literal('model.version'), deleted: z.literal(true) });

export type VersionObject = z.infer<typeof versionSchema>;
export type VersionList = z.infer<typeof versionListSchema>;
export type DeletedVersion = z.infer<typeof deletedVersionSchema>;
export type PromoteRequest = z.infer<typeof promoteRequestSchema>;
