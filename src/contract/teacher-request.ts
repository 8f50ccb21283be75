// The train request that brings texts without labels and a teacher: a chat model, proxied for one of the caller's
// projects, labels them; a person's labels, where given, win over the teacher's. Its zod schema, its limits, and the
// one function that turns any input into a validated request or an SvcError naming the field at fault. What the
// labelling does with a valid request is service/teacher-stage.ts.
import { z } from 'zod';

import { parseRequest, typeError } from '../parse.js';
import { baseModelNames, isBaseModelName } from './base-models.js';
import {
  checkDistinctNames,
  classExampleSchema,
  exampleSchema,
  labelNameSchema,
  labelSetExampleSchema,
  textSchema,
} from './labelled-examples.js';
import { truncateSchema } from './long-texts.js';
import { kMaxClasses, kMaxNumIterations, kMinClasses, kMinExamples, kTaskTypes, type TaskType } from './train-request.js';

/** Most texts one teacher request may bring. */
export const kMaxTeacherTexts = 10_000;
/** Texts the teacher labels in one call unless the request says otherwise: fewer calls, and a prompt it reads whole. */
export const kDefaultTextsPerCall = 10;
/** Most texts in one call: a longer answer is more often cut or out of schema. */
export const kMaxTextsPerCall = 50;
/** Calls to the teacher in flight at once for one job unless the request says otherwise. */
export const kDefaultTeacherConcurrency = 4;
/** Most calls in flight for one job: the project's budget and rate limits are shared with its other traffic. */
export const kMaxTeacherConcurrency = 16;
/** Share of the teacher's labels held back to measure the student's agreement with the teacher. */
export const kDefaultHoldout = 0.2;
/** Longest instructions to the teacher. */
export const kMaxInstructionsLength = 4_000;

const kProviderPrefixes = ['provider-a:', 'provider-b:', 'provider-c:'];

const teacherSchema = z
  .object({
    model: z
      .string({ error: typeError('a string') })
      .refine((value) => kProviderPrefixes.some((prefix) => value.startsWith(prefix) && value.length > prefix.length), {
        error: (issue) => `must be a proxied model: ${kProviderPrefixes.join(', ')} and its name (got ${JSON.stringify(issue.input)})`,
      })
      .describe("The chat model that labels, as the proxy takes it: 'provider-a:gpt-4o-mini', 'provider-b:…', 'provider-c:…'"),
    project_id: z
      .string({ error: typeError('a string') })
      .min(1, { error: 'must not be empty' })
      .optional()
      .describe(
        "One of the caller's projects (required by the service): each call is logged on its dashboard and counted against its budget. " +
          "The library's train() calls the provider itself and takes none",
      ),
    instructions: z
      .string({ error: typeError('a string') })
      .max(kMaxInstructionsLength, { error: `must be at most ${kMaxInstructionsLength} characters` })
      .optional()
      .describe('What the labels mean, in words, as the prompt of a classifying chat call would say it'),
    texts_per_call: z
      .int({ error: typeError('an integer') })
      .min(1, { error: 'must be at least 1' })
      .max(kMaxTextsPerCall, { error: `must be at most ${kMaxTextsPerCall}` })
      .optional()
      .describe(`Texts labelled per call; default ${kDefaultTextsPerCall}`),
    concurrency: z
      .int({ error: typeError('an integer') })
      .min(1, { error: 'must be at least 1' })
      .max(kMaxTeacherConcurrency, { error: `must be at most ${kMaxTeacherConcurrency}` })
      .optional()
      .describe(`Calls in flight at once; default ${kDefaultTeacherConcurrency}`),
  })
  .strict()
  .meta({ id: 'Teacher' });

const selectSchema = z
  .object({
    budget: z
      .int({ error: typeError('an integer') })
      .min(kMinExamples, { error: `must be at least ${kMinExamples}` })
      .describe('Texts the teacher labels at most; the others are not sent'),
    strategy: z
      .enum(['uncertain', 'random'], { error: "must be 'uncertain' or 'random'" })
      .optional()
      .describe("'uncertain' (default): rounds of the texts a head on the labels so far is least sure of; 'random': a seeded sample"),
  })
  .strict()
  .meta({ id: 'TeacherSelection' });

const textsSchema = z
  .array(textSchema, { error: typeError('an array of strings') })
  .min(1, { error: 'must hold at least one text' })
  .max(kMaxTeacherTexts, { error: `must hold at most ${kMaxTeacherTexts} texts` })
  .describe('Texts without labels, for the teacher to label');

const commonFields = {
  model: z
    .string({ error: typeError('a string') })
    .refine(isBaseModelName, { error: (issue) => `must be one of ${baseModelNames.join(', ')} (got '${String(issue.input)}')` })
    .describe('Base encoder, e.g. svc-small'),
  texts: textsSchema,
  teacher: teacherSchema,
  select: selectSchema.optional(),
  holdout: z
    .number({ error: typeError('a number') })
    .min(0, { error: 'must be at least 0' })
    .max(0.5, { error: 'must be at most 0.5' })
    .optional()
    .describe(`Share of the teacher's labels held back to measure agreement (the evaluation report); default ${kDefaultHoldout}`),
  finetune: z
    .boolean({ error: typeError('a boolean') })
    .optional()
    .describe('As in the train request; default true'),
  num_iterations: z
    .int({ error: typeError('an integer') })
    .min(1, { error: 'must be at least 1' })
    .max(kMaxNumIterations, { error: `must be at most ${kMaxNumIterations}` })
    .optional()
    .describe('As in the train request'),
  truncate: truncateSchema.describe('As in the train request'),
};

