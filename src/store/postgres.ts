import type pg from 'pg';

import { PostgresRequestCounter } from './postgres-counts.js';
import { PostgresJobQueue } from './postgres-job-queue.js';
import { inTransaction, openMigratedPool } from './postgres-migrations.js';
import { PostgresProxyLedger } from './postgres-proxy-ledger.js';
import { lockOrganization, queryOne, queryRows } from './postgres-query.js';
import { PostgresRequestLog } from './postgres-request-log.js';
import { PostgresVersions } from './postgres-versions.js';
import { PostgresShadows } from './postgres-shadows.js';
import { PostgresTeacherTexts } from './postgres-teacher-texts.js';
import { PostgresBaseModels } from './postgres-base-models.js';
import type { RequestLogWrite } from './proxy-ledger.js';
import {
  type KeyRow,
  type LimitsRow,
  type ModelRow,
  type OrgRow,
  type ProjectRow,
  kLimitsColumns,
  limitsParams,
  putLimitsSql,
  toKey,
  toLimits,
  toModel,
  toOrg,
  toProject,
} from './rows.js';
import type {
  ApiKeyRecord,
  JobState,
  Millis,
  ModelRecord,
  ModelStatus,
  OrgLimits,
  Organization,
  Project,
  QueueLimits,
  QueuedJob,
  RequestLogPage,
  RequestLogRange,
  RequestLogRow,
  JobClaim,
  JobLease,
  JobProgress,
  Store,
  TrainingExample,
  TrainingJob,
} from './types.js';

/** Connections per replica: a few requests and the job runner at once; PostgreSQL's default cap is 100 in all. */
const kPoolSize = 10;

/** The statements, one table as in the SQLite store; `$n` placeholders. */
const kSql = Object.freeze({
  insertOrg: 'INSERT INTO organizations (id, created_at, proxy_access) VALUES ($1, $2, 0)',
  getOrg: 'SELECT * FROM organizations WHERE id = $1',
  listOrgs: 'SELECT * FROM organizations ORDER BY created_at, id',
  setProxy: 'UPDATE organizations SET proxy_access = $1 WHERE id = $2',
  getLimits: `SELECT ${kLimitsColumns} FROM org_limits WHERE org_id = $1`,
  putLimits: putLimitsSql((i) => `$${i}`),
  insertKey: 'INSERT INTO api_keys (id, org_id, hash, prefix, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6)',
  keyByHash: 'SELECT * FROM api_keys WHERE hash = $1',
  listKeys: 'SELECT * FROM api_keys WHERE org_id = $1 ORDER BY created_at, id',
  revokeKey: 'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2',
  insertProject: 'INSERT INTO projects (id, org_id, name, created_at, monthly_token_budget) VALUES ($1, $2, $3, $4, $5)',
  getProject: 'SELECT * FROM projects WHERE id = $1',
  listProjects: 'SELECT * FROM projects WHERE org_id = $1 ORDER BY created_at, id',
  setBudget: 'UPDATE projects SET monthly_token_budget = $1 WHERE id = $2',
  getModel: 'SELECT * FROM models WHERE id = $1',
  listModels: 'SELECT * FROM models WHERE org_id = $1 AND classifier_id IS NULL ORDER BY created_at, id',
  deleteModel: 'DELETE FROM models WHERE id = $1',
});

/**
 * The Store on a PostgreSQL database that several `svc serve` replicas share. Writes that must see the queue
 * as it is (queue caps, claims) lock the organization's row first, so replicas take turns per organization and
 * never per database.
 *
 * @example
 * ```ts
 * const store = await PostgresStore.open('postgres://svc@db.internal/svc');
 * await store.createOrganization('acme'); // { id: 'acme', createdAt: 1763790000000, proxyAccess: false }
 * await store.close();
 * ```
 */
export class PostgresStore implements Store {
  /** Every replica on the database runs jobs from it. */
  readonly shared = true;
  /** The request limits count here, so that they hold across replicas. */
  readonly requestCounter: PostgresRequestCounter;
  /** Token reservations against project budgets, and the per-project count of request-log body bytes. */
  readonly proxyLedger: PostgresProxyLedger;
  readonly versions: PostgresVersions;
  readonly shadows: PostgresShadows;
  readonly teacherTexts: PostgresTeacherTexts;
  readonly baseModels: PostgresBaseModels;
  readonly #pool: pg.Pool;
  /** The training jobs (postgres-job-queue.ts) and the request log (postgres-request-log.ts): the Store's methods forward. */
  readonly #jobs: PostgresJobQueue;
  readonly #log: PostgresRequestLog;

