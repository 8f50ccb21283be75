// The caller's models for the service: training a classifier (or its next version), reading one and its training
// progress, predicting with it, deleting it, and reading its files in the hub. Every method sees only the caller's
// organization's models; another organization's model is "not found". The documented entry points are SvcService's
// methods of the same names (service.ts), which forward here.
import type { HubFileReader } from '../model/hub.js';
import { SvcError } from '../errors.js';
import type { ModelRecord, Store, VersionRecord } from '../store/types.js';
import { publicHubFile } from './hub-manifest.js';
import { limitRejection, queueLimits, type ResolvedOrgLimits } from './limits.js';
import type { JobRunner } from './jobs.js';
import { newId } from './keys.js';
import type { ModelRuntime, RuntimePrediction } from './runtime.js';
import { acceptTrainRequest, storedExamples, storedLabelText, storedTrainingOptions } from './examples.js';
import { type Caller, type ClassifierVersions, modelNotFound } from './versions.js';
import { toModelObject } from './model-object.js';
import type { ClassPrediction, LabelSetPrediction } from '../predict/classifier.js';
import { parseRequest } from '../parse.js';
import {
  predictRequestSchema,
  type DeletedModel,
  type ModelObject,
  type PredictResponse,
  type ProgressObject,
} from '../contract/schemas.js';

export interface CallerModelsDeps {
  store: Store;
  runtime: ModelRuntime;
  jobs: JobRunner;
  versions: ClassifierVersions;
  /** The organization's limits (queue cap, storage quotas), as the service resolves them. */
  orgLimits: (orgId: string) => Promise<ResolvedOrgLimits>;
}

