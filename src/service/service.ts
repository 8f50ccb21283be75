import type { HubFileReader } from '../model/hub.js';
import { SvcError } from '../errors.js';
import {
  type ApiKeyRecord,
  type ModelRecord,
  type OrgLimits,
  type Organization,
  type Project,
  type Store,
  usageMonth,
} from '../store/types.js';
import { checkOrgLimits, limitRejection, resolveOrgLimits, type ResolvedOrgLimits } from './limits.js';
import { JobRunner, type JobRunnerOptions } from './jobs.js';
import { pruneRequestLog, resolveRetention, RetentionTimer, type RetentionOptions } from './retention.js';
import { hashApiKey, kKeyShownPrefix, newApiKey, newId } from './keys.js';
import type { ModelRuntime, RuntimePrediction } from './runtime.js';
import { acceptTrainRequest, storedExamples, storedLabelText, storedTrainingOptions } from './examples.js';
import { ClassifierVersions, modelNotFound } from './versions.js';
import { VersionEvaluations } from './evaluation.js';
import { ModelObjects, toModelObject } from './model-object.js';
import type { ClassPrediction, LabelSetPrediction } from '../predict/classifier.js';
import { classifyForOrg } from './classify.js';
import { parseRequest } from '../parse.js';
import {
  predictRequestSchema,
  type ClassifyResponseBody,
  type DeletedModel,
  type ModelList,
  type ModelObject,
  type PredictResponse,
  type ProgressObject,
  type ProxyModelObject,
} from '../contract/schemas.js';

/** Who is calling: the organization and the key used (the key id is safe to log). */
export interface Principal {
  orgId: string;
  keyId: string;
}

export interface CreatedApiKey {
  id: string;
  orgId: string;
  /** The secret: shown once, never stored. */
  key: string;
  createdAt: number;
}

export interface SvcServiceOptions {
  store: Store;
  runtime: ModelRuntime;
  /** Proxy models listed to organizations with proxy access, e.g. `['provider-a:gpt-4o-mini']`. */
  proxyModels?: readonly string[];
  jobs?: JobRunnerOptions;
  /** Request-log retention, pruned in the background from `start()` (hourly by default); `false`: never. */
  retention?: (RetentionOptions & { intervalMs?: number }) | false;
}

