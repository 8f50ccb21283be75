/**
 * The Store: everything the service persists. SQLite (better-sqlite3, one process) is the embedded default;
 * PostgreSQL (`pg`) is the store several replicas share. Both pass one contract suite (test/store/contract.ts).
 * `store/` knows no HTTP; `service/` reaches the data only through this interface (its one SQL statement takes the
 * data directory's lock, service/data-lock.ts, a file no store opens).
 */

import type { RequestLogWrite, TokenLedger } from './proxy-ledger.js';
import type { ShadowStore } from './shadow-types.js';
import type { TeacherTexts } from './teacher-texts.js';
import type { BaseModelLedger } from './base-model-ledger.js';

/** Unix milliseconds. The HTTP contracts convert to seconds where they say so. */
export type Millis = number;

export interface Organization {
  /** A slug chosen by the operator, e.g. `acme`; also the hub namespace (`acme/<model_id>`). */
  id: string;
  createdAt: Millis;
  /** Granted by the operator with `svc proxy grant --org <id>`. */
  proxyAccess: boolean;
}

export interface ApiKeyRecord {
  /** `key_<12 hex>`: safe to show and log; the secret itself is never stored. */
  id: string;
  orgId: string;
  /** SHA-256 of the full secret, hex. */
  hash: string;
  /** The first characters of the secret, shown in listings (`svc_1a2b…`). */
  prefix: string;
  createdAt: Millis;
  revokedAt: Millis | null;
}

export interface Project {
  /** `proj_<12 hex>`. */
  id: string;
  orgId: string;
  name: string;
  createdAt: Millis;
  /** Proxy tokens (input + output) the project may use per calendar month (UTC); null: no budget. */
  monthlyTokenBudget: number | null;
}

/**
 * An organization's limits as the operator set them (`svc orgs limits`); null means "the service's
 * default" (`kDefaultOrgLimits` in `service/limits.ts`), so changing a default reaches every
 * organization that did not set its own.
 */
export interface OrgLimits {
  /** Training jobs that may run at once. */
  maxRunningJobs: number | null;
  /** Training jobs that may wait in the queue. */
  maxQueuedJobs: number | null;
  /** Requests per minute per API key, on /v2 and on the proxy. */
  requestsPerMinute: number | null;
  /** Requests per minute of all the organization's keys together; null: as many as one key's `requestsPerMinute`. */
  orgRequestsPerMinute: number | null;
  /** Classifiers the organization may keep (each with its versions). */
  maxModels: number | null;
  /** Versions one classifier may keep, its first included. */
  maxVersionsPerModel: number | null;
  /** MiB the organization's versions may hold in all, as {@link storedBytes} (quotas.ts) counts them. */
  maxStorageMb: number | null;
}

/**
 * What queueing a model or a version checks in the transaction that stores it, so that two requests never both take
 * the last slot. Absent fields are not checked.
 */
export interface QueueLimits {
  /** Training jobs the organization may have queued. */
  maxQueuedJobs: number;
  /** Classifiers the organization may keep ({@link Store.createModelWithJob} only: a version adds none). */
  maxModels?: number;
  /** Versions a classifier may keep ({@link ModelVersions.add} only). */
  maxVersions?: number;
  /** Bytes the organization's model rows may hold in all, this one's {@link storedBytes} (quotas.ts) included. */
  maxStoredBytes?: number;
}

/** The quota that kept a model or version from being stored, with what the organization (or classifier) holds. */
export type QuotaRefusal =
  | { quota: 'models'; used: number; limit: number }
  | { quota: 'versions'; used: number; limit: number }
  /** `needed`: the bytes the refused request alone would have stored. */
  | { quota: 'storage'; used: number; needed: number; limit: number };

export type ModelStatus = 'training' | 'trained' | 'failed';

export interface ModelRecord {
  /** `svc-small-<12 hex>`. */
  id: string;
  orgId: string;
  baseModel: string;
  taskType: 'binary-classification' | 'multi-class-classification' | 'multi-label-classification';
  /** Binary models: what label true means. Multi-class and multi-label: their label names, as a JSON array. */
  labelText: string;
  status: ModelStatus;
  error: string | null;
  createdAt: Millis;
  updatedAt: Millis;
}

/**
 * One version of a classifier: the model row that holds it (its own job, examples and hub copy under `id`: the
 * classifier's id for version 1, `<classifier>.v<n>` after it) and where it stands in its classifier.
 */
