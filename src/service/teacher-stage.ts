// The first stage of a job trained by a teacher: the texts the teacher has not answered yet are sent (through the
// proxy, in calls of a few texts), each answer kept in the store the moment it arrives, and the labels then become
// the job's examples, with a held-out share as its validation set so that the evaluation report is the student's
// agreement with the teacher. A job that runs again after a restart asks only for the texts never answered.
import { SvcError } from '../errors.js';
import { kStoppedPosition, type TeacherTextRow } from '../store/teacher-texts.js';
import type { JobLease, Store, TrainingExample } from '../store/types.js';
import type { TeacherTransport } from '../teacher/labeller.js';
import type { TeacherLabel } from '../teacher/protocol.js';
import type { TrainProgress } from '../train/train.js';
import { askTeacher, type KeptAnswer, teacherTrainRequest } from '../train/teacher-labels.js';
import type { TaskType } from '../contract/train-request.js';
import { storedExamples, storedTrainingOptions, storedTrainRequest } from './examples.js';
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
  const kept = await store.teacherTexts.list(job.modelId);
  const bought = new Map(kept.filter((row) => row.position !== kStoppedPosition).map((row) => [row.position, answerOfRow(row)]));
  const stopped = await askTeacher({
    baseModel: job.baseModel,
    taskType: job.taskType,
    labels: job.labels,
    texts: job.options.teacher_texts as string[],
    typed: new Set(job.examples.map((example) => example.text)),
    teacher,
    ...(job.options.select === undefined ? {} : { select: job.options.select as { budget: number; strategy?: 'uncertain' | 'random' } }),
    transport:
      transportFor === null
        ? null
        : transportFor({ principal: { orgId: job.orgId, keyId: teacher.key_id }, projectId: teacher.project_id, teacher: teacher.model }),
    noTransport: 'this service runs no proxy, so the teacher cannot be asked; serve the proxy routes and train again',
    bought,
    keep: async (answers) => {
      if (!(await store.teacherTexts.record(job.modelId, hooks.lease, answers.map(toRow)))) {
        throw new SvcError('conflict', 'the job was claimed by another runner while it labelled');
      }
    },
    signal: hooks.signal,
    tenant: job.orgId,
    onProgress: hooks.onProgress,
  });
  if (stopped !== null) {
    // Why labelling stopped short is part of the model's report (its training_data), whatever training makes of it.
    const note: TeacherTextRow = {
      position: kStoppedPosition,
      text: '',
      outcome: 'stopped',
      label: null,
      detail: stopped,
      call: 0,
      tokensIn: 0,
      tokensOut: 0,
      ms: 0,
    };
    await store.teacherTexts.record(job.modelId, hooks.lease, [note]);
  }
  const { teacher_texts: _texts, teacher: _teacher, select: _select, holdout, ...rest } = job.options;
  const typed = storedTrainRequest(job.baseModel, job.taskType, job.examples, {}).examples as unknown as Record<string, unknown>[];
  const request = teacherTrainRequest(
    {
      model: job.baseModel,
      taskType: job.taskType,
      labels: job.labels,
      typed,
      ...(holdout === undefined ? {} : { holdout: holdout as number }),
      fields: { finetune: rest.finetune, num_iterations: rest.num_iterations, truncate: rest.truncate },
    },
    bought,
    stopped,
  );
  return { examples: storedExamples(request), options: { ...rest, ...storedTrainingOptions(request) } };
}

function toRow(answer: KeptAnswer): TeacherTextRow {
  return {
    position: answer.position,
    text: answer.text,
    outcome: answer.outcome,
    label: answer.label === null ? null : JSON.stringify(answer.label),
    detail: answer.detail,
    call: answer.call,
    tokensIn: answer.tokensIn,
    tokensOut: answer.tokensOut,
    ms: answer.ms,
  };
}

/** A kept row as the answer it was. */
export function answerOfRow(row: TeacherTextRow): KeptAnswer {
  return {
    position: row.position,
    text: row.text,
    outcome: row.outcome as KeptAnswer['outcome'],
    label: row.label === null ? null : (JSON.parse(row.label) as TeacherLabel),
    detail: row.detail,
    call: row.call,
    tokensIn: row.tokensIn,
    tokensOut: row.tokensOut,
    ms: row.ms,
  };
}