  private constructor(pool: pg.Pool) {
    this.#pool = pool;
    this.proxyLedger = new PostgresProxyLedger(pool);
    this.teacherTexts = new PostgresTeacherTexts(pool);
    this.baseModels = new PostgresBaseModels(pool);
    this.requestCounter = new PostgresRequestCounter(pool);
    this.#jobs = new PostgresJobQueue(pool);
    this.#log = new PostgresRequestLog(pool, this.proxyLedger);
    this.shadows = new PostgresShadows(pool);
    this.versions = new PostgresVersions(pool, (client, m, examples, options, limit, classifierId) =>
      this.#jobs.queueModel(client, m, examples, options, limit, classifierId),
    );
  }

  /** Connects to `url` and migrates the database to the newest schema (one replica at a time). */
  static async open(url: string): Promise<PostgresStore> {
    const pool = await openMigratedPool(url, kPoolSize);
    return new PostgresStore(pool);
  }

  /** The schema version the database is at. */
  async schemaVersion(): Promise<number> {
    return (await queryOne<{ version: number }>(this.#pool, 'SELECT version FROM schema_version', []))!.version;
  }

  async createOrganization(id: string): Promise<Organization> {
    const now = Date.now();
    await this.#pool.query(kSql.insertOrg, [id, now]);
    return { id, createdAt: now, proxyAccess: false };
  }

  async getOrganization(id: string): Promise<Organization | null> {
    const row = await queryOne<OrgRow>(this.#pool, kSql.getOrg, [id]);
    return row === undefined ? null : toOrg(row);
  }

  async listOrganizations(): Promise<Organization[]> {
    return (await queryRows<OrgRow>(this.#pool, kSql.listOrgs, [])).map(toOrg);
  }

  async setProxyAccess(orgId: string, granted: boolean): Promise<void> {
    await this.#pool.query(kSql.setProxy, [granted ? 1 : 0, orgId]);
  }

  async getOrgLimits(orgId: string): Promise<OrgLimits> {
    return toLimits(await queryOne<LimitsRow>(this.#pool, kSql.getLimits, [orgId]));
  }

  async setOrgLimits(orgId: string, limits: Partial<OrgLimits>): Promise<void> {
    await inTransaction(this.#pool, async (client) => {
      // The organization's row lock orders two operators' changes; a missing organization fails on the insert.
      await lockOrganization(client, orgId);
      const merged = { ...toLimits(await queryOne<LimitsRow>(client, kSql.getLimits, [orgId])), ...limits };
      await client.query(kSql.putLimits, [orgId, ...limitsParams(merged)]);
    });
  }

  async insertApiKey(r: ApiKeyRecord): Promise<void> {
    await this.#pool.query(kSql.insertKey, [r.id, r.orgId, r.hash, r.prefix, r.createdAt, r.revokedAt]);
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | null> {
    const row = await queryOne<KeyRow>(this.#pool, kSql.keyByHash, [hash]);
    return row === undefined ? null : toKey(row);
  }

  async listApiKeys(orgId: string): Promise<ApiKeyRecord[]> {
    return (await queryRows<KeyRow>(this.#pool, kSql.listKeys, [orgId])).map(toKey);
  }

  async revokeApiKey(keyId: string, at: Millis): Promise<boolean> {
    return ((await this.#pool.query(kSql.revokeKey, [at, keyId])).rowCount ?? 0) > 0;
  }

  async createProject(p: Project): Promise<void> {
    await this.#pool.query(kSql.insertProject, [p.id, p.orgId, p.name, p.createdAt, p.monthlyTokenBudget]);
  }

  async setProjectBudget(projectId: string, monthlyTokens: number | null): Promise<void> {
    await this.#pool.query(kSql.setBudget, [monthlyTokens, projectId]);
  }

  async getProject(id: string): Promise<Project | null> {
    const row = await queryOne<ProjectRow>(this.#pool, kSql.getProject, [id]);
    return row === undefined ? null : toProject(row);
  }

  async listProjects(orgId: string): Promise<Project[]> {
    return (await queryRows<ProjectRow>(this.#pool, kSql.listProjects, [orgId])).map(toProject);
  }

  async getModel(id: string): Promise<ModelRecord | null> {
    const row = await queryOne<ModelRow>(this.#pool, kSql.getModel, [id]);
    return row === undefined ? null : toModel(row);
  }

  async listModels(orgId: string): Promise<ModelRecord[]> {
    return (await queryRows<ModelRow>(this.#pool, kSql.listModels, [orgId])).map(toModel);
  }

  async deleteModel(id: string): Promise<boolean> {
    // The job and its examples go with it, and its later versions with theirs (ON DELETE CASCADE).
    return ((await this.#pool.query(kSql.deleteModel, [id])).rowCount ?? 0) > 0;
  }

  // Training jobs: postgres-job-queue.ts.

  createModelWithJob(
    m: ModelRecord,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: QueueLimits,
  ): Promise<QueuedJob> {
    return this.#jobs.createModelWithJob(m, examples, options, limit);
  }

  setModelStatus(id: string, status: ModelStatus, error: string | null, at: Millis): Promise<void> {
    return this.#jobs.setModelStatus(id, status, error, at);
  }

  getJob(modelId: string): Promise<TrainingJob | null> {
    return this.#jobs.getJob(modelId);
  }

  getJobExamples(modelId: string): Promise<TrainingExample[]> {
    return this.#jobs.getJobExamples(modelId);
  }

  setJobState(modelId: string, state: JobState, at: Millis): Promise<void> {
    return this.#jobs.setJobState(modelId, state, at);
  }

  claimNextJob(at: Millis, claim: JobClaim): Promise<TrainingJob | null> {
    return this.#jobs.claimNextJob(at, claim);
  }

  renewLease(modelId: string, lease: JobLease, until: Millis): Promise<boolean> {
    return this.#jobs.renewLease(modelId, lease, until);
  }

  recordJobProgress(modelId: string, lease: JobLease, progress: JobProgress): Promise<boolean> {
    return this.#jobs.recordJobProgress(modelId, lease, progress);
  }

  getJobProgress(modelId: string): Promise<JobProgress | null> {
    return this.#jobs.getJobProgress(modelId);
  }

  requeueInterruptedJobs(at: Millis): Promise<number> {
    return this.#jobs.requeueInterruptedJobs(at);
  }

  releaseJob(modelId: string, lease: JobLease, at: Millis): Promise<void> {
    return this.#jobs.releaseJob(modelId, lease, at);
  }

  finishJob(modelId: string, lease: JobLease, at: Millis, failure: string | null): Promise<boolean> {
    return this.#jobs.finishJob(modelId, lease, at, failure);
  }

  countJobs(): Promise<Record<JobState, number>> {
    return this.#jobs.countJobs();
  }

  // The proxy's request log: postgres-request-log.ts.

  insertRequestLog(r: Omit<RequestLogRow, 'id'>, write: RequestLogWrite = {}): Promise<number> {
    return this.#log.insertRequestLog(r, write);
  }

  getProjectUsage(projectId: string, month: string): Promise<number> {
    return this.#log.getProjectUsage(projectId, month);
  }

  listRequestLog(projectId: string, options: { limit: number; before?: number }): Promise<RequestLogRow[]> {
    return this.#log.listRequestLog(projectId, options);
  }

  listRequestLogPreviews(
    projectId: string,
    options: { limit: number; before?: number; previewChars: number; maxBodyBytes: number },
  ): Promise<RequestLogPage> {
    return this.#log.listRequestLogPreviews(projectId, options);
  }

  readRequestLogRange(projectId: string, range: RequestLogRange): Promise<RequestLogRow[]> {
    return this.#log.readRequestLogRange(projectId, range);
  }

  getRequestLog(projectId: string, id: number): Promise<RequestLogRow | null> {
    return this.#log.getRequestLog(projectId, id);
  }

  listRequestLogProjects(): Promise<string[]> {
    return this.#log.listRequestLogProjects();
  }

  pruneRequestLog(projectId: string, options: { olderThan: Millis; keepNewest: number; limit: number }): Promise<number> {
    return this.#log.pruneRequestLog(projectId, options);
  }

  async close(): Promise<void> {
    if (!this.#pool.ended) await this.#pool.end();
  }
}
