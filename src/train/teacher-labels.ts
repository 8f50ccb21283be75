// Labelling with a teacher, as training uses it in the service's jobs and in the library's train(): which texts to
// ask (all, a seeded sample, or rounds of the least sure by uncertainty sampling), the calls themselves
// (teacher/labeller.ts), and the train request the answers make, with a held-out share as its validation set so
// that the evaluation is the student's agreement with the teacher. Where the answers are kept is the caller's: the
// service's store (service/teacher-stage.ts), or memory.
import { SvcError } from '../errors.js';
import { seededRandom } from '../random.js';
import { resolveBaseModel } from '../model/base-models.js';
import { kDefaultHoldout, kDefaultTeacherConcurrency, kDefaultTextsPerCall } from '../contract/teacher-request.js';
import { kSkippedSamples, type TrainingData } from '../contract/training-data.js';
import { kMinExamples, type TaskType, type TrainRequest, validateTrainRequest } from '../contract/train-request.js';
import { labelTexts, type TeacherAnswer, type TeacherTransport } from '../teacher/labeller.js';
import type { TeacherLabel, TeacherTask } from '../teacher/protocol.js';
import { embedAll } from './embed-all.js';
import type { TrainProgress } from './train-options.js';
import { selectByUncertainty } from './uncertainty.js';

/** One text's answer, kept: its call's number (1, 2, ...: texts of one call share it) beside the answer. */
export interface KeptAnswer extends TeacherAnswer {
  call: number;
}

/** The teacher as a request names it. */
export interface TeacherSettings {
  model: string;
  instructions?: string;
  texts_per_call?: number;
  concurrency?: number;
}

export interface AskTeacherOptions {
  baseModel: string;
  taskType: TaskType;
  /** The label names (binary: [label_text]). */
  labels: readonly string[];
  texts: readonly string[];
  /** Texts a person labelled: never sent. */
  typed: ReadonlySet<string>;
  teacher: TeacherSettings;
  select?: { budget: number; strategy?: 'uncertain' | 'random' };
  /** Null where no transport exists: asking then throws `invalid_request` with `noTransport`. */
  transport: TeacherTransport | null;
  noTransport?: string;
  /** Answers kept so far by position (a job run again); answers bought now are added. */
  bought: Map<number, KeptAnswer>;
  /** Keeps one call's answers before labelling goes on (the store, or nothing). */
  keep: (answers: KeptAnswer[]) => Promise<void>;
  signal?: AbortSignal;
  /** Whose work the embedding of `select: uncertain` is (the pool's turns). */
  tenant?: string;
  onProgress?: (p: TrainProgress) => void;
}

/** Seed of the held-out draw and of `select: { strategy: 'random' }`. */
export const kTeacherSeed = 42;

/**
 * Asks the teacher for the texts it has not answered yet (within `select`'s budget), keeping each call's answers as
 * they arrive. Resolves with why labelling stopped short (a budget spent, a provider failing), or null.
 *
 * @example
 * ```ts
 * const bought = new Map();
 * await askTeacher({ baseModel: 'svc-small', taskType: 'binary-classification', labels: ['billing'], texts, typed: new Set(),
 *   teacher: { model: 'provider-a:gpt-4o-mini' }, transport, bought, keep: async () => {} });
 * // null; bought holds one answer per text
 * ```
 */
