// The one way a zod issue becomes an SvcError: `validateTrainRequest`, `SvcService` and the /v2
// routes all word their 400s here, so a field at fault reads the same from the library and over HTTP.
import type { z } from 'zod';

import { SvcError } from './errors.js';

/** `['examples', 3, 'label']` -> `examples[3].label`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/**
 * One issue as a message and the field it names. Schemas write their messages without the field
 * name; it is put in front here (`examples[3].label must be a boolean`). Custom issues flagged
 * `params.whole` are complete sentences.
 */
export function describeIssue(issue: z.core.$ZodIssue): { message: string; param: string | null } {
  const param = formatPath(issue.path);
  const owner = param === '' ? 'the request' : param;
  if (issue.code === 'custom' && issue.params?.whole) return { message: issue.message, param };
  if (issue.code === 'unrecognized_keys') {
    const fields = issue.keys.map((key) => `'${key}'`).join(', ');
    return { message: `${owner} has unknown field ${fields}`, param: formatPath([...issue.path, issue.keys[0]]) };
  }
  if (issue.code === 'invalid_type' && issue.expected === 'object') {
    return { message: `${owner} must be an object`, param: param || null };
  }
  return { message: param === '' ? issue.message : `${param} ${issue.message}`, param: param || null };
}

/** A type error that says "is required" when the field is missing altogether. */
export const typeError = (what: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be ${what}`);

/**
 * Parses `input` with `schema`; throws `SvcError('invalid_request')` for the first issue.
 *
 * @example
 * ```ts
 * parseRequest(predictRequestSchema, { model: 'm', inputs: [] });
 * // throws SvcError: inputs must hold at least one text   (param 'inputs')
 * ```
 */
export function parseRequest<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const { message, param } = describeIssue(result.error.issues[0]);
  throw new SvcError('invalid_request', message, param ? { param } : {});
}
