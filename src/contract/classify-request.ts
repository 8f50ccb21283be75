// The classify request: texts to label and the labelled examples (or only the label names) to label
// them by, in one call, with no stored model. One zod schema, shared by `classify()` in the library
// and `POST /v2/classify`; the example shapes are `/v2/train`'s own.
import { z } from 'zod';

import { parseRequest, typeError } from '../parse.js';
import { baseModelNames, isBaseModelName } from './base-models.js';
import { kMaxClasses, kMinClasses, type TaskType } from './train-request.js';
import {
  checkDistinctNames,
  classExampleSchema,
  distinctNames,
  exampleSchema,
  kMinClassifyExamplesPerLabel,
  labelNameSchema,
  labelSetExampleSchema,
  textSchema,
} from './labelled-examples.js';
import { explainSchema, truncateSchema } from './long-texts.js';

/** Most texts one classify call may label (Cohere's classify endpoint took as many). */
export const kMaxClassifyInputs = 96;
/** Most examples one classify call may carry. */
export const kMaxClassifyExamples = 2_500;
/**
 * Most examples x head rows (classes, or labels) one classify call fits a head on: the fit runs within the call, on
 * the share of the workers training uses, and its cost grows with both (docs/limits.md has the times measured).
 * Every zero-shot label set is within it (6 template sentences a name, 100 names at most).
 */
export const kMaxClassifyFitCells = 60_000;
export { kMinClassifyExamplesPerLabel } from './labelled-examples.js';
export { kMaxExplain, kTruncateModes, type TruncateMode } from './long-texts.js';

const inputsSchema = z
  .array(textSchema, { error: typeError('an array') })
  .min(1, { error: 'must hold at least one text' })
  .max(kMaxClassifyInputs, { error: `holds more than ${kMaxClassifyInputs} texts, the limit per classify request` })
  .describe(`1 to ${kMaxClassifyInputs} texts to label`);

const commonFields = {
  model: z
    .string({ error: typeError('a string') })
    .refine(isBaseModelName, { error: (issue) => `must be one of ${baseModelNames.join(', ')} (got '${String(issue.input)}')` })
    .describe('Base encoder whose frozen embeddings the head is fitted on, e.g. svc-small'),
  inputs: inputsSchema,
  truncate: truncateSchema,
  explain: explainSchema,
};

type Issues = z.core.$RefinementCtx;

function addWhole(ctx: Issues, message: string, path: PropertyKey[] = ['examples']): void {
  ctx.addIssue({ code: 'custom', message, path, params: { whole: true } });
}

function checkSize(ctx: Issues, examples: readonly unknown[]): boolean {
  if (examples.length > kMaxClassifyExamples) {
    addWhole(ctx, `at most ${kMaxClassifyExamples} examples are allowed (got ${examples.length})`);
    return false;
  }
  return true;
}

/** Every label named has at least the minimum of examples; the first short one is the issue. */
function checkPerLabel(ctx: Issues, counts: ReadonlyMap<string, number>, what: 'class' | 'label'): void {
  if (counts.size < kMinClasses || counts.size > kMaxClasses) {
    addWhole(ctx, `examples need ${kMinClasses} to ${kMaxClasses} ${what}s (got ${counts.size})`);
    return;
  }
  if (!checkDistinctNames(ctx, counts.keys(), what, ['examples'])) return;
  for (const [label, count] of counts) {
    if (count < kMinClassifyExamplesPerLabel) {
      addWhole(
        ctx,
        `the ${what} '${label}' has ${count} example${count === 1 ? '' : 's'}; each needs at least ${kMinClassifyExamplesPerLabel}`,
      );
      return;
    }
  }
}

/** The examples x head rows of a call with examples are within {@link kMaxClassifyFitCells}. */
function checkFitCells(ctx: Issues, examples: number, rows: number, what: 'classes' | 'labels'): void {
  if (examples * rows <= kMaxClassifyFitCells) return;
  addWhole(
    ctx,
    `a classify call fits its head while it runs: examples x ${what} may be at most ${kMaxClassifyFitCells} ` +
      `(got ${examples} x ${rows} = ${examples * rows}); send fewer examples, or train a model (POST /v2/train)`,
  );
}