/** A JSON object body (a train body with `model_id` goes to the classifier's versions). */
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export class CallerModels {
  readonly #store: Store;
  readonly #runtime: ModelRuntime;
  readonly #jobs: JobRunner;
  readonly #versions: ClassifierVersions;
  readonly #orgLimits: (orgId: string) => Promise<ResolvedOrgLimits>;

  constructor(deps: CallerModelsDeps) {
    this.#store = deps.store;
    this.#runtime = deps.runtime;
    this.#jobs = deps.jobs;
    this.#versions = deps.versions;
    this.#orgLimits = deps.orgLimits;
  }

  /** `SvcService.train`: a new classifier (version 1, live), or with `model_id` that classifier's next version. */
  async train(principal: Caller, body: unknown, options: Record<string, unknown> = {}): Promise<ModelObject> {
    if (isObject(body) && body.model_id !== undefined) return this.#trainVersion(principal, body, options);
    const request = await acceptTrainRequest(body);
    const now = Date.now();
    const record: ModelRecord = {
      id: newId(`${request.model}-`),
      orgId: principal.orgId,
      baseModel: request.model,
      taskType: request.task_type,
      labelText: storedLabelText(request),
      status: 'training',
      error: null,
      createdAt: now,
      updatedAt: now,
    };
    const examples = storedExamples(request);
    const training = storedTrainingOptions(request);
    const limits = await this.#orgLimits(principal.orgId);
    // The store counts the quotas and the queue in the transaction that would insert: nothing is stored when refused.
    const { created, queued, quota } = await this.#store.createModelWithJob(
      record,
      examples,
      { ...options, ...training },
      queueLimits(limits),
    );
    if (quota !== undefined) throw limitRejection({ kind: 'quota', orgId: principal.orgId, modelId: null, refusal: quota });
    if (!created) {
      throw limitRejection({ kind: 'jobs', orgId: principal.orgId, queued, limit: limits.maxQueuedJobs });
    }
    this.#jobs.kick();
    return { ...toModelObject(record), version: 1, live_version: 1 };
  }

  /** `train` with `model_id`: the next version of that classifier, as its model object `<id>@<n>`. */
  async #trainVersion(principal: Caller, body: Record<string, unknown>, options: Record<string, unknown>): Promise<ModelObject> {
    const id = body.model_id;
    // Not a string: the schema says what is wrong with it.
    if (typeof id !== 'string') await acceptTrainRequest(body);
    const named = id as string;
    if (named.includes('@')) {
      throw new SvcError('invalid_request', `model_id names a classifier, not a version: use '${named.slice(0, named.lastIndexOf('@'))}'`, {
        param: 'model_id',
      });
    }
    await this.#versions.all(principal, named, 'model_id');
    const added = await this.#versions.add(principal, named, body, options);
    return this.getModel(principal, added.id);
  }

  /** `SvcService.getModel`: the classifier's live version, or the version named `<id>@<n>`. */
  async getModel(principal: Caller, name: string): Promise<ModelObject> {
    const version = await this.#versions.resolve(principal, name);
    const versions = await this.#versions.all(principal, version.classifierId);
    return this.#versions.modelObject(name, version, versions[0].createdAt, versions.find((v) => v.live)!.version);
  }

  /** `SvcService.getProgress`: the stage the model's job is in, or ended in. */
  async getProgress(principal: Caller, name: string): Promise<ProgressObject> {
    const record = await this.#versions.resolve(principal, name);
    // A failed job's last progress says nothing useful about the model: it reports no stage.
    const progress = record.status === 'failed' ? null : await this.#jobs.progress(record.id);
    const base = { object: 'training.progress' as const, model: name, status: record.status };
    if (record.status === 'trained') {
      const total = progress?.total ?? 1;
      return { ...base, stage: progress?.stage ?? 'done', done: total, total, loss: progress?.loss ?? null };
    }
    return {
      ...base,
      stage: progress?.stage ?? null,
      done: progress?.done ?? 0,
      total: progress?.total ?? 0,
      loss: progress?.loss ?? null,
    };
  }

  /** `SvcService.predict`: the body parsed with the predict schema, its inputs classified by a trained version. */
  async predict(principal: Caller, body: unknown, options: { signal?: AbortSignal } = {}): Promise<PredictResponse> {
    const request = parseRequest(predictRequestSchema, body);
    // `<id>` is the live version, `<id>@<n>` version n; `record.id` is where that version's files are.
    const record = await this.#versions.resolve(principal, request.model);
    const name = request.model;
    if (record.status === 'training') {
      throw new SvcError('conflict', `The model '${name}' is still training; retry when its status is 'trained'`, {
        param: 'model',
      });
    }
    if (record.status === 'failed') {
      throw new SvcError('conflict', `The model '${name}' failed to train: ${record.error}`, { param: 'model' });
    }
    if (request.threshold !== undefined && record.taskType !== 'multi-label-classification') {
      throw new SvcError('invalid_request', `threshold is only used by multi-label models; ${name} is ${record.taskType}`, {
        param: 'threshold',
      });
    }
    const threshold = request.threshold === undefined ? {} : { threshold: request.threshold };
    const extras = { truncate: request.truncate, explain: request.explain, parsed: true as const, paramOf: (t: number) => `inputs[${t}]` };
    const predictions = await this.#runtime.predict(record.orgId, record.id, request.inputs, {
      ...threshold,
      ...extras,
      signal: options.signal,
    });
    if (record.taskType === 'binary-classification') {
      return { model: name, label_text: record.labelText, predictions: predictions as RuntimePrediction[] };
    }
    if (record.taskType === 'multi-class-classification') {
      return { model: name, task_type: record.taskType, predictions: predictions as ClassPrediction[] };
    }
    return { model: name, task_type: record.taskType, predictions: predictions as LabelSetPrediction[] };
  }

  /** `SvcService.deleteModel`: the model with every version, their jobs, examples and hub copies. */
  async deleteModel(principal: Caller, modelId: string): Promise<DeletedModel> {
    const versions = await this.#versions.all(principal, modelId);
    await this.#store.deleteModel(modelId);
    await this.#versions.forget(versions);
    return { id: modelId, object: 'model', deleted: true };
  }

  /**
   * Where one of the caller's trained versions keeps its files (`<id>`: the live one; `<id>@<n>`: version n); anything
   * else is "not found", so names do not leak.
   */
  async #hubVisible(principal: Caller, orgId: string, name: string): Promise<VersionRecord> {
    const hidden = modelNotFound(`${orgId}/${name}`);
    if (orgId !== principal.orgId) throw hidden;
    const record = await this.#versions.resolve(principal, name).catch(() => {
      throw hidden;
    });
    if (record.status !== 'trained') throw hidden;
    return record;
  }

  /** `SvcService.hubFile`: one file of a visible version, 404 naming the file when it has no such file. */
  async hubFile(principal: Caller, orgId: string, name: string, file: string): Promise<HubFileReader> {
    const record = await this.#hubVisible(principal, orgId, name);
    const stored = await this.#runtime.hubFile(orgId, record.id, file).catch((error: unknown) => {
      if (!(error instanceof SvcError) || error.code !== 'not_found') throw error;
      throw new SvcError('not_found', `The file '${file}' does not exist in ${orgId}/${name}`, { param: 'file' });
    });
    return publicHubFile(stored, file, record);
  }

  /** `SvcService.hubFiles`: the files of a visible version. */
  async hubFiles(principal: Caller, orgId: string, name: string): Promise<string[]> {
    return this.#runtime.hubFiles(orgId, (await this.#hubVisible(principal, orgId, name)).id);
  }
}