const kOrgPattern = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** A JSON object body (a train body with `model_id` goes to the classifier's versions). */
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const kBearer = /^Bearer\s+(\S+)\s*$/i;

/**
 * The /v2 semantics without HTTP: organizations, API keys, projects, proxy
 * grants, models and their training jobs. Every call that acts for a client
 * takes the `Principal` that `authenticate` returned, and only ever sees that
 * organization's records (another organization's model is "not found").
 *
 * @example
 * ```ts
 * const service = new SvcService({ store: SqliteStore.open('./svc-data'), runtime });
 * await service.createOrganization('acme');
 * const { key } = await service.createApiKey('acme');  // 'svc_4Hk0…' (shown once)
 * const who = await service.authenticate(`Bearer ${key}`); // { orgId: 'acme', keyId: 'key_3f1c0a9b2e7d' }
 * ```
 */
export class SvcService {
  readonly store: Store;
  readonly runtime: ModelRuntime;
  readonly proxyModels: readonly string[];
  readonly #jobs: JobRunner;
  readonly #retention: RetentionTimer | null;
  readonly #models: ModelObjects;
  /** The versions of the caller's classifiers: list, add, promote, delete (`/v2/models/{id}/versions`). */
  readonly versions: ClassifierVersions;
  /** Evaluation reports of the caller's versions on their validation sets (`/v2/models/{id}/evaluation`). */
  readonly evaluations: VersionEvaluations;

  constructor(options: SvcServiceOptions) {
    this.store = options.store;
    this.runtime = options.runtime;
    this.proxyModels = Object.freeze([...(options.proxyModels ?? [])]);
    this.#jobs = new JobRunner(options.store, options.runtime, options.jobs);
    this.#models = new ModelObjects(options.runtime);
    this.versions = new ClassifierVersions({
      store: this.store,
      runtime: this.runtime,
      jobs: this.#jobs,
      models: this.#models,
      maxQueuedJobs: async (orgId) => (await this.orgLimits(orgId)).maxQueuedJobs,
    });
    this.evaluations = new VersionEvaluations(this.store, this.runtime, this.versions);
    const retention = options.retention ?? {};
    this.#retention = retention === false ? null : new RetentionTimer(options.store, resolveRetention(retention), retention.intervalMs);
  }

  /** Starts the job runner (requeueing jobs a previous process left running) and the request-log retention. */
  async start(): Promise<void> {
    await this.#jobs.start();
    this.#retention?.start();
  }

  /** Resolves when no training job is running or queued. */
  idle(): Promise<void> {
    return this.#jobs.idle();
  }

  /** Stops training (jobs stay queued for the next start) and closes the runtime and the store. */
  async close(): Promise<void> {
    await this.#retention?.stop();
    await this.#jobs.close();
    await this.runtime.close();
    await this.store.close();
  }

  // ---- operator: organizations, keys, projects, proxy grants -------------------------------

  async createOrganization(id: string): Promise<Organization> {
    if (!kOrgPattern.test(id)) {
      throw new SvcError(
        'invalid_request',
        `Organization names are 1-63 lowercase letters, digits and dashes, starting with a letter or digit; got '${id}'`,
        { param: 'name' },
      );
    }
    if ((await this.store.getOrganization(id)) !== null) {
      throw new SvcError('conflict', `The organization '${id}' already exists`, { param: 'name' });
    }
    return this.store.createOrganization(id);
  }

  async #requireOrg(orgId: string): Promise<Organization> {
    const org = await this.store.getOrganization(orgId);
    if (org === null) throw new SvcError('not_found', `The organization '${orgId}' does not exist`, { param: 'org' });
    return org;
  }

  /** Makes a key for the organization. The secret is in the result only; the store keeps its hash. */
  async createApiKey(orgId: string): Promise<CreatedApiKey> {
    await this.#requireOrg(orgId);
    const key = newApiKey();
    const record: ApiKeyRecord = {
      id: newId('key_'),
      orgId,
      hash: hashApiKey(key),
      prefix: key.slice(0, kKeyShownPrefix),
      createdAt: Date.now(),
      revokedAt: null,
    };
    await this.store.insertApiKey(record);
    return { id: record.id, orgId, key, createdAt: record.createdAt };
  }

  async revokeApiKey(keyId: string): Promise<void> {
    if (!(await this.store.revokeApiKey(keyId, Date.now()))) {
      throw new SvcError('not_found', `The API key '${keyId}' does not exist`, { param: 'key' });
    }
  }

  async createProject(orgId: string, name: string): Promise<Project> {
    await this.#requireOrg(orgId);
    if (name.trim().length === 0) throw new SvcError('invalid_request', 'The project name must not be empty', { param: 'name' });
    const project: Project = { id: newId('proj_'), orgId, name, createdAt: Date.now(), monthlyTokenBudget: null };
    await this.store.createProject(project);
    return project;
  }

  async setProxyAccess(orgId: string, granted: boolean): Promise<void> {
    await this.#requireOrg(orgId);
    await this.store.setProxyAccess(orgId, granted);
  }

  /** The organization's limits, defaults filled in. */
  async orgLimits(orgId: string): Promise<ResolvedOrgLimits> {
    return resolveOrgLimits(await this.store.getOrgLimits(orgId));
  }

  /** Sets some of an organization's limits (null: back to the default); returns all of them resolved. */
  async setOrgLimits(orgId: string, limits: Partial<OrgLimits>): Promise<ResolvedOrgLimits> {
    await this.#requireOrg(orgId);
    await this.store.setOrgLimits(orgId, checkOrgLimits(limits));
    return this.orgLimits(orgId);
  }

  /** Sets a project's monthly proxy token budget (input + output tokens; null: none). */
  async setProjectBudget(projectId: string, monthlyTokens: number | null): Promise<Project> {
    const project = await this.store.getProject(projectId);
    if (project === null) throw new SvcError('not_found', `The project '${projectId}' does not exist`, { param: 'project' });
    if (monthlyTokens !== null && (!Number.isSafeInteger(monthlyTokens) || monthlyTokens < 0)) {
      throw new SvcError('invalid_request', `The budget must be a whole number of tokens >= 0; got ${monthlyTokens}`, {
        param: 'tokens',
      });
    }
    await this.store.setProjectBudget(projectId, monthlyTokens);
    return { ...project, monthlyTokenBudget: monthlyTokens };
  }

  /** Prunes the proxy request log now (defaults: 30 days, 100,000 rows per project); returns how many rows went. */
  async pruneRequestLog(options: RetentionOptions = {}): Promise<number> {
    return pruneRequestLog(this.store, resolveRetention(options));
  }

  // ---- callers: authentication and the lookups the proxy needs --------------------------------

  /**
   * Resolves an `Authorization` header value (`Bearer svc_…`) or a bare key to
   * its organization and key id. Missing, unknown and revoked keys throw
   * `SvcError('authentication')` (HTTP 401).
   */
  async authenticate(authorizationHeaderOrKey: string | undefined | null): Promise<Principal> {
    const raw = (authorizationHeaderOrKey ?? '').trim();
    if (raw.length === 0) {
      throw new SvcError('authentication', "Missing API key: send it as 'Authorization: Bearer <key>'");
    }
    // `Bearer ` with nothing after it is a missing key too, not a wrong one.
    if (/^Bearer$/i.test(raw)) {
      throw new SvcError('authentication', "Missing API key: send it as 'Authorization: Bearer <key>'");
    }
    const key = kBearer.exec(raw)?.[1] ?? raw;
    const record = await this.store.findApiKeyByHash(hashApiKey(key));
    if (record === null) throw new SvcError('authentication', 'Invalid API key');
    if (record.revokedAt !== null) throw new SvcError('authentication', 'This API key has been revoked');
    return { orgId: record.orgId, keyId: record.id };
  }

  /** The project if it exists (any organization), else null. */
  getProject(projectId: string): Promise<Project | null> {
    return this.store.getProject(projectId);
  }

  async hasProxyAccess(orgId: string): Promise<boolean> {
    return (await this.store.getOrganization(orgId))?.proxyAccess ?? false;
  }

  /**
   * The check in front of every proxied call: the project exists and
   * belongs to the caller's organization (else 404, alike), that organization has been
   * granted proxy access (else 403), and the project has tokens left this month (else 403 budget_exceeded).
   */
  async authorizeProxy(principal: Principal, projectId: string): Promise<Project> {
    const project = await this.ownProject(principal, projectId);
    if (!(await this.hasProxyAccess(principal.orgId))) {
      throw new SvcError('permission', `The organization '${principal.orgId}' has no proxy access; request access from the operator`);
    }
    await this.#checkBudget(project);
    return project;
  }

  /**
   * A project whose calls this calendar month (UTC) used its whole budget gets no more until the month ends.
   * The check comes before the call and the count after it, so calls already under way may take a project past
   * its budget; none starts once it is spent.
   */
  async #checkBudget(project: Project): Promise<void> {
    const budget = project.monthlyTokenBudget;
    if (budget === null) return;
    const month = usageMonth(Date.now());
    const used = await this.store.getProjectUsage(project.id, month);
    if (used >= budget) throw limitRejection({ kind: 'budget', projectId: project.id, month, budget, used });
  }

  /** The project when the caller's organization owns it; 404 when it does not exist or another organization owns it. */
  async ownProject(principal: Principal, projectId: string): Promise<Project> {
    const project = await this.store.getProject(projectId);
    if (project === null) {
      throw new SvcError('not_found', `The project '${projectId}' does not exist`, { param: 'project_id' });
    }
    // Another organization's project reads as an unknown one: a key must not learn which ids exist.
    if (project.orgId !== principal.orgId) {
      throw new SvcError('not_found', `The project '${projectId}' does not exist`, { param: 'project_id' });
    }
    return project;
  }

  // ---- models ------------------------------------------------------------------------------

  /**
   * Parses `body` with `trainRequestSchema`, stores the job and its examples and returns the model with
   * `status: "training"`: a new classifier (version 1, live), or with `model_id` the next version of that classifier
   * (`<id>@<n>`, not live until promoted; the rules and errors of `versions.add`).
   */
  async train(principal: Principal, body: unknown, options: Record<string, unknown> = {}): Promise<ModelObject> {
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
    const { maxQueuedJobs } = await this.orgLimits(principal.orgId);
    const { created, queued } = await this.store.createModelWithJob(record, examples, { ...options, ...training }, { maxQueuedJobs });
    if (!created) {
      throw limitRejection({ kind: 'jobs', orgId: principal.orgId, queued, limit: maxQueuedJobs });
    }
    this.#jobs.kick();
    return { ...toModelObject(record), version: 1, live_version: 1 };
  }

  /** `train` with `model_id`: the next version of that classifier, as its model object `<id>@<n>`. */
  async #trainVersion(principal: Principal, body: Record<string, unknown>, options: Record<string, unknown>): Promise<ModelObject> {
    const id = body.model_id;
    // Not a string: the schema says what is wrong with it.
    if (typeof id !== 'string') await acceptTrainRequest(body);
    const named = id as string;
    if (named.includes('@')) {
      throw new SvcError('invalid_request', `model_id names a classifier, not a version: use '${named.slice(0, named.lastIndexOf('@'))}'`, {
        param: 'model_id',
      });
    }
    await this.versions.all(principal, named, 'model_id');
    const added = await this.versions.add(principal, named, body, options);
    return this.getModel(principal, added.id);
  }

  /** A classifier (its live version's status and metrics), or one version of it named `<id>@<n>`. */
  async getModel(principal: Principal, name: string): Promise<ModelObject> {
    const version = await this.versions.resolve(principal, name);
    const versions = await this.versions.all(principal, version.classifierId);
    return this.versions.modelObject(name, version, versions[0].createdAt, versions.find((v) => v.live)!.version);
  }

  /**
   * Training progress of one of the caller's models. A trained model reports the stage it ended
   * in with `done === total` (`stage: 'done', done: 1, total: 1` when it was trained before this
   * process started); a model that has not started yet, or failed, reports `stage: null`.
   */
  async getProgress(principal: Principal, name: string): Promise<ProgressObject> {
    const record = await this.versions.resolve(principal, name);
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

  /** The models that accept requests (live version trained), then the proxy models when the organization may use the proxy. */
  async listModels(principal: Principal): Promise<ModelList> {
    const classifiers = await this.store.listModels(principal.orgId);
    const live = new Map((await this.store.versions.listLive(principal.orgId)).map((v) => [v.classifierId, v]));
    const trained = classifiers.filter((c) => live.get(c.id)?.status === 'trained');
    const own = await Promise.all(
      trained.map((c) => this.versions.modelObject(c.id, live.get(c.id)!, c.createdAt, live.get(c.id)!.version)),
    );
    const proxy: ProxyModelObject[] = (await this.hasProxyAccess(principal.orgId))
      ? this.proxyModels.map((id) => ({ id, object: 'model', created_at: 0, owned_by: id.slice(0, id.indexOf(':')) }))
      : [];
    return { object: 'list', data: [...own, ...proxy] };
  }

  /**
   * Parses `body` with the predict schema (the same one `POST /v2/predict` documents) and classifies its inputs.
   * `signal` aborts the call (the HTTP client went away): its texts not in a batch yet are dropped.
   */
  async predict(principal: Principal, body: unknown, options: { signal?: AbortSignal } = {}): Promise<PredictResponse> {
    const request = parseRequest(predictRequestSchema, body);
    // `<id>` is the live version, `<id>@<n>` version n; `record.id` is where that version's files are.
    const record = await this.versions.resolve(principal, request.model);
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
    const extras = { truncate: request.truncate, explain: request.explain, paramOf: (t: number) => `inputs[${t}]` };
    const predictions = await this.runtime.predict(record.orgId, record.id, request.inputs, {
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

  /** `POST /v2/classify`: the inputs labelled by the examples sent with them; the organization's turn in the predict batcher. */
  classify(principal: Principal, body: unknown, options: { signal?: AbortSignal } = {}): Promise<ClassifyResponseBody> {
    return classifyForOrg(principal.orgId, body, options);
  }

  /** Removes the model with every version: their jobs and examples, and their hub copies; running jobs are stopped first. */
  async deleteModel(principal: Principal, modelId: string): Promise<DeletedModel> {
    const versions = await this.versions.all(principal, modelId);
    await this.store.deleteModel(modelId);
    await this.versions.forget(versions);
    return { id: modelId, object: 'model', deleted: true };
  }

  /**
   * Where one of the caller's trained versions keeps its files (`<id>`: the live one; `<id>@<n>`: version n); anything
   * else is "not found", so names do not leak.
   */
  async #hubVisible(principal: Principal, orgId: string, name: string): Promise<string> {
    const hidden = modelNotFound(`${orgId}/${name}`);
    if (orgId !== principal.orgId) throw hidden;
    const record = await this.versions.resolve(principal, name).catch(() => {
      throw hidden;
    });
    if (record.status !== 'trained') throw hidden;
    return record.id;
  }

  /** The file behind `GET /hub/<org>/<model_id>/resolve/<revision>/<file>` (`name` with the revision's `@<n>`). */
  async hubFile(principal: Principal, orgId: string, name: string, file: string): Promise<HubFileReader> {
    const stored = await this.#hubVisible(principal, orgId, name);
    return this.runtime.hubFile(orgId, stored, file).catch((error: unknown) => {
      if (!(error instanceof SvcError) || error.code !== 'not_found') throw error;
      throw new SvcError('not_found', `The file '${file}' does not exist in ${orgId}/${name}`, { param: 'file' });
    });
  }

  /** The files of a model version in the hub, as `/`-separated paths relative to its directory, sorted. */
  async hubFiles(principal: Principal, orgId: string, name: string): Promise<string[]> {
    return this.runtime.hubFiles(orgId, await this.#hubVisible(principal, orgId, name));
  }
}

export { toModelObject } from './model-object.js';
