import type { HubFileReader } from '../model/hub.js';
import type { ClassPrediction, LabelSetPrediction, PredictOptions } from '../predict/classifier.js';
import type { TaskType } from '../contract/train-request.js';
import type { TrainProgress } from '../train/train.js';
import type { TrainingExample } from '../store/types.js';

/** What the job runner hands a training run: progress out, cancellation and the publishing fence in. */
export interface RuntimeTrainHooks {
  onProgress?: (p: TrainProgress) => void;
  signal?: AbortSignal;
  /** Resolves while the job is still the runner's to publish; rejects (and nothing may be written) once it is not. */
  fence?: () => Promise<void>;
  /**
   * The job's evaluation report, made once the model is ready and before the fence, with a scorer of the new model:
   * a JSON value written beside the model's files as {@link kEvaluationFile} and published with them (null: no file).
   */
  evaluate?: (score: ModelScorer) => Promise<unknown>;
}

/** The file of a model's files that holds its stored evaluation report (service/evaluation-file.ts). */
export const kEvaluationFile = 'evaluation.json';

/**
 * Predicts texts as training work (see {@link ModelRuntime.score}): one prediction per text, in order, as predict's
 * defaults give them (`truncated` not measured).
 */
export type ModelScorer = (texts: string[]) => Promise<AnyRuntimePrediction[]>;

/** One training job as the runtime sees it. */
export interface RuntimeTrainJob {
  orgId: string;
  modelId: string;
  /** Base model name, e.g. `svc-small`. */
  baseModel: string;
  taskType: TaskType;
  /** As the store keeps them (see service/examples.ts for the multi-class and multi-label forms). */
  examples: TrainingExample[];
  /** The job's stored options: `finetune`, `num_iterations`, `class_weight` and `validation` as the request gave them. */
  options: Record<string, unknown>;
}

export interface RuntimePrediction {
  label: boolean;
  probability: number;
  /** The text was longer than the base model reads; only its start was scored. */
  truncated: boolean;
}

/** What a runtime predicts per text: a binary model's, a multi-class model's or a multi-label model's prediction. */
export type AnyRuntimePrediction = RuntimePrediction | ClassPrediction | LabelSetPrediction;

/**
 * Options of {@link ModelRuntime.predict}: a multi-label model's `threshold`, `truncate` and `explain`
 * as the library takes them (`paramOf` names the request's `inputs[t]` in their errors), and the
 * `signal` that aborts the call (the client went away: the texts not run yet are dropped).
 */
export type RuntimePredictOptions = Pick<PredictOptions, 'threshold' | 'signal' | 'truncate' | 'explain' | 'paramOf' | 'parsed'>;

/**
 * The model runtime the service drives: the only place that knows how models
 * are trained, stored in the hub and run. `library-runtime.ts` implements it
 * with svc-classify's own `train` / `Classifier`; the service never imports
 * the library directly, so this seam is the whole wiring.
 */
export interface ModelRuntime {
  /**
   * Trains the job and writes the model directory to the hub at `<org>/<model_id>`. With `hooks.fence`, it is awaited
   * once the model is ready and before any of it is written to the hub (a folder or PostgreSQL): when it rejects
   * (the job runner lost the job), training rejects with that reason and the hub is left as it was.
   */
  train(job: RuntimeTrainJob, hooks: RuntimeTrainHooks): Promise<void>;
  /** Runs a trained model; one prediction per text, in order. */
  predict(orgId: string, modelId: string, texts: string[], options?: RuntimePredictOptions): Promise<AnyRuntimePrediction[]>;
  /**
   * Runs a trained model as training work, for an evaluation report: on training's share of the workers, outside
   * predict's admission and deadline, however many texts; the same predictions as `predict` with its defaults.
   */
  score(orgId: string, modelId: string, texts: string[], options?: { signal?: AbortSignal }): Promise<AnyRuntimePrediction[]>;
  /** Forgets the model: unloads it and removes its hub directory. Missing models are not an error. */
  remove(orgId: string, modelId: string): Promise<void>;
  /** The hub directory of a model on this machine (it may not exist: with a database, a cache entry). */
  modelDir(orgId: string, modelId: string): string;
  /** The model's files in the hub, sorted; rejects with `SvcError('not_found')` when it has none. */
  hubFiles(orgId: string, modelId: string): Promise<string[]>;
  /** One of the model's files, streamed from the hub; rejects with `SvcError('not_found')`. */
  hubFile(orgId: string, modelId: string, name: string): Promise<HubFileReader>;
  /** How many training jobs may run at once: the pool's share for training (predictions keep the rest). */
  readonly trainingSlots: number;
  /**
   * How many jobs may run at once when the runtime shares its `trainingSlots` between them itself, task by task
   * (the library runtime: round robin by organization); left out, `trainingSlots` jobs run, each holding a slot.
   */
  readonly concurrentJobs?: number;
  close(): Promise<void>;
}
