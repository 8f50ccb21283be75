// The evaluation report a training job stores with its model's files (evaluation.json, runtime.ts
// kEvaluationFile): the version's scores on its own validation set and, when another version was live while it
// trained, both versions' headline scores on that one's validation set. Written once, before the model is
// published, and never changed: a GET reads this small file, never the job's stored request.
import { SvcError } from '../errors.js';
import type { EvaluationReport } from '../train/evaluation.js';

/** The headline scores of a report, as `compared_with_live` shows them. */
export interface Headline {
  accuracy: number;
  macro_f1: number;
}

/** Both versions on the validation set of the version that was live while this one trained. */
export interface StoredComparison {
  /** The live version's stored id (its row): a comparison holds while that version is the live one. */
  live_id: string;
  version: number;
  /** The live version's validation examples, scored by both. */
  examples: number;
  this: Headline;
  live: Headline;
}

export interface StoredEvaluation {
  /** The version's report on its own validation set; null when its request had none. */
  validation: EvaluationReport | null;
  compared_with_live: StoredComparison | null;
}

export const headline = (report: EvaluationReport): Headline => ({ accuracy: report.accuracy, macro_f1: report.macro.f1 });

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isReport = (value: unknown): value is EvaluationReport =>
  isObject(value) && typeof value.examples === 'number' && typeof value.accuracy === 'number' && isObject(value.macro);
const isHeadline = (value: unknown): value is Headline =>
  isObject(value) && typeof value.accuracy === 'number' && typeof value.macro_f1 === 'number';
const isComparison = (value: unknown): value is StoredComparison =>
  isObject(value) &&
  typeof value.live_id === 'string' &&
  typeof value.version === 'number' &&
  typeof value.examples === 'number' &&
  isHeadline(value.this) &&
  isHeadline(value.live);

/**
 * The stored report in `text` (the file of model `where`); a file that is not one is the service's fault: 500,
 * naming the model, not the caller's.
 *
 * @example
 * ```ts
 * parseStoredEvaluation('{"validation":null,"compared_with_live":null}', 'acme/svc-small-1a2b3c4d5e6f');
 * // { validation: null, compared_with_live: null }
 * ```
 */
export function parseStoredEvaluation(text: string, where: string): StoredEvaluation {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const validation = isObject(value) ? value.validation : undefined;
  const compared = isObject(value) ? value.compared_with_live : undefined;
  if (!(validation === null || isReport(validation)) || !(compared === null || isComparison(compared))) {
    throw new SvcError('internal', `the stored evaluation report of ${where} is damaged`);
  }
  return { validation, compared_with_live: compared };
}
