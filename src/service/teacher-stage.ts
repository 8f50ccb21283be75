// The first stage of a job trained by a teacher: the texts the teacher has not answered yet are sent (through the
// proxy, in calls of a few texts), each answer kept in the store the moment it arrives, and the labels then become
// the job's examples, with a held-out share as its validation set so that the evaluation report is the student's
// agreement with the teacher. A job that runs again after a restart asks only for the texts never answered.
import { SvcError } from '../errors.js';
import { seededRandom } from '../random.js';
import { kStoppedPosition, type TeacherTextRow } from '../store/teacher-texts.js';
import type { JobLease, Store, TrainingExample } from '../store/types.js';
import { labelTexts, type TeacherAnswer, type TeacherTransport } from '../teacher/labeller.js';
import type { TeacherLabel, TeacherTask } from '../teacher/protocol.js';
import type { TrainProgress } from '../train/train.js';
import { embedAll } from '../train/embed-all.js';
import { selectByUncertainty } from '../train/uncertainty.js';
import { resolveBaseModel } from '../model/base-models.js';
import { kDefaultHoldout, kDefaultTeacherConcurrency, kDefaultTextsPerCall } from '../contract/teacher-request.js';
import { kMinExamples, type TaskType } from '../contract/train-request.js';
import { validateTrainRequest } from '../contract/train-request.js';
import { storedTrainRequest } from './examples.js';
import type { Principal } from './service.js';

/** What a teacher job keeps in its stored options (`options.teacher`), as the request gave it. */
export interface StoredTeacher {
  model: string;
  project_id: string;
  instructions?: string;
  texts_per_call?: number;
  concurrency?: number;
  /** The key that asked: the log rows of the teacher's calls name it. */
  key_id: string;
}

/** Makes the transport for one job's calls; set by the proxy routes (the service alone cannot reach a provider). */
export type TeacherTransportFactory = (caller: { principal: Principal; projectId: string; teacher: string }) => TeacherTransport;

export interface TeacherJob {
  modelId: string;
  orgId: string;
  baseModel: string;
  taskType: TaskType;
  /** The label names (binary: [label_text]). */
  labels: string[];
  /** A person's labels, as stored; they win over the teacher's. */
  examples: TrainingExample[];
  options: Record<string, unknown>;
}

export interface TeacherStageHooks {
  lease: JobLease;
  signal: AbortSignal;
  onProgress: (p: TrainProgress) => void;
}

/** Seed of the held-out draw and of `select: { strategy: 'random' }`. */
const kTeacherSeed = 42;

/**
 * Runs the labelling stage of a teacher job and returns the examples and options training goes on with
 * (`validation` the held-out share of the teacher's labels). Throws `SvcError` with a reason a user can act on when
 * too few labels came back to train.
 */