/** Zero-shot (`examples: []`) needs the names; with examples, the names come from them and may not be given twice. */
function checkNames(ctx: Issues, examples: readonly unknown[], names: unknown, field: 'labels' | 'label_text'): boolean {
  if (examples.length === 0 && names === undefined) {
    addWhole(ctx, `with no examples (zero-shot), ${field} is required: the classes are told apart by their names`, [field]);
    return false;
  }
  if (examples.length > 0 && names !== undefined) {
    addWhole(ctx, `${field} is only used with no examples (zero-shot); with examples, the names come from them`, [field]);
    return false;
  }
  return examples.length > 0;
}

const unitNumber = z
  .number({ error: typeError('a number from 0 to 1') })
  .min(0, { error: 'must be a number from 0 to 1' })
  .max(1, { error: 'must be a number from 0 to 1' });

const binaryThresholdSchema = unitNumber.optional().describe('The probability label true needs; default 0.5');

const labelThresholdSchema = z
  .union([unitNumber, z.record(z.string(), unitNumber)], { error: 'must be a number from 0 to 1, or an object of such numbers by label' })
  .optional()
  .describe('The probability a label needs to be predicted, for every label or per label (the others keep 0.5); default 0.5');

const labelListSchema = z
  .array(labelNameSchema, { error: typeError('an array of strings') })
  .min(kMinClasses, { error: `must name at least ${kMinClasses} labels` })
  .max(kMaxClasses, { error: `must name at most ${kMaxClasses} labels` })
  .superRefine(distinctNames)
  .optional()
  .describe('Zero-shot only (examples: []): the class or label names');

const binarySchema = z
  .object({
    ...commonFields,
    task_type: z.literal('binary-classification').describe('May be left out when every example has a boolean label'),
    examples: z
      .array(exampleSchema, { error: typeError('an array') })
      .describe('Labelled examples, at least 2 true and 2 false; [] for zero-shot'),
    label_text: labelNameSchema.optional().describe("Zero-shot only (examples: []): what label true means, e.g. 'positive review'"),
    threshold: binaryThresholdSchema,
  })
  .strict()
  .superRefine((request, ctx) => {
    const { examples } = request;
    if (!checkSize(ctx, examples) || !checkNames(ctx, examples, request.label_text, 'label_text')) return;
    if (examples.some((example) => example.label_text !== examples[0].label_text))
      return addWhole(ctx, 'all examples must share one label_text');
    const positives = examples.filter((example) => example.label).length;
    checkPerLabel(
      ctx,
      new Map([
        ['true', positives],
        ['false', examples.length - positives],
      ]),
      'label',
    );
  })
  .meta({ id: 'BinaryClassifyRequest' });

const multiClassSchema = z
  .object({
    ...commonFields,
    task_type: z.literal('multi-class-classification').describe('May be left out when every example has a string label'),
    examples: z.array(classExampleSchema, { error: typeError('an array') }).describe('At least 2 examples of each class; [] for zero-shot'),
    labels: labelListSchema,
  })
  .strict()
  .superRefine((request, ctx) => {
    const { examples } = request;
    if (!checkSize(ctx, examples) || !checkNames(ctx, examples, request.labels, 'labels')) return;
    const counts = new Map<string, number>();
    for (const { label } of examples) counts.set(label, (counts.get(label) ?? 0) + 1);
    checkPerLabel(ctx, counts, 'class');
    checkFitCells(ctx, examples.length, counts.size, 'classes');
  })
  .meta({ id: 'MultiClassClassifyRequest' });

