// A classifier's versions for the service: naming one (`<id>` is the live version, `<id>@<n>` version n), adding one
// from a train request, promoting, deleting, and their objects. The store keeps each version as a model row of its
// own (see store/types.ts ModelVersions), so the job runner trains a version as it trains any model.
import { trainingDataOf } from './teacher-training.js';
import { SvcError } from '../errors.js';
import type { ModelObject } from '../contract/schemas.js';
import { type DeletedVersion, parseModelName, promoteRequestSchema, type VersionList, type VersionObject } from '../contract/versions.js';
import { parseRequest } from '../parse.js';
import type { Store, VersionRecord } from '../store/types.js';
import { acceptTrainRequest, storedExamples, storedLabelText, storedTrainingOptions } from './examples.js';
import type { JobRunner } from './jobs.js';
import { limitRejection, queueLimits, type ResolvedOrgLimits } from './limits.js';
import type { ModelObjects } from './model-object.js';
import type { ModelRuntime } from './runtime.js';

/** Who is calling: the organization of the service's `Principal`. */
export interface Caller {
  orgId: string;
}

const kModelIdPattern = /^[a-z0-9-]+-[0-9a-f]{12}$/;
const seconds = (ms: number) => Math.floor(ms / 1000);

/** "not found" for another organization's model too: a key must not learn which ids exist. */
export const modelNotFound = (id: string, param = 'model') =>
  new SvcError('not_found', `The model '${id}' does not exist or is not visible to this API key`, { param });

export interface ClassifierVersionsDeps {
  store: Store;
  runtime: ModelRuntime;
  jobs: JobRunner;
  models: ModelObjects;
  /** The organization's limits (queue cap, storage quotas), as the service resolves them. */
  orgLimits: (orgId: string) => Promise<ResolvedOrgLimits>;
}

/**
 * The versions of the caller's classifiers. Every method answers another organization's classifier, an unknown one
 * and a malformed name alike: 404.
 */
export class ClassifierVersions {
  readonly #deps: ClassifierVersionsDeps;

  constructor(deps: ClassifierVersionsDeps) {
    this.#deps = deps;
  }

  /** The classifier's versions, oldest first (version 1 first); 404 naming `param` for an unknown one. */
  async all(caller: Caller, id: string, param = 'model'): Promise<VersionRecord[]> {
    const versions = kModelIdPattern.test(id) ? await this.#deps.store.versions.list(id) : [];
    if (versions.length === 0 || versions[0].orgId !== caller.orgId) throw modelNotFound(id, param);
    return versions;
  }

  /** The version a model name stands for: the live one for `<id>`, version n for `<id>@<n>`. */
  async resolve(caller: Caller, name: string, param = 'model'): Promise<VersionRecord> {
    const parsed = parseModelName(name);
    if (parsed === null) {
      throw new SvcError(
        'invalid_request',
        `'${name}' names no version: use <model_id>, or <model_id>@<n> with n a version number from 1`,
        {
          param,
        },
      );
    }
    const versions = await this.all(caller, parsed.id);
    const found = versions.find((v) => (parsed.version === null ? v.live : v.version === parsed.version));
    if (found === undefined) {
      const known = versions.map((v) => v.version).join(', ');
      throw new SvcError('not_found', `The model '${parsed.id}' has no version ${parsed.version} (its versions: ${known})`, { param });
    }
    return found;
  }

