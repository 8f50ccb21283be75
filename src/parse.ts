// The one way a zod issue becomes an SvcError: `validateTrainRequest`, `SvcService` and the /v2
// routes all word their 400s here, so a field at fault reads the same from the library and over HTTP.
import type { z } from 'zod';

import { didYouMean } from './did-you-mean.js';
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
 * `params.whole` are complete sentences. `knownFields` are the fields the object at an unknown field's
 * path takes, for "did you mean".
 */
export function describeIssue(issue: z.core.$ZodIssue, knownFields: readonly string[] = []): { message: string; param: string | null } {
  const param = formatPath(issue.path);
  const owner = param === '' ? 'the request' : param;
  if (issue.code === 'custom' && issue.params?.whole) return { message: issue.message, param };
  if (issue.code === 'unrecognized_keys') {
    const fields = issue.keys.map((key) => `'${key}'${didYouMean(key, knownFields)}`).join(', ');
    return { message: `${owner} has unknown field ${fields}`, param: formatPath([...issue.path, issue.keys[0]]) };
  }
  if (issue.code === 'invalid_type' && issue.expected === 'object') {
    return { message: `${owner} must be an object`, param: param || null };
  }
  return { message: param === '' ? issue.message : `${param} ${issue.message}`, param: param || null };
}

/** A type error that says "is required" when the field is missing altogether. */
export const typeError = (what: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be ${what}`);

/** The parts of a zod schema's definition that lead to the fields of the object at a path. */
interface SchemaDef {
  type: string;
  shape?: Record<string, SchemaNode>;
  innerType?: SchemaNode;
  in?: SchemaNode;
  out?: SchemaNode;
  element?: SchemaNode;
  options?: SchemaNode[];
  discriminator?: string;
  left?: SchemaNode;
  right?: SchemaNode;
  getter?: () => SchemaNode;
  values?: unknown[];
}
interface SchemaNode {
  _zod: { def: SchemaDef };
}

const kWrappers = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

/**
 * The fields the object at `path` of `schema` takes, following `input` through arrays and discriminated unions (the
 * train request's object for its `task_type`): what an unknown field there is compared with.
 */
function fieldsAt(node: SchemaNode, input: unknown, path: readonly PropertyKey[]): string[] {
  const def = node._zod.def;
  if (kWrappers.has(def.type) && def.innerType) return fieldsAt(def.innerType, input, path);
  // A preprocessed schema (a transform piped into the schema) takes the fields of the schema it feeds.
  if (def.type === 'pipe' && def.in) return fieldsAt(def.in._zod.def.type === 'transform' && def.out ? def.out : def.in, input, path);
  if (def.type === 'lazy' && def.getter) return fieldsAt(def.getter(), input, path);
  if (def.type === 'intersection' && def.left && def.right) {
    return [...fieldsAt(def.left, input, path), ...fieldsAt(def.right, input, path)];
  }
  if (def.type === 'union' && def.options) {
    const chosen = def.discriminator === undefined ? [] : def.options.filter((option) => takesTag(option, def.discriminator!, input));
    return (chosen.length > 0 ? chosen : def.options).flatMap((option) => fieldsAt(option, input, path));
  }
  const [key, ...rest] = path;
  const record = typeof input === 'object' && input !== null ? (input as Record<PropertyKey, unknown>) : {};
  if (def.type === 'array' && def.element && typeof key === 'number') return fieldsAt(def.element, record[key], rest);
  if (def.type !== 'object' || !def.shape) return [];
  if (key === undefined) return Object.keys(def.shape);
  const child = def.shape[String(key)];
  return child === undefined ? [] : fieldsAt(child, record[key], rest);
}

/** True when a discriminated union's `option` is the one for the tag `input` carries. */
function takesTag(option: SchemaNode, discriminator: string, input: unknown): boolean {
  const tag = option._zod.def.shape?.[discriminator]?._zod.def;
  const value = typeof input === 'object' && input !== null ? (input as Record<string, unknown>)[discriminator] : undefined;
  return tag?.type === 'literal' && (tag.values ?? []).includes(value);
}

/** An issue's message with the fields its object takes for "did you mean". */
function describeIn(schema: z.ZodType, input: unknown, issue: z.core.$ZodIssue): { message: string; param: string | null } {
  const known = issue.code === 'unrecognized_keys' ? fieldsAt(schema as unknown as SchemaNode, input, issue.path) : [];
  return describeIssue(issue, [...new Set(known)]);
}

/**
 * Parses `input` with `schema`; throws `SvcError('invalid_request')` for the first issue. An unknown field is named
 * even when another issue comes first, with the closest field the object takes: a misspelt `exmaples` is why
 * `examples` is missing.
 *
 * @example
 * ```ts
 * parseRequest(predictRequestSchema, { model: 'm', inputs: [] });
 * // throws SvcError: inputs must hold at least one text   (param 'inputs')
 * parseRequest(predictRequestSchema, { model: 'm', input: ['hi'] });
 * // throws SvcError: inputs is required; the request has unknown field 'input' (did you mean 'inputs'?)   (param 'inputs')
 * ```
 */
export function parseRequest<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const [first, ...others] = result.error.issues;
  const { message, param } = describeIn(schema, input, first);
  const unknown = first.code === 'unrecognized_keys' ? undefined : others.find((issue) => issue.code === 'unrecognized_keys');
  const full = unknown === undefined ? message : `${message}; ${describeIn(schema, input, unknown).message}`;
  throw new SvcError('invalid_request', full, param ? { param } : {});
}
