// Training with a teacher, the service's side: a request checked and stored as a job whose first stage asks the
// teacher (teacher-stage.ts), and what its model object says about the labels while and after they are bought.
import { SvcError } from '../errors.js';
import { validateTeacherTrainRequest, teacherLabels, type TeacherTrainRequest } from '../contract/teacher-request.js';
import { teacherReport } from '../train/teacher-labels.js';
import { answerOfRow } from './teacher-stage.js';
import { checkTrainRequestWork } from '../contract/train-work.js';
import type { ModelObject } from '../contract/schemas.js';
import type { TrainingData } from '../contract/training-data.js';
import { resolveBaseModel } from '../model/base-models.js';
import { kStoppedPosition } from '../store/teacher-texts.js';
import type { ModelRecord, Store, TrainingExample, TrainingJob } from '../store/types.js';
import { limitRejection, queueLimits, type ResolvedOrgLimits } from './limits.js';
import type { JobRunner } from './jobs.js';
import { newId } from './keys.js';
import { toModelObject } from './model-object.js';
import type { Principal } from './service.js';
import type { StoredTeacher } from './teacher-stage.js';

export interface TeacherTrainingDeps {
  store: Store;
  jobs: JobRunner;
  orgLimits: (orgId: string) => Promise<ResolvedOrgLimits>;
  /** The check in front of every proxied call (the project is the caller's, its org has proxy access, budget left). */
  authorizeProxy: (principal: Principal, projectId: string) => Promise<unknown>;
  /** Whether this service serves the proxy, which the teacher's calls go through. */
  servesProxy: () => boolean;
}

/** A person's examples of a teacher request as the store keeps them (service/examples.ts). */
function typedExamples(request: TeacherTrainRequest): TrainingExample[] {
  switch (request.task_type) {
    case 'binary-classification':
      return (request.examples ?? []).map(({ text, label, label_text }) => ({ text, label, label_text }));
    case 'multi-class-classification':
      return (request.examples ?? []).map(({ text, label }) => ({ text, label: true, label_text: label }));
    case 'multi-label-classification':
      return (request.examples ?? []).map(({ text, labels }) => ({ text, label: labels.length > 0, label_text: JSON.stringify(labels) }));
  }
}

/**
 * `SvcService.train` for a body with `teacher`: checks it, that the caller may use the teacher's project through the
 * proxy (404 for a project not the caller's, 403 without proxy access or budget), and stores the job; the model
 * object comes back `training`, and its job starts by labelling.
 */
export async function trainWithTeacher(deps: TeacherTrainingDeps, principal: Principal, body: unknown): Promise<ModelObject> {
  const request = validateTeacherTrainRequest(body);
  const maxLength = resolveBaseModel(request.model).maxLength;
  // The work bound of every train request, over the texts the job may embed (the teacher's and a person's).
  checkTrainRequestWork(
    {
      model: request.model,
      task_type: 'binary-classification',
      examples: [...request.texts, ...(request.examples ?? []).map((e) => e.text)].map((text) => ({ text, label: true, label_text: 'x' })),
    },
    maxLength,
  );
  const projectId = request.teacher.project_id;
  if (projectId === undefined) {
    throw new SvcError(
      'invalid_request',
      "teacher.project_id is required: the project whose proxy the teacher's calls go through, logged and budgeted",
      {
        param: 'teacher.project_id',
      },
    );
  }
  await deps.authorizeProxy(principal, projectId);
  if (!deps.servesProxy()) {
    throw new SvcError('invalid_request', 'this service serves no proxy routes, which a teacher is asked through', { param: 'teacher' });
  }
  const labels = teacherLabels(request);
  const now = Date.now();
  const record: ModelRecord = {
    id: newId(`${request.model}-`),
    orgId: principal.orgId,
    baseModel: request.model,
    taskType: request.task_type,
    labelText: request.task_type === 'binary-classification' ? request.label_text : JSON.stringify(labels),
    status: 'training',
    error: null,
    createdAt: now,
    updatedAt: now,
  };
  const teacher: StoredTeacher = { ...request.teacher, project_id: projectId, key_id: principal.keyId };
  const options = {
    finetune: request.finetune,
    num_iterations: request.num_iterations,
    truncate: request.truncate,
    teacher,
    teacher_texts: request.texts,
    select: request.select,
    holdout: request.holdout,
  };
  const limits = await deps.orgLimits(principal.orgId);
  const { created, queued, quota } = await deps.store.createModelWithJob(record, typedExamples(request), options, queueLimits(limits));
  if (quota !== undefined) throw limitRejection({ kind: 'quota', orgId: principal.orgId, modelId: null, refusal: quota });
  if (!created) throw limitRejection({ kind: 'jobs', orgId: principal.orgId, queued, limit: limits.maxQueuedJobs });
  deps.jobs.kick();
  return { ...toModelObject(record), version: 1, live_version: 1, training_data: emptyReport(request.texts.length, teacher) };
}

function emptyReport(texts: number, teacher: StoredTeacher): TrainingData {
  return {
    source: 'teacher',
    texts,
    labelled: 0,
    held_out: 0,
    skipped: 0,
    teacher: { model: teacher.model, project_id: teacher.project_id, calls: 0, tokens_in: 0, tokens_out: 0, ms_per_text: null },
  };
}

/**
 * A model's `training_data`: for a teacher job, what the teacher answered so far (read from the store, so it moves
 * while the job labels); for a job that stored its own report (`options.training_data`), that; else null.
 */
export async function trainingDataOf(store: Store, modelId: string, job: TrainingJob | null): Promise<TrainingData | null> {
  if (job === null) return null;
  const stored = job.options.training_data;
  if (stored !== undefined && stored !== null) return stored as TrainingData;
  const teacher = job.options.teacher as StoredTeacher | undefined;
  if (teacher === undefined) return null;
  const kept = await store.teacherTexts.list(modelId);
  const answers = kept.filter((row) => row.position !== kStoppedPosition).map(answerOfRow);
  const stopped = kept.find((row) => row.position === kStoppedPosition)?.detail ?? null;
  return teacherReport(
    (job.options.teacher_texts as string[]).length,
    teacher,
    answers,
    stopped,
    job.options.holdout as number | undefined,
  );
}