  /**
   * Queues the next version of a classifier from a train request (the body `POST /v2/train` takes): same base model,
   * task type and labels as the classifier, else 400 naming the difference. The new version is not live until promoted.
   */
  async add(caller: Caller, id: string, body: unknown, options: Record<string, unknown> = {}): Promise<VersionObject> {
    const first = (await this.all(caller, id))[0];
    const request = await acceptTrainRequest(body);
    // `POST /v2/train` with model_id comes here too; a body sent to the versions route may repeat the id, not name another.
    if (request.model_id !== undefined && request.model_id !== id) {
      throw new SvcError('invalid_request', `model_id '${request.model_id}' is not the model '${id}' this request adds a version to`, {
        param: 'model_id',
      });
    }
    const mismatch = (field: string, what: string, theirs: string, ours: string) =>
      new SvcError('invalid_request', `A new version of '${id}' must have its ${what} (${ours}); got ${theirs}`, { param: field });
    if (request.task_type !== first.taskType) throw mismatch('task_type', 'task type', request.task_type, first.taskType);
    if (request.model !== first.baseModel) throw mismatch('model', 'base model', request.model, first.baseModel);
    const labelText = storedLabelText(request);
    if (labelText !== first.labelText) {
      throw request.task_type === 'binary-classification'
        ? mismatch('examples', 'label_text', `'${labelText}'`, `'${first.labelText}'`)
        : mismatch('examples', 'label set', labelText, first.labelText);
    }
    const now = Date.now();
    const limits = await this.#deps.orgLimits(caller.orgId);
    // The store counts the quotas and the queue under the classifier's lock: nothing is stored when refused.
    const { version, queued, quota } = await this.#deps.store.versions.add(
      id,
      {
        orgId: caller.orgId,
        baseModel: first.baseModel,
        taskType: first.taskType,
        labelText,
        status: 'training',
        error: null,
        createdAt: now,
        updatedAt: now,
      },
      storedExamples(request),
      { ...options, ...storedTrainingOptions(request) },
      queueLimits(limits),
    );
    if (quota !== undefined) throw limitRejection({ kind: 'quota', orgId: caller.orgId, modelId: id, refusal: quota });
    if (version === null) {
      // queued -1: the classifier was deleted meanwhile.
      throw queued < 0 ? modelNotFound(id) : limitRejection({ kind: 'jobs', orgId: caller.orgId, queued, limit: limits.maxQueuedJobs });
    }
    this.#deps.jobs.kick();
    return this.object(version);
  }

  async list(caller: Caller, id: string): Promise<VersionList> {
    const versions = await this.all(caller, id);
    return {
      object: 'list',
      model: id,
      live_version: versions.find((v) => v.live)!.version,
      data: await Promise.all(versions.map((v) => this.object(v))),
    };
  }

  /**
   * Makes a trained version live (`body`: `{ version }`, as `POST /v2/models/{id}/promote` takes it); promoting an
   * older one is the rollback. 409 for a version in training or failed.
   */
  async promote(caller: Caller, id: string, body: unknown): Promise<VersionObject> {
    await this.all(caller, id);
    const { version } = parseRequest(promoteRequestSchema, body);
    const outcome = await this.#deps.store.versions.promote(id, version);
    const versions = await this.all(caller, id);
    const found = versions.find((v) => v.version === version);
    if (outcome === 'not_found' || found === undefined) throw this.#noVersion(id, version, versions);
    if (outcome === 'not_trained') {
      throw new SvcError('conflict', `Version ${version} of '${id}' is ${found.status}; only a trained version can be promoted`, {
        param: 'version',
      });
    }
    return this.object(found);
  }

  /**
   * Deletes a version: its row, job, examples and hub copy. The live version stays (promote another first), and so
   * does version 1, which holds the classifier itself (deleting the classifier removes every version).
   */
  async remove(caller: Caller, id: string, version: number): Promise<DeletedVersion> {
    const versions = await this.all(caller, id);
    const found = versions.find((v) => v.version === version);
    const outcome = await this.#deps.store.versions.remove(id, version);
    if (outcome === 'not_found' || found === undefined) throw this.#noVersion(id, version, versions);
    if (outcome === 'live') {
      throw new SvcError('conflict', `Version ${version} of '${id}' is live; promote another version before deleting it`, {
        param: 'version',
      });
    }
    if (outcome === 'first') {
      throw new SvcError(
        'conflict',
        `Version 1 holds the model '${id}' itself; delete the model (DELETE /v2/models/${id}) to remove all its versions`,
        { param: 'version' },
      );
    }
    await this.forget([found]);
    return { id: `${id}@${version}`, object: 'model.version', deleted: true };
  }

  /** After their rows went: stops their jobs, drops their cached metrics and removes their hub copies. */
  async forget(versions: readonly VersionRecord[]): Promise<void> {
    for (const v of versions) {
      this.#deps.models.forget(v);
      await this.#deps.jobs.cancel(v.id);
      await this.#deps.runtime.remove(v.orgId, v.id);
    }
  }

  /** The version object: its name for predict, its place, times and (trained) metrics. */
  async object(v: VersionRecord): Promise<VersionObject> {
    const { metrics, error } = await this.#deps.models.object(v);
    return {
      id: `${v.classifierId}@${v.version}`,
      object: 'model.version',
      model: v.classifierId,
      version: v.version,
      live: v.live,
      status: v.status,
      created_at: seconds(v.createdAt),
      finished_at: v.status === 'training' ? null : seconds(v.updatedAt),
      ...(metrics === undefined ? {} : { metrics }),
      ...(error === undefined ? {} : { error }),
    };
  }

  /**
   * The model object of a classifier (its live version's status and metrics) or, named `<id>@<n>`, of one version:
   * with that version's number and the live one's.
   */
  async modelObject(name: string, v: VersionRecord, classifierCreatedAt: number, liveVersion: number): Promise<ModelObject> {
    const object = await this.#deps.models.object(v);
    const trainingData = await trainingDataOf(this.#deps.store, v.id, await this.#deps.store.getJob(v.id));
    return {
      ...object,
      ...(trainingData === null ? {} : { training_data: trainingData }),
      id: name,
      created_at: seconds(name.includes('@') ? v.createdAt : classifierCreatedAt),
      version: v.version,
      live_version: liveVersion,
    };
  }

  #noVersion(id: string, version: number, versions: readonly VersionRecord[]): SvcError {
    const known = versions.map((v) => v.version).join(', ');
    return new SvcError('not_found', `The model '${id}' has no version ${version} (its versions: ${known})`, { param: 'version' });
  }
}
