// The library's teacher: train() with texts and a `teacher` asks the chat model itself, straight to the provider with
// the given (or the environment's) provider settings, keeps the answers in memory, and trains on the request they
// make. No project, no log, no budget: those are the service's (POST /v2/train with a teacher goes through its proxy).
import { validateTeacherTrainRequest, teacherLabels } from '../contract/teacher-request.js';
import type { TrainRequest } from '../contract/train-request.js';
import type { TrainingData } from '../contract/training-data.js';
import type { EnvironmentSource } from '../environment.js';
import { directTeacherTransport } from '../teacher/direct-transport.js';
import type { TeacherTransport } from '../teacher/labeller.js';
import { type ProviderName, type ProviderOptions, resolveProviderConfig } from '../teacher/providers.js';
import { askTeacher, type KeptAnswer, teacherReport, teacherTrainRequest } from './teacher-labels.js';
import type { TrainProgress } from './train-options.js';

/** How the library reaches a teacher. */
export interface TeacherOptions {
  /** Provider URLs and keys; missing ones come from `SVC_PROVIDER_{A,B,C}_{URL,KEY}`, then the public API addresses. */
  providers?: ProviderOptions;
  /** Environment to read provider settings from. Default `process.env`. */
  env?: EnvironmentSource;
  /** Where each call goes instead of the provider's API (a test's, a proxy of your own). */
  transport?: TeacherTransport;
}

/** What a teacher labelled: the train request it makes, and the report (`training_data`) of what was bought. */
export interface TeacherLabelling {
  request: TrainRequest;
  report: TrainingData;
}

/**
 * Asks the request's teacher to label its texts and returns the train request the labels make (a person's
 * `examples` first, a held-out share of the teacher's as `validation`) with the report of the calls. `train()` calls
 * it for a request with a `teacher`; call it yourself to look at the labels before training on them.
 *
 * @example
 * ```ts
 * const { request, report } = await labelWithTeacher({
 *   model: 'svc-small', task_type: 'binary-classification', label_text: 'billing question', texts,
 *   teacher: { model: 'provider-a:gpt-4o-mini' },
 * }, { providers: { 'provider-a': { key: process.env.OPENAI_API_KEY } } });
 * report.labelled; // 500
 * const classifier = await train(request);
 * ```
 */
export async function labelWithTeacher(
  body: unknown,
  options: TeacherOptions & { signal?: AbortSignal; onProgress?: (p: TrainProgress) => void } = {},
): Promise<TeacherLabelling> {
  const request = validateTeacherTrainRequest(body);
  const provider = request.teacher.model.slice(0, request.teacher.model.indexOf(':')) as ProviderName;
  const transport =
    options.transport ?? directTeacherTransport(request.teacher.model, resolveProviderConfig(options.providers, options.env)[provider]);
  const labels = teacherLabels(request);
  const bought = new Map<number, KeptAnswer>();
  const stopped = await askTeacher({
    baseModel: request.model,
    taskType: request.task_type,
    labels,
    texts: request.texts,
    typed: new Set((request.examples ?? []).map((example) => example.text)),
    teacher: request.teacher,
    ...(request.select === undefined ? {} : { select: request.select }),
    transport,
    bought,
    keep: async () => {},
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
  });
  const trainRequest = teacherTrainRequest(
    {
      model: request.model,
      taskType: request.task_type,
      labels,
      typed: (request.examples ?? []) as Record<string, unknown>[],
      ...(request.holdout === undefined ? {} : { holdout: request.holdout }),
      fields: { finetune: request.finetune, num_iterations: request.num_iterations, truncate: request.truncate },
    },
    bought,
    stopped,
  );
  const report = teacherReport(request.texts.length, request.teacher, [...bought.values()], stopped, request.holdout);
  return { request: trainRequest, report };
}
