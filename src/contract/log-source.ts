// The train request whose examples are the project's own logged calls: `from_log` names which calls (a project, a
// time range, the proxied model), where each call's text is (the last user message, or a JSON pointer into the
// request) and where the chat model's label is (a JSON pointer into its reply, a regular expression, or label words).
// Its zod schema (strict; messages name the field), reused by the OpenAPI document. What the service does with a
// valid request is service/log-training.ts, which also compiles the rule (teacher/logged-calls.ts `labelReader`, a
// layer above this one) before it reads a row: a bad regex is a 400, not a row skipped 10,000 times.
import { z } from 'zod';

import { typeError } from '../parse.js';
import { checkDistinctNames, labelNameSchema } from './labelled-examples.js';
// The held-out share's default is the teacher request's: both measure agreement with a chat model the same way.
import { kDefaultHoldout } from './teacher-request.js';
import { kMaxClasses, kMinClasses, kTaskTypes, trainRequestSchema } from './train-request.js';

/** Longest regular expression a label rule may carry. */
export const kMaxLabelRegexLength = 1_000;
/** Most words a label rule may list, over all labels. */
export const kMaxLabelWords = 1_000;

const kProviderPrefixes = ['provider-a:', 'provider-b:', 'provider-c:'];
/** A date (midnight UTC) or a date and time with its offset: a time without one would be read in the server's zone. */
const kIsoMoment = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/** A moment as unix ms: an ISO-8601 string or the number itself. */
const momentSchema = z
  .union([z.number(), z.string()], { error: typeError('an ISO-8601 date-time or unix milliseconds') })
  .superRefine((value, ctx) => {
    const ok =
      typeof value === 'number' ? Number.isSafeInteger(value) && value >= 0 : kIsoMoment.test(value) && !Number.isNaN(Date.parse(value));
    if (!ok) {
      const what = "must be an ISO-8601 date ('2026-11-01') or date-time with its offset ('2026-11-01T09:30:00Z'), or unix milliseconds";
      ctx.addIssue({ code: 'custom', message: `${what} (got ${JSON.stringify(value)})` });
    }
  })
  .transform((value) => (typeof value === 'number' ? value : Date.parse(value)))
  .optional();

/** Where a label is in a reply, as teacher/logged-calls.ts reads it (its `LabelRule`). */
export type LogLabelRule = { pointer: string } | { regex: string; flags?: string } | { words: Record<string, string[]> };

// RFC 6901 syntax: '' (the whole document) or '/'-separated tokens; the service resolves it (teacher/json-pointer.ts).
const pointerSchema = (what: string) =>
  z
    .string({ error: typeError('a JSON pointer string') })
    .refine((value) => value === '' || value.startsWith('/'), {
      error: (issue) => `must be a JSON pointer starting with '/' (got ${JSON.stringify(issue.input)})`,
    })
    .describe(what);

/** Where a reply's label is; exactly one of `pointer`, `regex`, `words`. */
export const labelRuleSchema = z
  .object({
    pointer: pointerSchema(
      "A JSON pointer (RFC 6901) into the reply parsed as JSON (a fenced ```json block too), e.g. '/label'",
    ).optional(),
    regex: z
      .string({ error: typeError('a string') })
      .min(1, { error: 'must not be empty' })
      .max(kMaxLabelRegexLength, { error: `must be at most ${kMaxLabelRegexLength} characters` })
      .optional()
      .describe(
        "A regular expression over the reply text; its first capture group (or whole match) is the label word, e.g. '^(yes|no)\\\\b'",
      ),
    flags: z
      .string({ error: typeError('a string') })
      .optional()
      .describe("The regex's flags, letters of 'imsu'"),
    words: z
      .record(z.string(), z.array(z.string({ error: typeError('a string') }), { error: typeError('an array of words') }), {
        error: typeError('an object of label -> words'),
      })
      .optional()
      .describe(
        "Label -> words that mean it (binary: keys 'true' and 'false'), matched whole and case-insensitively; binary and multi-class " +
          'take the label whose word comes first in the reply, multi-label every label with a word in it',
      ),
  })
  .strict()
  .superRefine((rule, ctx) => {
    const kinds = (['pointer', 'regex', 'words'] as const).filter((kind) => rule[kind] !== undefined);
    if (kinds.length !== 1) {
      const got = kinds.length === 0 ? 'none' : kinds.join(' and ');
      ctx.addIssue({ code: 'custom', message: `must name exactly one of pointer, regex, words (got ${got})` });
    } else if (rule.flags !== undefined && rule.regex === undefined) {
      ctx.addIssue({ code: 'custom', message: 'is only used with regex', path: ['flags'] });
    } else if (rule.words !== undefined && Object.values(rule.words).flat().length > kMaxLabelWords) {
      ctx.addIssue({ code: 'custom', message: `must list at most ${kMaxLabelWords} words`, path: ['words'] });
    }
  })
  .transform((rule): LogLabelRule => {
    if (rule.pointer !== undefined) return { pointer: rule.pointer };
    if (rule.regex !== undefined) return rule.flags === undefined ? { regex: rule.regex } : { regex: rule.regex, flags: rule.flags };
    return { words: rule.words! };
  })
  .meta({ id: 'LabelRule' });