export async function askTeacher(o: AskTeacherOptions): Promise<string | null> {
  const task: TeacherTask = {
    taskType: o.taskType,
    labels: o.labels,
    ...(o.teacher.instructions ? { instructions: o.teacher.instructions } : {}),
  };
  const { bought, select } = o;
  let wanted = o.texts.map((text, position) => ({ position, text })).filter((t) => !o.typed.has(t.text));
  const uncertain = select !== undefined && select.strategy !== 'random' && wanted.length > select.budget;
  if (select !== undefined && !uncertain) wanted = selectTexts(wanted, select.budget);
  const total = uncertain ? select!.budget : wanted.length;
  let done = bought.size;
  let stopped: string | null = null;
  let call = Math.max(0, ...[...bought.values()].map((answer) => answer.call));
  const ask = async (texts: { position: number; text: string }[]): Promise<void> => {
    if (o.transport === null) throw new SvcError('invalid_request', o.noTransport ?? 'no way to reach the teacher was given');
    o.onProgress?.({ stage: 'labelling', done, total });
    const result = await labelTexts({
      teacher: o.teacher.model,
      task,
      texts,
      textsPerCall: o.teacher.texts_per_call ?? kDefaultTextsPerCall,
      concurrency: o.teacher.concurrency ?? kDefaultTeacherConcurrency,
      transport: o.transport,
      ...(o.signal === undefined ? {} : { signal: o.signal }),
      onAnswers: async (answers) => {
        call += 1;
        const kept = answers.map((answer) => ({ ...answer, call }));
        await o.keep(kept);
        for (const answer of kept) bought.set(answer.position, answer);
        done += kept.length;
        o.onProgress?.({ stage: 'labelling', done, total });
      },
    });
    stopped ??= result.stopped;
  };
  if (uncertain) {
    // Rounds of the texts a head on the labels so far is least sure of, over the base encoder's embeddings.
    const dim = resolveBaseModel(o.baseModel).hiddenSize;
    const embeddings = await embedAll(
      o.baseModel,
      wanted.map((t) => t.text),
      dim,
      { ...(o.signal === undefined ? {} : { signal: o.signal }), ...(o.tenant === undefined ? {} : { tenant: o.tenant }) },
    );
    const rowOf = new Map(wanted.map((t, row) => [t.position, row]));
    const answered = [...bought.values()].filter((answer) => rowOf.has(answer.position));
    await selectByUncertainty({
      embeddings,
      dim,
      task,
      budget: Math.max(0, select!.budget - answered.length),
      seed: kTeacherSeed,
      labelled: answered.filter((a) => a.outcome === 'labelled').map((a) => ({ index: rowOf.get(a.position)!, label: a.label! })),
      exclude: answered.filter((a) => a.outcome !== 'labelled').map((a) => rowOf.get(a.position)!),
      label: async (rows) => {
        if (stopped !== null) return rows.map(() => null);
        await ask(rows.map((row) => wanted[row]));
        return rows.map((row) => {
          const answer = bought.get(wanted[row].position);
          return answer?.outcome === 'labelled' ? answer.label : null;
        });
      },
    });
  } else {
    const asking = wanted.filter((t) => !bought.has(t.position));
    if (asking.length > 0) await ask(asking);
  }
  return stopped;
}

/** `budget` of the texts, a seeded random sample kept in request order. */
function selectTexts<T extends { position: number }>(texts: T[], budget: number): T[] {
  if (texts.length <= budget) return texts;
  const random = seededRandom(kTeacherSeed);
  const order = texts.map((t) => ({ t, key: random() }));
  order.sort((a, b) => a.key - b.key);
  return order
    .slice(0, budget)
    .map((o) => o.t)
    .sort((a, b) => a.position - b.position);
}

/** A label as the train request's example of its task type. */
function requestExample(taskType: TaskType, labels: readonly string[], text: string, label: TeacherLabel): Record<string, unknown> {
  switch (taskType) {
    case 'binary-classification':
      return { text, label, label_text: labels[0] };
    case 'multi-class-classification':
      return { text, label };
    case 'multi-label-classification':
      return { text, labels: label };
  }
}

export interface TeacherTrainRequestParts {
  model: string;
  taskType: TaskType;
  labels: readonly string[];
  /** A person's examples, in the train request's form; they come first. */
  typed: readonly Record<string, unknown>[];
  holdout?: number;
  /** `finetune`, `num_iterations`, `truncate` as the request gave them. */
  fields: Record<string, unknown>;
}

/**
 * The train request the answers make: a person's examples and the teacher's labels, `holdout` of the teacher's held
 * back as `validation` (each label in proportion, never taking training below {@link kMinExamples}). Throws
 * `SvcError('invalid_request')` with the counts and `stopped` when they are too few to train.
 *
 * @example
 * ```ts
 * teacherTrainRequest({ model: 'svc-small', taskType: 'binary-classification', labels: ['billing'], typed: [], fields: {} },
 *   bought, null).validation.length; // a fifth of the teacher's labels
 * ```
 */
