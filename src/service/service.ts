import type { HubFileReader } from '../model/hub.js';
import { SvcError } from '../errors.js';
import { type ApiKeyRecord, type OrgLimits, type Organization, type Project, type Store, usageMonth } from '../store/types.js';
import { checkOrgLimits, limitRejection, resolveOrgLimits, type ResolvedOrgLimits } from './limits.js';
import { JobRunner, type JobRunnerOptions } from './jobs.js';
import { storedLabels } from './examples.js';
import { runTeacherStage, type TeacherTransportFactory } from './teacher-stage.js';
import { trainWithTeacher } from './teacher-training.js';
import { asksForTeacher } from '../contract/teacher-request.js';
import { pruneRequestLog, resolveRetention, RetentionTimer, type RetentionOptions } from './retention.js';
import { hashApiKey, kKeyIdMessage, kKeyShownPrefix, looksLikeKeyId, newApiKey, newId } from './keys.js';
import type { ModelRuntime } from './runtime.js';
import { ClassifierVersions } from './versions.js';
import { VersionEvaluations } from './evaluation.js';
import { ModelObjects } from './model-object.js';
import { CallerModels } from './caller-models.js';
import { classifyForOrg } from './classify.js';
import { trainBodyFromLog } from './log-training.js';
import { asksForLog } from '../contract/log-source.js';
import { registeredBaseModels } from '../model/base-models.js';
import { agreeOnBaseModels } from './base-model-agreement.js';
import { type BaseModelDirs, registerBaseModels } from './base-model-options.js';
import {
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
  /**
   * Sentence-transformers folders to register as base models, by the name requests give as `model`
   * (`{ 'e5-small': '/models/e5-small-v2' }`): registered in the constructor (a bad folder throws, naming it), and
   * with every other base model of the process checked against the store in `start()` (docs/base-models.md).
   */
  baseModels?: BaseModelDirs;
}

