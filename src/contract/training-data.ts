// Where a classifier's training labels came from, as its model object reports it: typed examples, a chat model
// that labelled texts through the proxy (a teacher), or the answers of calls in the project's request log. What a
// user reads before switching from the chat model to the classifier: how many texts were labelled, how many the
// teacher would not label, and what the labels cost. Agreement itself is the evaluation report on the held-out share.
import { z } from 'zod';

/** Most skipped texts or calls a report names one by one. */
export const kSkippedSamples = 20;

/** The chat model whose answers are the labels, and what they cost. */
export const teacherCostSchema = z
  .object({
    model: z.string().describe("The chat model as proxied, e.g. 'provider-a:gpt-4o-mini'"),
    project_id: z
      .string()
      .optional()
      .describe('The project whose proxy log holds the calls (absent: the library called the provider itself)'),
    calls: z.int().describe('Calls to the chat model (several texts per call where the teacher labels them)'),
    tokens_in: z.int().describe('Prompt tokens of those calls'),
    tokens_out: z.int().describe('Completion tokens of those calls'),
    ms_per_text: z.number().nullable().describe('Milliseconds of chat-model time per labelled text; null when unknown'),
    stopped: z.string().optional().describe('Why labelling stopped before every text had a label (e.g. the budget ran out)'),
  })
  .meta({ id: 'TeacherCost' });

/**
 * The model object's `training_data`.
 *
 * @example
 * ```ts
 * trainingDataSchema.parse({ source: 'teacher', texts: 500, labelled: 496, held_out: 99, skipped: 4 }).skipped; // 4
 * ```
 */
export const trainingDataSchema = z
  .object({
    source: z.enum(['examples', 'teacher', 'request_log']).describe('Where the labels came from'),
    texts: z.int().describe('Texts (or logged calls) considered'),
    labelled: z.int().describe('Of them, texts with a label: typed, bought from the teacher or read from a logged answer'),
    held_out: z.int().describe('Of the labelled, kept back to measure agreement (the evaluation report)'),
    skipped: z.int().describe('Texts refused or answered out of schema by the teacher, or calls whose label could not be read'),
    skipped_samples: z
      .array(
        z.object({
          index: z.int().optional().describe("The text's position in the request"),
          request_id: z.int().optional().describe('The request-log row'),
          reason: z.string(),
        }),
      )
      .max(kSkippedSamples)
      .optional()
      .describe(`Up to ${kSkippedSamples} of the skipped, with why`),
    teacher: teacherCostSchema.optional(),
  })
  .meta({ id: 'TrainingData' });

export type TrainingData = z.infer<typeof trainingDataSchema>;
export type TeacherCost = z.infer<typeof teacherCostSchema>;