export function teacherTrainRequest(
  parts: TeacherTrainRequestParts,
  bought: ReadonlyMap<number, KeptAnswer>,
  stopped: string | null,
): TrainRequest {
  const answers = [...bought.values()].sort((a, b) => a.position - b.position);
  const labelled = answers
    .filter((answer) => answer.outcome === 'labelled')
    .map((answer) => ({
      key: JSON.stringify(answer.label),
      example: requestExample(parts.taskType, parts.labels, answer.text, answer.label!),
    }));
  const skipped = answers.length - labelled.length;
  const cap = Math.max(0, parts.typed.length + labelled.length - kMinExamples);
  const { train, held } = holdOut(labelled, parts.holdout ?? kDefaultHoldout, cap, (entry) => entry.key);
  const request = {
    ...parts.fields,
    model: parts.model,
    task_type: parts.taskType,
    examples: [...parts.typed, ...train.map((entry) => entry.example)],
    ...(held.length === 0 ? {} : { validation: held.map((entry) => entry.example) }),
  };
  for (const key of Object.keys(request))
    if ((request as Record<string, unknown>)[key] === undefined) delete (request as Record<string, unknown>)[key];
  try {
    return validateTrainRequest(request);
  } catch (error) {
    const why = error instanceof SvcError ? error.message : String(error);
    const told = `the teacher labelled ${labelled.length} texts (${skipped} refused or out of schema${stopped === null ? '' : `; ${stopped}`})`;
    throw new SvcError('invalid_request', `${told}, too few to train: ${why}`);
  }
}

/** How many of `labelled` {@link teacherTrainRequest} holds back. */
export function heldOutCount(labelled: number, typed: number, holdout = kDefaultHoldout): number {
  return Math.min(Math.round(labelled * holdout), Math.max(0, typed + labelled - kMinExamples));
}

/** Holds back `share` of the examples, each label kept in proportion (at least one example of each stays in training). */
function holdOut<T>(examples: readonly T[], share: number, cap: number, key: (example: T) => string): { train: T[]; held: T[] } {
  if (share <= 0 || cap === 0) return { train: [...examples], held: [] };
  const random = seededRandom(kTeacherSeed);
  const groups = new Map<string, T[]>();
  for (const example of examples) {
    const k = key(example);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push(example);
  }
  const train: T[] = [];
  const held: T[] = [];
  for (const group of groups.values()) {
    const shuffled = group.map((example) => ({ example, order: random() })).sort((a, b) => a.order - b.order);
    const keep = Math.min(group.length - 1, Math.round(group.length * share), cap - held.length);
    shuffled.forEach(({ example }, i) => (i < keep ? held : train).push(example));
  }
  return { train, held };
}

/**
 * The `training_data` report of a teacher's answers so far: texts, labelled, held out, skipped (with samples), and
 * what the calls cost.
 *
 * @example
 * ```ts
 * teacherReport(60, { model: 'provider-a:gpt-4o-mini' }, answers, null).teacher.calls; // 6
 * ```
 */
export function teacherReport(
  texts: number,
  teacher: { model: string; project_id?: string },
  answers: readonly KeptAnswer[],
  stopped: string | null,
  holdout = kDefaultHoldout,
): TrainingData {
  const labelled = answers.filter((answer) => answer.outcome === 'labelled').length;
  const skipped = answers.filter((answer) => answer.outcome !== 'labelled');
  const ms = answers.reduce((sum, answer) => sum + answer.ms, 0);
  return {
    source: 'teacher',
    texts,
    labelled,
    held_out: heldOutCount(labelled, 0, holdout),
    skipped: skipped.length,
    ...(skipped.length === 0
      ? {}
      : {
          skipped_samples: skipped
            .slice(0, kSkippedSamples)
            .map((answer) => ({ index: answer.position, reason: `${answer.outcome}: ${answer.detail ?? ''}` })),
        }),
    teacher: {
      model: teacher.model,
      ...(teacher.project_id === undefined ? {} : { project_id: teacher.project_id }),
      calls: new Set(answers.map((answer) => answer.call)).size,
      tokens_in: Math.round(answers.reduce((sum, answer) => sum + answer.tokensIn, 0)),
      tokens_out: Math.round(answers.reduce((sum, answer) => sum + answer.tokensOut, 0)),
      ms_per_text: answers.length === 0 ? null : Math.round((ms / answers.length) * 10) / 10,
      ...(stopped === null ? {} : { stopped }),
    },
  };
}