export interface VersionRecord extends ModelRecord {
  /** The classifier's id (`svc-small-<12 hex>`): its first version's row. */
  classifierId: string;
  version: number;
  /** Predict answers `model: <classifierId>` with this version. */
  live: boolean;
}

/** What {@link ModelVersions.promote} did. */
export type PromoteOutcome = 'promoted' | 'not_trained' | 'not_found';
/** What {@link ModelVersions.remove} did: the live version and version 1 (the classifier's own row) stay. */
export type RemoveVersionOutcome = 'deleted' | 'live' | 'first' | 'not_found';

/**
 * A classifier's versions. Every change locks the classifier's row first, so that two replicas adding versions
 * take the next numbers one after the other, and a promote and a delete of the same version never both succeed.
 */
export interface ModelVersions {
  /**
   * Adds the next version of `classifierId` (status `training`, its job `queued`, its examples) in one transaction,
   * under the same queue cap and storage quota as {@link Store.createModelWithJob}, and `limit.maxVersions` counted
   * under the classifier's lock; `version` null when nothing was stored (a cap or quota, or no such classifier: then
   * `created` is false and `queued` is -1). The new version is not live.
   */
  add(
    classifierId: string,
    model: Omit<ModelRecord, 'id'>,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: QueueLimits,
  ): Promise<QueuedJob & { version: VersionRecord | null }>;
  /** The classifier's versions, oldest first; empty when there is no such classifier. */
  list(classifierId: string): Promise<VersionRecord[]>;
  /** Each of the organization's classifiers as its live version, in {@link Store.listModels}' order. */
  listLive(orgId: string): Promise<VersionRecord[]>;
  /** Makes a trained version the live one (rolling back is promoting an older one). */
  promote(classifierId: string, version: number): Promise<PromoteOutcome>;
  /** Deletes a version's row, job and examples (its hub copy is the caller's to remove). */
  remove(classifierId: string, version: number): Promise<RemoveVersionOutcome>;
}

/**
 * A stored example. Binary: as sent. Multi-class: label true, label_text the class. Multi-label:
 * label_text the labels as a JSON array, label whether there are any.
 */
export interface TrainingExample {
  text: string;
  label: boolean;
  label_text: string;
}

export type JobState = 'queued' | 'running' | 'done' | 'failed';

export interface TrainingJob {
  modelId: string;
  state: JobState;
  /** Times the job was started; a job found `running` at start-up was interrupted and runs again. */
  attempts: number;
  /** Training options as the user gave them (e.g. `{ finetune: false }`), JSON. */
  options: Record<string, unknown>;
  createdAt: Millis;
  updatedAt: Millis;
  /** The runner holding a running job (its {@link JobClaim.holder}); null unless `running`. */
  lockedBy: string | null;
  /** When the holder's lease ends unless its heartbeat renews it; past it, any runner may claim the job. */
  lockedUntil: Millis | null;
  /**
   * The token of the job's latest claim: each claim takes the next number (never reused, unlike `attempts`). A
   * holder's writes name it ({@link JobLease}), so that a runner whose lease lapsed cannot write once the job was
   * claimed again, even by a runner of the same name.
   */
  leaseToken: number;
}

/** A claim as its holder names it in every write about its job: refused once the job was claimed again. */
export interface JobLease {
  /** The claiming runner ({@link JobClaim.holder}). */
  holder: string;
  /** The claim's {@link TrainingJob.leaseToken}. */
  token: number;
}

/** Where a running job is: `done` of `total` units of its current stage (see the training's progress events). */
export interface JobProgress {
  stage: string;
  done: number;
  total: number;
  /** Fine-tuning only: the recent contrastive loss. */
  loss: number | null;
}

/** What a runner claims a job with. */
export interface JobClaim {
  /** Every organization's running cap unless it set its own. */
  maxRunningJobs: number;
  /** The claiming runner, unique across replicas and restarts (e.g. `host:pid:random`). */
  holder: string;
  /** How long the claim holds the job before the holder must renew it. */
  leaseMs: number;
}

/**
 * What {@link Store.createModelWithJob} did: `created` false means nothing was stored, because of `quota` when it
 * is present, else because the queue cap was reached.
 */
export interface QueuedJob {
  created: boolean;
  /** The organization's queued jobs after the call. */
  queued: number;
  /** The quota that refused the request (quotas are checked before the queue cap). */
  quota?: QuotaRefusal;
}

