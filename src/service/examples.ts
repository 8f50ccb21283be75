// How a train request's examples are kept by the store and given back to the runtime. The store's
// example row is the binary one ({ text, label, label_text }); the other task types fit in it
// without a new column: a multi-class example keeps its class in label_text, a multi-label
// example its labels as a JSON array there (label: whether it has any). The model record's
// label_text holds a multi-class or multi-label model's label names the same way.
import type { TrainingExample } from '../store/types.js';
import { labelNames } from '../train/request.js';
import { type TaskType, type TrainRequest, validateTrainRequest } from '../contract/train-request.js';
import { checkRequestFits } from '../train/example-windows.js';
import { checkTrainRequestWork } from '../contract/train-work.js';
import { resolveBaseModel } from '../model/base-models.js';

/** The request's examples as the store keeps them. */
export function storedExamples(request: TrainRequest): TrainingExample[] {
  switch (request.task_type) {
    case 'binary-classification':
      return request.examples.map(({ text, label, label_text }) => ({ text, label, label_text }));
    case 'multi-class-classification':
      return request.examples.map(({ text, label }) => ({ text, label: true, label_text: label }));
    case 'multi-label-classification':
      return request.examples.map(({ text, labels }) => ({ text, label: labels.length > 0, label_text: JSON.stringify(labels) }));
  }
}

/** The training options a job keeps from its request (see {@link storedTrainRequest}). */
export function storedTrainingOptions(request: TrainRequest): Record<string, unknown> {
  return {
    finetune: request.finetune,
    num_iterations: request.num_iterations,
    truncate: request.truncate,
    validation: request.validation,
    unlabeled: request.unlabeled,
    ...(request.task_type === 'binary-classification' ? {} : { class_weight: request.class_weight }),
  };
}

/** What the model record's label_text holds: a binary model's label_text, else its label names as JSON. */
export function storedLabelText(request: TrainRequest): string {
  return request.task_type === 'binary-classification' ? request.examples[0].label_text : JSON.stringify(labelNames(request));
}

/** A multi-class or multi-label model's label names from its record's label_text; null for a binary model. */
export function storedLabels(taskType: TaskType, labelText: string): string[] | null {
  return taskType === 'binary-classification' ? null : (JSON.parse(labelText) as string[]);
}

/**
 * The train request a stored job stands for: its examples as stored, and the options the job
 * kept (`finetune`, `num_iterations`, `truncate`, `class_weight`, `validation`, `unlabeled`). The runtime validates it again.
 */
export function storedTrainRequest(
  baseModel: string,
  taskType: TaskType,
  examples: readonly TrainingExample[],
  options: Record<string, unknown>,
): TrainRequest {
  const { finetune, num_iterations, truncate, class_weight, validation, unlabeled } = options;
  const common = { model: baseModel, finetune, num_iterations, truncate, unlabeled } as Pick<
    TrainRequest,
    'model' | 'finetune' | 'num_iterations' | 'truncate' | 'unlabeled'
  >;
  switch (taskType) {
    case 'binary-classification':
      return {
        ...common,
        task_type: taskType,
        examples: examples.map(({ text, label, label_text }) => ({ text, label, label_text })),
        ...(validation === undefined ? {} : { validation: validation as { text: string; label: boolean; label_text: string }[] }),
      };
    case 'multi-class-classification':
      return {
        ...common,
        task_type: taskType,
        examples: examples.map(({ text, label_text }) => ({ text, label: label_text })),
        ...(class_weight === undefined ? {} : { class_weight: 'balanced' }),
        ...(validation === undefined ? {} : { validation: validation as { text: string; label: string }[] }),
      };
    case 'multi-label-classification':
      return {
        ...common,
        task_type: taskType,
        examples: examples.map(({ text, label_text }) => ({ text, labels: JSON.parse(label_text) as string[] })),
        ...(class_weight === undefined ? {} : { class_weight: 'balanced' }),
        ...(validation === undefined ? {} : { validation: validation as { text: string; labels: string[] }[] }),
      };
  }
}

/**
 * A train body checked as the service accepts it: the schema's checks, the work it asks for (413 past
 * `kMaxTrainTokens`), then with `truncate: 'none'` every text measured by the tokenizer (400 naming the
 * first one too long), before a job exists.
 */
export async function acceptTrainRequest(body: unknown): Promise<TrainRequest> {
  const request = validateTrainRequest(body);
  checkTrainRequestWork(request, resolveBaseModel(request.model).maxLength);
  await checkRequestFits(request);
  return request;
}