const kOrgPattern = /^[a-z0-9][a-z0-9-]{0,62}$/;
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
  #teacherTransport: TeacherTransportFactory | null = null;
  readonly #retention: RetentionTimer | null;
  readonly #models: ModelObjects;
  readonly #callerModels: CallerModels;
  /** The versions of the caller's classifiers: list, add, promote, delete (`/v2/models/{id}/versions`). */
  readonly versions: ClassifierVersions;
  /** Evaluation reports of the caller's versions on their validation sets (`/v2/models/{id}/evaluation`). */
  readonly evaluations: VersionEvaluations;

  constructor(options: SvcServiceOptions) {
    this.store = options.store;
    this.runtime = options.runtime;
    this.proxyModels = Object.freeze([...(options.proxyModels ?? [])]);
    if (options.baseModels !== undefined) registerBaseModels(options.baseModels, 'options.baseModels');
    // A training job ends with its evaluation report (made by this.evaluations, set below before any job runs).
    this.#jobs = new JobRunner(
      options.store,
      options.runtime,
      options.jobs,
      (modelId, jobOptions, score) => this.evaluations.atTraining(modelId, jobOptions, score),
      // A job with a teacher labels its texts first (teacher-stage.ts), through the transport the proxy routes set.
      (job, hooks) =>
        job.options.teacher === undefined
          ? Promise.resolve(null)
          : runTeacherStage(
              this.store,
              this.#teacherTransport,
              {
                modelId: job.modelId,
                orgId: job.model.orgId,
                baseModel: job.model.baseModel,
                taskType: job.model.taskType,
                labels: storedLabels(job.model.taskType, job.model.labelText) ?? [job.model.labelText],
                examples: job.examples,
                options: job.options,
              },
              hooks,
            ),
    );
    this.#models = new ModelObjects(options.runtime);
    const orgLimits = (orgId: string) => this.orgLimits(orgId);
    this.versions = new ClassifierVersions({
      store: this.store,
      runtime: this.runtime,
      jobs: this.#jobs,
      models: this.#models,
      orgLimits,
    });
    this.evaluations = new VersionEvaluations(this.store, this.runtime, this.versions);
    this.#callerModels = new CallerModels({
      store: this.store,
      runtime: this.runtime,
      jobs: this.#jobs,
      versions: this.versions,
      orgLimits,
    });
    const retention = options.retention ?? {};
    this.#retention = retention === false ? null : new RetentionTimer(options.store, resolveRetention(retention), retention.intervalMs);
  }

  /**
   * Where the calls of jobs trained with a teacher go out: the proxy routes set it when they are registered (their
   * forwarding code logs, budgets and checks each call as a client's). Without it a request with a `teacher` is refused.
   */
  useTeacherTransport(factory: TeacherTransportFactory): void {
    this.#teacherTransport = factory;
  }

  /**
   * Records this process's registered base models in the store, refusing to start (an `invalid_request` naming both
   * fingerprints) when another replica registered one of the names on other files; then starts the job runner
   * (requeueing jobs a previous process left running) and the request-log retention.
   */
  async start(): Promise<void> {
    await agreeOnBaseModels(this.store, registeredBaseModels());
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
    await this.evaluations.close();
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
    // Said from the shape alone, before any lookup: the answer is the same whether such a key exists or not.
    if (looksLikeKeyId(key)) throw new SvcError('authentication', kKeyIdMessage);
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

  // ---- models: the caller's own, in caller-models.ts -----------------------------------------

  /**
   * Parses `body` with `trainRequestSchema`, stores the job and its examples and returns the model with
   * `status: "training"`: a new classifier (version 1, live), or with `model_id` the next version of that classifier
   * (`<id>@<n>`, not live until promoted; the rules and errors of `versions.add`).
   */
  train(principal: Principal, body: unknown, options: Record<string, unknown> = {}): Promise<ModelObject> {
    if (asksForTeacher(body)) {
      return trainWithTeacher(
        {
          store: this.store,
          jobs: this.#jobs,
          orgLimits: (orgId) => this.orgLimits(orgId),
          authorizeProxy: (caller, projectId) => this.authorizeProxy(caller, projectId),
          servesProxy: () => this.#teacherTransport !== null,
        },
        principal,
        body,
      );
    }
    if (asksForLog(body)) {
      const deps = { store: this.store, ownProject: (id: string) => this.ownProject(principal, id) };
      return trainBodyFromLog(deps, body).then((made) =>
        this.#callerModels.train(principal, made.body, { ...options, training_data: made.trainingData }),
      );
    }
    return this.#callerModels.train(principal, body, options);
  }

  /** A classifier (its live version's status and metrics), or one version of it named `<id>@<n>`. */
  getModel(principal: Principal, name: string): Promise<ModelObject> {
    return this.#callerModels.getModel(principal, name);
  }

  /**
   * Training progress of one of the caller's models. A trained model reports the stage it ended
   * in with `done === total` (`stage: 'done', done: 1, total: 1` when it was trained before this
   * process started); a model that has not started yet, or failed, reports `stage: null`.
   */
  getProgress(principal: Principal, name: string): Promise<ProgressObject> {
    return this.#callerModels.getProgress(principal, name);
  }

  /**
   * The organization's classifiers, each as its live version with its status (`training` and `failed` ones too, so
   * that a model just sent to training is listed at once), then the proxy models when the organization may use the proxy.
   */
  async listModels(principal: Principal): Promise<ModelList> {
    const classifiers = await this.store.listModels(principal.orgId);
    const live = new Map((await this.store.versions.listLive(principal.orgId)).map((v) => [v.classifierId, v]));
    const listed = classifiers.filter((c) => live.has(c.id));
    const own = await Promise.all(
      listed.map((c) => this.versions.modelObject(c.id, live.get(c.id)!, c.createdAt, live.get(c.id)!.version)),
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
  predict(principal: Principal, body: unknown, options: { signal?: AbortSignal } = {}): Promise<PredictResponse> {
    return this.#callerModels.predict(principal, body, options);
  }

  /** `POST /v2/classify`: the inputs labelled by the examples sent with them; the organization's turn in the predict batcher. */
  classify(principal: Principal, body: unknown, options: { signal?: AbortSignal } = {}): Promise<ClassifyResponseBody> {
    return classifyForOrg(principal.orgId, body, options);
  }

  /** Removes the model with every version: their jobs and examples, and their hub copies; running jobs are stopped first. */
  deleteModel(principal: Principal, modelId: string): Promise<DeletedModel> {
    return this.#callerModels.deleteModel(principal, modelId);
  }

  /** The file behind `GET /hub/<org>/<model_id>/resolve/<revision>/<file>` (`name` with the revision's `@<n>`). */
  hubFile(principal: Principal, orgId: string, name: string, file: string): Promise<HubFileReader> {
    return this.#callerModels.hubFile(principal, orgId, name, file);
  }

  /** The files of a model version in the hub, as `/`-separated paths relative to its directory, sorted. */
  hubFiles(principal: Principal, orgId: string, name: string): Promise<string[]> {
    return this.#callerModels.hubFiles(principal, orgId, name);
  }
}

export { toModelObject } from './model-object.js';