export type {
  ProviderName,
  RequestCount,
  RequestCounter,
  RequestLogPage,
  RequestLogPreview,
  RequestLogRange,
  RequestLogRow,
} from './request-log-types.js';
export { rowTokens, usageMonth } from './request-log-types.js';
import type { RequestCounter, RequestLogPage, RequestLogRange, RequestLogRow } from './request-log-types.js';

export interface Store {
  /**
   * True when other processes may run jobs from this store at the same time (PostgreSQL replicas): a runner then
   * leaves live leases alone at start-up and looks at the queue now and then for jobs that other replicas queued.
   */
  readonly shared: boolean;
  /** Request counts shared by every process on the store; absent (SQLite): each process counts in its memory. */
  readonly requestCounter?: RequestCounter;

  // organizations
  createOrganization(id: string): Promise<Organization>;
  getOrganization(id: string): Promise<Organization | null>;
  listOrganizations(): Promise<Organization[]>;
  setProxyAccess(orgId: string, granted: boolean): Promise<void>;
  /** All null when the operator set none. */
  getOrgLimits(orgId: string): Promise<OrgLimits>;
  /** Sets the fields present in `limits` (null clears one back to the default) and keeps the others. */
  setOrgLimits(orgId: string, limits: Partial<OrgLimits>): Promise<void>;

  // API keys
  insertApiKey(record: ApiKeyRecord): Promise<void>;
  findApiKeyByHash(hash: string): Promise<ApiKeyRecord | null>;
  listApiKeys(orgId: string): Promise<ApiKeyRecord[]>;
  /** Returns false when no such key exists. */
  revokeApiKey(keyId: string, at: Millis): Promise<boolean>;

  // projects
  createProject(project: Project): Promise<void>;
  getProject(id: string): Promise<Project | null>;
  listProjects(orgId: string): Promise<Project[]>;
  /** Null removes the budget. */
  setProjectBudget(projectId: string, monthlyTokens: number | null): Promise<void>;

  // models and their training jobs
  /**
   * Inserts the model (status `training`), its job (`queued`) and its examples in one transaction, the row charged
   * its {@link storedBytes} (quotas.ts). With `limit`, the organization's classifiers, stored bytes and queued jobs are counted
   * in the same transaction (under the organization's lock) and nothing is inserted when one would pass its limit:
   * the result says whether the job was queued, which quota refused it, and how many jobs are queued now.
   */
  createModelWithJob(
    model: ModelRecord,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: QueueLimits,
  ): Promise<QueuedJob>;
  getModel(id: string): Promise<ModelRecord | null>;
  /** The organization's classifiers (their first versions' rows; later versions are in {@link Store.versions}). */
  listModels(orgId: string): Promise<ModelRecord[]>;
  /** Classifiers' versions and which one is live. */
  readonly versions: ModelVersions;
  /** What a teacher answered for each text of a job (teacher-texts.ts). */
  readonly teacherTexts: TeacherTexts;
  /** The base models replicas registered, name -> fingerprint (base-model-ledger.ts). */
  readonly baseModels: BaseModelLedger;
  setModelStatus(id: string, status: ModelStatus, error: string | null, at: Millis): Promise<void>;
  deleteModel(id: string): Promise<boolean>;
  getJob(modelId: string): Promise<TrainingJob | null>;
  getJobExamples(modelId: string): Promise<TrainingExample[]>;
  setJobState(modelId: string, state: JobState, at: Millis): Promise<void>;
  /**
   * The fair choice, made and marked in one atomic step (PostgreSQL: `FOR UPDATE SKIP LOCKED`): among organizations
   * with a claimable job and fewer live running jobs than their cap (their own `maxRunningJobs`, else
   * `claim.maxRunningJobs`), the one whose last job started longest ago (never first), and its oldest claimable job.
   * A job is claimable when queued, or running under a lease that ended before `at` (its holder died). That job
   * is marked running, held by `claim.holder` until `at + claim.leaseMs`, attempts + 1, and returned; null when
   * no job may start. Taking turns by last start is round robin by organization that any number of runners share.
   */
  claimNextJob(at: Millis, claim: JobClaim): Promise<TrainingJob | null>;
  /**
   * The holder's heartbeat: extends its lease on a running job to `until`. False when the job is no longer its
   * own (the model was deleted, or the lease ended and another claim took the job): the holder stops. A lease that
   * ended but was not claimed again is still the holder's.
   */
  renewLease(modelId: string, lease: JobLease, until: Millis): Promise<boolean>;
  /**
   * Records the progress of a running job that `holder` holds (written at most about once a second by the holder).
   * False, and nothing written, when the job is no longer the holder's. A claim, a requeue and a release clear it:
   * each attempt starts over.
   */
  recordJobProgress(modelId: string, lease: JobLease, progress: JobProgress): Promise<boolean>;
  /** The progress last recorded for a model's job (its final one once the job ended), or null. */
  getJobProgress(modelId: string): Promise<JobProgress | null>;
  /**
   * Puts running jobs whose lease ended before `at` back in the queue, in their original place; returns how many.
   * A runner that alone uses the store (see {@link Store.shared}) passes a moment past every lease at start-up.
   */
  requeueInterruptedJobs(at: Millis): Promise<number>;
  /**
   * Puts one running job that `holder` holds back in the queue without counting its start: a clean shutdown
   * stopped it, so it should not count towards the crash limit. A job another runner took over stays its.
   */
  releaseJob(modelId: string, lease: JobLease, at: Millis): Promise<void>;
  /**
   * Ends a job `holder` still holds, and its model with it, in one transaction: `failure` null marks the job
   * `done` and the model `trained`; a reason marks both `failed`. False, and nothing written, when the job is no
   * longer the holder's (the model was deleted, or another runner took the job over after the lease ended).
   */
  finishJob(modelId: string, lease: JobLease, at: Millis, failure: string | null): Promise<boolean>;
  /** How many jobs are in each state (every state present, 0 when none). */
  countJobs(): Promise<Record<JobState, number>>;