export async function runTeacherStage(
  store: Store,
  transportFor: TeacherTransportFactory | null,
  job: TeacherJob,
  hooks: TeacherStageHooks,
): Promise<{ examples: TrainingExample[]; options: Record<string, unknown> }> {
  const teacher = job.options.teacher as StoredTeacher;
  const texts = job.options.teacher_texts as string[];
  const task: TeacherTask = { taskType: job.taskType, labels: job.labels, ...(teacher.instructions ? { instructions: teacher.instructions } : {}) };
  const kept = await store.teacherTexts.list(job.modelId);
  const bought = new Map(kept.filter((row) => row.position !== kStoppedPosition).map((row) => [row.position, row]));
  const typed = new Set(job.examples.map((example) => example.text));
  let wanted = texts.map((text, position) => ({ position, text })).filter((t) => !typed.has(t.text));
  const select = job.options.select as { budget: number; strategy?: 'uncertain' | 'random' } | undefined;
  const uncertain = select !== undefined && select.strategy !== 'random' && wanted.length > select.budget;
  if (select !== undefined && !uncertain) wanted = selectTexts(wanted, select.budget);
  const total = uncertain ? select!.budget : wanted.length;
  let done = [...bought.values()].length;
  let stopped: string | null = null;
  let call = Math.max(0, ...[...bought.values()].map((row) => row.call));
  /** Asks the teacher for these texts, keeping each call's answers as they arrive. */
  const ask = async (texts: { position: number; text: string }[]): Promise<void> => {
    if (transportFor === null) {
      throw new SvcError('invalid_request', 'this service runs no proxy, so the teacher cannot be asked; serve the proxy routes and train again');
    }
    hooks.onProgress({ stage: 'labelling', done, total });
    const result = await labelTexts({
      teacher: teacher.model,
      task,
      texts,
      textsPerCall: teacher.texts_per_call ?? kDefaultTextsPerCall,
      concurrency: teacher.concurrency ?? kDefaultTeacherConcurrency,
      transport: transportFor({ principal: { orgId: job.orgId, keyId: teacher.key_id }, projectId: teacher.project_id, teacher: teacher.model }),
      signal: hooks.signal,
      onAnswers: async (answers) => {
        call += 1;
        const rows = answers.map((answer) => toRow(answer, call));
        if (!(await store.teacherTexts.record(job.modelId, hooks.lease, rows))) {
          throw new SvcError('conflict', 'the job was claimed by another runner while it labelled');
        }
        for (const row of rows) bought.set(row.position, row);
        done += rows.length;
        hooks.onProgress({ stage: 'labelling', done, total });
      },
    });
    stopped ??= result.stopped;
  };
  if (uncertain) {
    // Rounds of the texts a head on the labels so far is least sure of, over the base encoder's embeddings.
    const dim = resolveBaseModel(job.baseModel).hiddenSize;
    const embeddings = await embedAll(job.baseModel, wanted.map((t) => t.text), dim, { signal: hooks.signal, tenant: job.orgId });
    const rowOf = new Map(wanted.map((t, row) => [t.position, row]));
    const answered = [...bought.values()].filter((r) => rowOf.has(r.position));
    await selectByUncertainty({
      embeddings,
      dim,
      task,
      budget: Math.max(0, select!.budget - answered.length),
      seed: kTeacherSeed,
      labelled: answered.filter((r) => r.outcome === 'labelled').map((r) => ({ index: rowOf.get(r.position)!, label: JSON.parse(r.label!) as TeacherLabel })),
      exclude: answered.filter((r) => r.outcome !== 'labelled').map((r) => rowOf.get(r.position)!),
      label: async (rows) => {
        if (stopped !== null) return rows.map(() => null);
        await ask(rows.map((row) => wanted[row]));
        return rows.map((row) => {
          const answer = bought.get(wanted[row].position);
          return answer?.outcome === 'labelled' ? (JSON.parse(answer.label!) as TeacherLabel) : null;
        });
      },
    });
  } else {
    const asking = wanted.filter((t) => !bought.has(t.position));
    if (asking.length > 0) await ask(asking);
  }
  if (stopped !== null) {
    // Why labelling stopped short is part of the model's report (its training_data), whatever training makes of it.
    const note: TeacherTextRow = { position: kStoppedPosition, text: '', outcome: 'stopped', label: null, detail: stopped, call: 0, tokensIn: 0, tokensOut: 0, ms: 0 };
    await store.teacherTexts.record(job.modelId, hooks.lease, [note]);
  }
  return trainingSet(job, bought, stopped);
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

function toRow(answer: TeacherAnswer, call: number): TeacherTextRow {
  return {
    position: answer.position,
    text: answer.text,
    outcome: answer.outcome,
    label: answer.label === null ? null : JSON.stringify(answer.label),
    detail: answer.detail,
    call,
    tokensIn: answer.tokensIn,
    tokensOut: answer.tokensOut,
    ms: answer.ms,
  };
}

/** A teacher's label as the store keeps an example (service/examples.ts). */
function storedExample(taskType: TaskType, labels: readonly string[], text: string, label: TeacherLabel): TrainingExample {
  switch (taskType) {
    case 'binary-classification':
      return { text, label: label as boolean, label_text: labels[0] };
    case 'multi-class-classification':
      return { text, label: true, label_text: label as string };
    case 'multi-label-classification':
      return { text, label: (label as string[]).length > 0, label_text: JSON.stringify(label) };
  }
}

/** A stored example as a validation entry of the train request. */
function validationEntry(taskType: TaskType, example: TrainingExample): Record<string, unknown> {
  switch (taskType) {
    case 'binary-classification':
      return { text: example.text, label: example.label, label_text: example.label_text };
    case 'multi-class-classification':
      return { text: example.text, label: example.label_text };
    case 'multi-label-classification':
      return { text: example.text, labels: JSON.parse(example.label_text) as string[] };
  }
}

function trainingSet(
  job: TeacherJob,
  bought: ReadonlyMap<number, TeacherTextRow>,
  stopped: string | null,
): { examples: TrainingExample[]; options: Record<string, unknown> } {
  const labelled = [...bought.values()]
    .filter((row) => row.outcome === 'labelled')
    .sort((a, b) => a.position - b.position)
    .map((row) => storedExample(job.taskType, job.labels, row.text, JSON.parse(row.label!) as TeacherLabel));
  const holdout = (job.options.holdout as number | undefined) ?? kDefaultHoldout;
  // Never so many held back that training falls below a train request's minimum.
  const cap = Math.max(0, job.examples.length + labelled.length - kMinExamples);
  const { train, held } = holdOut(labelled, holdout, cap, (example) => example.label_text + String(example.label));
  const examples = [...job.examples, ...train];
  const { teacher_texts: _texts, teacher: _teacher, select: _select, holdout: _holdout, ...rest } = job.options;
  const options = held.length === 0 ? rest : { ...rest, validation: held.map((example) => validationEntry(job.taskType, example)) };
  const skipped = [...bought.values()].filter((row) => row.outcome !== 'labelled').length;
  try {
    validateTrainRequest(storedTrainRequest('svc-small', job.taskType, examples, options));
  } catch (error) {
    const why = error instanceof SvcError ? error.message : String(error);
    const told = `the teacher labelled ${labelled.length} texts (${skipped} refused or out of schema${stopped === null ? '' : `; ${stopped}`})`;
    throw new SvcError('invalid_request', `${told}, too few to train: ${why}`);
  }
  return { examples, options };
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