/** Which logged calls are the examples, and where their text and label are. */
export const logSourceSchema = z
  .object({
    project_id: z
      .string({ error: typeError('a string') })
      .min(1, { error: 'must not be empty' })
      .describe("One of the caller's projects, whose proxy request log holds the calls"),
    since: momentSchema.describe('Calls created at or after this moment (ISO-8601 or unix ms); default: the oldest the log keeps'),
    until: momentSchema.describe('Calls created before this moment; default: now'),
    model: z
      .string({ error: typeError('a string') })
      .refine((value) => kProviderPrefixes.some((prefix) => value.startsWith(prefix) && value.length > prefix.length), {
        error: (issue) => `must be a proxied model: ${kProviderPrefixes.join(', ')} and its name (got ${JSON.stringify(issue.input)})`,
      })
      .optional()
      .describe("Only calls to this model as the client sent it, e.g. 'provider-a:gpt-4o-mini'; default: every model"),
    text_pointer: pointerSchema(
      "Where the call's text is: a JSON pointer into the request body; default: the last user message",
    ).optional(),
    label: labelRuleSchema,
  })
  .strict()
  .superRefine((source, ctx) => {
    if (source.since !== undefined && source.until !== undefined && source.since >= source.until) {
      ctx.addIssue({ code: 'custom', message: 'must be after since', path: ['until'] });
    }
  })
  .meta({ id: 'LogSource' });

// The training fields are the train request's own (one definition): the binary variant's are the same objects.
const trainFields = trainRequestSchema.options[0].shape;

/**
 * The zod schema of a train request from the request log (`POST /v2/train` with `from_log`).
 *
 * @example
 * ```ts
 * logTrainRequestSchema.safeParse({ model: 'svc-small', task_type: 'binary-classification', label_text: 'billing question',
 *   from_log: { project_id: 'proj_0123456789ab', label: { regex: '^(yes|no)', flags: 'i' } } }).success; // true
 * ```
 */
export const logTrainRequestSchema = z
  .object({
    model: trainFields.model,
    model_id: trainFields.model_id,
    task_type: z.enum(kTaskTypes, {
      error: (issue) =>
        issue.input === undefined
          ? 'is required'
          : `must be one of ${kTaskTypes.map((t) => `'${t}'`).join(', ')} (got ${JSON.stringify(issue.input)})`,
    }),
    label_text: labelNameSchema.optional().describe("Binary: what a true label means, e.g. 'billing question'"),
    labels: z
      .array(labelNameSchema, { error: typeError('an array of label names') })
      .min(kMinClasses, { error: `must name at least ${kMinClasses} labels` })
      .max(kMaxClasses, { error: `must name at most ${kMaxClasses} labels` })
      .optional()
      .describe("Multi-class and multi-label: the label names a reply's label must be one of"),
    from_log: logSourceSchema,
    holdout: z
      .number({ error: typeError('a number') })
      .min(0, { error: 'must be at least 0' })
      .max(0.5, { error: 'must be at most 0.5' })
      .optional()
      .describe(
        `Share of the labelled calls held back as validation: the evaluation report is the agreement with the chat model; default ${kDefaultHoldout}`,
      ),
    finetune: trainFields.finetune,
    truncate: trainFields.truncate,
    num_iterations: trainFields.num_iterations,
  })
  .strict()
  .superRefine((request, ctx) => {
    const binary = request.task_type === 'binary-classification';
    if (binary && request.label_text === undefined)
      ctx.addIssue({ code: 'custom', message: 'is required for binary-classification', path: ['label_text'] });
    if (binary && request.labels !== undefined)
      ctx.addIssue({ code: 'custom', message: 'is used by multi-class and multi-label requests only; use label_text', path: ['labels'] });
    if (!binary && request.labels === undefined)
      ctx.addIssue({ code: 'custom', message: `is required for ${request.task_type}`, path: ['labels'] });
    if (!binary && request.label_text !== undefined)
      ctx.addIssue({ code: 'custom', message: 'is used by binary requests only; use labels', path: ['label_text'] });
    if (request.labels !== undefined) checkDistinctNames(ctx, request.labels, 'label', ['labels']);
  })
  .meta({ id: 'LogTrainRequest' });

export type LogTrainRequest = z.infer<typeof logTrainRequestSchema>;
export type LogSource = z.infer<typeof logSourceSchema>;

/**
 * The task a request's logged replies label: its type and label names (binary: `[label_text]`).
 *
 * @example
 * ```ts
 * logTask({ task_type: 'binary-classification', label_text: 'billing question' });
 * // { taskType: 'binary-classification', labels: ['billing question'] }
 * ```
 */
export function logTask(request: Pick<LogTrainRequest, 'task_type' | 'label_text' | 'labels'>): {
  taskType: LogTrainRequest['task_type'];
  labels: string[];
} {
  const labels = request.task_type === 'binary-classification' ? [request.label_text!] : request.labels!;
  return { taskType: request.task_type, labels };
}

/**
 * Whether a train body names logged calls as its examples (its `from_log` field is present), before any other check.
 *
 * @example
 * ```ts
 * asksForLog({ model: 'svc-small', from_log: {} }); // true
 * asksForLog({ model: 'svc-small', examples: [] });  // false
 * ```
 */
export function asksForLog(body: unknown): boolean {
  return typeof body === 'object' && body !== null && !Array.isArray(body) && 'from_log' in body;
}