  // proxy request log
  /**
   * Inserts the row and, in the same transaction, adds its tokens ({@link rowTokens}) to the project's usage for
   * the month of `createdAt` ({@link usageMonth}), gives back `write.reservationId`, and counts the row's body bytes
   * against `write.maxProjectBodyBytes` (see {@link RequestLogWrite}).
   */
  insertRequestLog(row: Omit<RequestLogRow, 'id'>, write?: RequestLogWrite): Promise<number>;
  /** Token reservations against project budgets, atomic across replicas (see {@link TokenLedger}). */
  readonly proxyLedger: TokenLedger;
  /** Proxy tokens the project used in `month` (`YYYY-MM`, UTC); 0 when none. Pruning the log does not lower it. */
  getProjectUsage(projectId: string, month: string): Promise<number>;
  /** Newest first; `before` is an exclusive row id cursor. */
  listRequestLog(projectId: string, options: { limit: number; before?: number }): Promise<RequestLogRow[]>;
  /**
   * A page as {@link Store.listRequestLog} lists it, each body cut to its first `previewChars` characters by the
   * database, and the page ended early (`more`) before the row whose bodies would take the bodies read past
   * `maxBodyBytes` (at least one row is read): a page reads a bounded part of the log's bodies, however large they are,
   * and the body sizes come from the row headers without reading the bodies.
   */
  listRequestLogPreviews(
    projectId: string,
    options: { limit: number; before?: number; previewChars: number; maxBodyBytes: number },
  ): Promise<RequestLogPage>;
  /**
   * A batch of the project's rows with a 2xx status and their whole bodies, oldest first: those with an id above
   * `afterId` (a cursor: the last id of the previous batch), created at or after `since` and before `until`, of the
   * proxied `model` as the client sent it (prefix included) when one is named; at most `limit`. Training from the
   * request log reads with it (service/log-training.ts).
   */
  readRequestLogRange(projectId: string, options: RequestLogRange): Promise<RequestLogRow[]>;
  /** One row of the project's log with its whole bodies; null when the project has no row of that id. */
  getRequestLog(projectId: string, id: number): Promise<RequestLogRow | null>;
  /** Projects that have request-log rows. */
  listRequestLogProjects(): Promise<string[]>;
  /**
   * Deletes up to `limit` of the project's rows that are created before `olderThan` or are not among its
   * `keepNewest` newest; returns how many went. Retention calls it again while it returns `limit`, so no one
   * statement holds the write lock for long.
   */
  pruneRequestLog(projectId: string, options: { olderThan: Millis; keepNewest: number; limit: number }): Promise<number>;

  /** Shadow classifiers: each project's settings and the compared calls, pruned with their log rows (shadow-types.ts). */
  readonly shadows: ShadowStore;

  close(): Promise<void>;
}