const multiLabelSchema = z
  .object({
    ...commonFields,
    task_type: z.literal('multi-label-classification').describe('May be left out when every example has labels'),
    examples: z
      .array(labelSetExampleSchema, { error: typeError('an array') })
      .describe('Each label on at least 2 examples and missing from one; [] for zero-shot'),
    labels: labelListSchema,
    threshold: labelThresholdSchema,
  })
  .strict()
  .superRefine((request, ctx) => {
    const { examples } = request;
    if (!checkSize(ctx, examples) || !checkNames(ctx, examples, request.labels, 'labels')) return;
    const counts = new Map<string, number>();
    for (const example of examples) for (const label of example.labels) counts.set(label, (counts.get(label) ?? 0) + 1);
    checkPerLabel(ctx, counts, 'label');
    checkFitCells(ctx, examples.length, counts.size, 'labels');
    // A label on every example leaves its one-vs-rest regression nothing to tell it from.
    const everywhere = [...counts].find(([, count]) => count === examples.length);
    if (everywhere !== undefined)
      addWhole(ctx, `the label '${everywhere[0]}' is on every example; each label must be missing from at least one`);
  })
  .meta({ id: 'MultiLabelClassifyRequest' });

type ExampleKind = { taskType: TaskType; what: string };

/** What one example's label says of the task: a boolean `label`, a string `label`, or a `labels` array. */
function kindOf(example: unknown): ExampleKind | undefined {
  if (example === null || typeof example !== 'object') return undefined;
  const { label, labels } = example as Record<string, unknown>;
  if (Array.isArray(labels)) return { taskType: 'multi-label-classification', what: 'labels (multi-label)' };
  if (typeof label === 'boolean') return { taskType: 'binary-classification', what: 'a boolean label (binary)' };
  if (typeof label === 'string') return { taskType: 'multi-class-classification', what: 'a string label (multi-class)' };
  return undefined;
}

/**
 * A body without `task_type` gets the one its examples say (Cohere's classify read it from them): all boolean labels,
 * binary; all string labels, multi-class; all `labels` arrays, multi-label. Examples of two kinds are the issue, the
 * first one that differs named. Anything else is left for the schema to name (no examples: task_type is required).
 */
function withInferredTaskType(input: unknown, ctx: { addIssue(issue: z.core.$ZodRawIssue): void }): unknown {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return input;
  const body = input as Record<string, unknown>;
  if (body.task_type !== undefined || !Array.isArray(body.examples) || body.examples.length === 0) return input;
  const first = kindOf(body.examples[0]);
  if (first === undefined) return input;
  for (let i = 1; i < body.examples.length; i++) {
    const kind = kindOf(body.examples[i]);
    if (kind?.taskType === first.taskType) continue;
    const message = `has ${kind?.what ?? 'no label'} but examples[0] has ${first.what}: ` + 'send examples of one kind, or task_type';
    ctx.addIssue({ code: 'custom', message, path: ['examples', i], input });
    return input;
  }
  return { ...body, task_type: first.taskType };
}

/**
 * The zod schema of a classify request: one object per task type, told apart by `task_type` (read
 * from the examples when the body has none), as the train request's. Prefer
 * {@link validateClassifyRequest}, which turns the first issue into a readable SvcError.
 */
export const classifyRequestSchema = z.preprocess(
  withInferredTaskType,
  z.discriminatedUnion('task_type', [binarySchema, multiClassSchema, multiLabelSchema], {
    error: (issue) => {
      const input = issue.input as Record<string, unknown> | undefined;
      if (input === null || typeof input !== 'object' || Array.isArray(input)) return 'the request must be an object';
      if (input.task_type === undefined) return 'is required';
      return `must be one of 'binary-classification', 'multi-class-classification', 'multi-label-classification' (got ${JSON.stringify(input.task_type)})`;
    },
  }),
);

/** What `classify()` and `POST /v2/classify` accept. */
export type ClassifyRequest = z.infer<typeof classifyRequestSchema>;

/**
 * Checks a classify request and returns it typed; throws `SvcError('invalid_request')` for the
 * first problem, with `param` naming the field.
 *
 * @example
 * ```ts
 * validateClassifyRequest({ model: 'svc-small', task_type: 'multi-class-classification', inputs: ['hi'],
 *   examples: [{ text: 'a', label: 'x' }, { text: 'b', label: 'x' }, { text: 'c', label: 'y' }] });
 * // throws SvcError: the class 'y' has 1 example; each needs at least 2   (param 'examples')
 * ```
 */
export function validateClassifyRequest(input: unknown): ClassifyRequest {
  return parseRequest(classifyRequestSchema, input);
}
