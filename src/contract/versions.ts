// The versions of a classifier over HTTP: a version object, the list, the promote body, a deleted version. A
// classifier's id (`svc-small-<12 hex>`) names its live version; `<id>@<n>` names version n.
import { z } from 'zod';

import { typeError } from '../parse.js';
import { modelSchema } from './schemas.js';

/** `@` between a classifier's id and a version number: `svc-small-1a2b3c4d5e6f@2`. */
export const kVersionSeparator = '@';

/**
 * How a version number is written wherever it is text (`<id>@<n>`, `/versions/<n>`, `?version=<n>`, the hub's
 * `v<n>` revision): plain digits from 1, with no sign, leading zero, point, exponent or space, and at most 9 digits.
 * One rule, so that `0x2`, `1e3`, `+2` or `2.0000000000000001` never name version 2 or 1000 on one route and fail on
 * another.
 */
const kVersionDigits = /^[1-9][0-9]{0,8}$/;

/**
 * A version number written as text, by the one rule every path, query and model name uses; null for anything else.
 *
 * @example
 * ```ts
 * parseVersionNumber('2');   // 2
 * parseVersionNumber('02');  // null
 * parseVersionNumber('0x2'); // null
 * ```
 */
export function parseVersionNumber(text: string): number | null {
  return kVersionDigits.test(text) ? Number(text) : null;
}

/**
 * Splits a model name as predict takes it: a classifier's id (its live version: `version` null) or `<id>@<n>`.
 * Null when the part after `@` is not a version number ({@link parseVersionNumber}).
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
  const version = parseVersionNumber(name.slice(at + 1));
  return version === null ? null : { id: name.slice(0, at), version };
}

const kVersionTextRule = '1 to 999999999 in plain digits (no sign, leading zero, point, exponent or space)';

/** A version number in a path or query string, by {@link parseVersionNumber}'s rule; parsed to a number. */
export const versionTextSchema = z
  .string({ error: typeError(`a version number, ${kVersionTextRule}`) })
  .regex(kVersionDigits, { error: (issue) => `must be a version number, ${kVersionTextRule}; got '${String(issue.input)}'` })
  .transform(Number)
  .describe('A version number of the classifier, from 1, in plain digits');

const versionNumber = z
  .int({ error: typeError('a whole number') })
  .min(1, { error: 'must be at least 1' })
  .describe('A version number of the classifier, from 1');

export const versionParamsSchema = z.strictObject({ model_id: z.string(), version: versionTextSchema });

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