const labelsSchema = z
  .array(labelNameSchema, { error: typeError('an array of label names') })
  .min(kMinClasses, { error: `must name at least ${kMinClasses} labels` })
  .max(kMaxClasses, { error: `must name at most ${kMaxClasses} labels` })
  .describe('The label names the teacher chooses among');

const binaryTeacherSchema = z
  .object({
    ...commonFields,
    task_type: z.literal('binary-classification'),
    label_text: labelNameSchema.describe("What a true label means, e.g. 'billing question'"),
    examples: z
      .array(exampleSchema, { error: typeError('an array') })
      .optional()
      .describe('Labels a person gave; they win over the teacher'),
  })
  .strict();

const multiClassTeacherSchema = z
  .object({
    ...commonFields,
    task_type: z.literal('multi-class-classification'),
    labels: labelsSchema,
    examples: z
      .array(classExampleSchema, { error: typeError('an array') })
      .optional()
      .describe('Labels a person gave'),
  })
  .strict();

const multiLabelTeacherSchema = z
  .object({
    ...commonFields,
    task_type: z.literal('multi-label-classification'),
    labels: labelsSchema,
    examples: z
      .array(labelSetExampleSchema, { error: typeError('an array') })
      .optional()
      .describe('Labels a person gave'),
  })
  .strict();

/**
 * The zod schema of a train request with a teacher, one object per task type.
 *
 * @example
 * ```ts
 * teacherTrainRequestSchema.safeParse({ model: 'svc-small', task_type: 'binary-classification', label_text: 'billing',
 *   texts: ['Why was I charged twice?'], teacher: { model: 'provider-a:gpt-4o-mini', project_id: 'proj_0123456789ab' } }).success; // true
 * ```
 */
export const teacherTrainRequestSchema = z
  .discriminatedUnion('task_type', [binaryTeacherSchema, multiClassTeacherSchema, multiLabelTeacherSchema], {
    error: (issue) => {
      const input = issue.input as Record<string, unknown> | undefined;
      if (input === null || typeof input !== 'object' || Array.isArray(input)) return 'the request must be an object';
      if (input.task_type === undefined) return 'is required';
      return `must be one of ${kTaskTypes.map((type) => `'${type}'`).join(', ')} (got ${JSON.stringify(input.task_type)})`;
    },
  })
  .superRefine((request, ctx) => {
    const names = request.task_type === 'binary-classification' ? [request.label_text] : request.labels;
    if (request.task_type !== 'binary-classification' && !checkDistinctNames(ctx, new Set(names), 'label', ['labels'])) return;
    const known = new Set(names);
    const examples = request.examples ?? [];
    for (let i = 0; i < examples.length; i++) {
      const example = examples[i] as { label?: unknown; label_text?: string; labels?: string[] };
      const named =
        request.task_type === 'binary-classification'
          ? [example.label_text!]
          : request.task_type === 'multi-class-classification'
            ? [example.label as string]
            : example.labels!;
      const unknown = named.find((name) => !known.has(name));
      if (unknown !== undefined) {
        const field = request.task_type === 'binary-classification' ? "label_text must be the request's" : 'names a label not in labels:';
        ctx.addIssue({ code: 'custom', message: `${field} '${unknown}'`, path: ['examples', i] });
        return;
      }
    }
    if (request.select !== undefined && request.select.budget > request.texts.length) {
      ctx.addIssue({ code: 'custom', message: `must be at most the ${request.texts.length} texts sent`, path: ['select', 'budget'] });
    }
  })
  .meta({ id: 'TeacherTrainRequest' });

export type TeacherTrainRequest = z.infer<typeof teacherTrainRequestSchema>;

/** The label names a teacher request chooses among (binary: its label_text). */
export function teacherLabels(request: TeacherTrainRequest): string[] {
  return request.task_type === 'binary-classification' ? [request.label_text] : request.labels;
}

/** Whether a train body asks for a teacher (its `teacher` field is present), before any other check. */
export function asksForTeacher(body: unknown): boolean {
  return typeof body === 'object' && body !== null && !Array.isArray(body) && 'teacher' in body;
}

/**
 * Checks a train request with a teacher and returns it typed; throws `SvcError('invalid_request')` for the first
 * problem, with `param` naming the field.
 *
 * @example
 * ```ts
 * validateTeacherTrainRequest({ model: 'svc-small', task_type: 'binary-classification', label_text: 'spam', texts: [],
 *   teacher: { model: 'provider-a:gpt-4o-mini', project_id: 'proj_0123456789ab' } });
 * // throws SvcError: texts must hold at least one text   (param 'texts')
 * ```
 */
export function validateTeacherTrainRequest(input: unknown): TeacherTrainRequest {
  return parseRequest(teacherTrainRequestSchema, input);
}

export type { TaskType };
