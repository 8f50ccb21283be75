import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import type Database from 'better-sqlite3';

import { migrate } from './migrations.js';
import { loadSqlite } from './sqlite-driver.js';
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
import { SqliteJobQueue } from './sqlite-job-queue.js';
import { SqliteProxyLedger } from './sqlite-proxy-ledger.js';
import { SqliteRequestLog } from './sqlite-request-log.js';
import { SqliteShadows } from './sqlite-shadows.js';
import { SqliteVersions } from './sqlite-versions.js';
import { SqliteTeacherTexts } from './sqlite-teacher-texts.js';
import { SqliteBaseModels } from './sqlite-base-models.js';
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

/** The database file inside a data directory. */
export const kDatabaseFile = 'svc.sqlite';

/**
 * The Store on one SQLite file (`<dataDir>/svc.sqlite`) in WAL mode, so that
 * `svc` operator commands can write while `svc serve` reads. Every statement is
 * prepared once. Calls are synchronous underneath (each is well under a
 * millisecond) and async in the interface for stores that are not.
 *
 * @example
 * ```ts
 * const store = SqliteStore.open('./svc-data');
 * await store.createOrganization('acme'); // { id: 'acme', createdAt: 1763790000000, proxyAccess: false }
 * await store.close();
 * ```
 */
export class SqliteStore implements Store {
  /** One process runs jobs from a data directory: `svc serve` holds its lock (`service/data-lock.ts`). */
  readonly shared = false;
  /** Token reservations against project budgets, and the per-project count of request-log body bytes. */
  readonly proxyLedger: SqliteProxyLedger;
  readonly versions: SqliteVersions;
  readonly shadows: SqliteShadows;
  readonly teacherTexts: SqliteTeacherTexts;
  readonly baseModels: SqliteBaseModels;
  readonly #db: Database.Database;
  readonly #sql;
  /** The training jobs (sqlite-job-queue.ts) and the request log (sqlite-request-log.ts): the Store's methods forward. */
  readonly #jobs: SqliteJobQueue;
  readonly #log: SqliteRequestLog;

  private constructor(db: Database.Database) {
    this.#db = db;
    this.proxyLedger = new SqliteProxyLedger(db);
    this.teacherTexts = new SqliteTeacherTexts(db);
    this.baseModels = new SqliteBaseModels(db);
    this.#jobs = new SqliteJobQueue(db);
    this.#log = new SqliteRequestLog(db, this.proxyLedger);
    this.shadows = new SqliteShadows(db);
    const p = (sql: string) => db.prepare(sql);
    this.#sql = {
      insertOrg: p('INSERT INTO organizations (id, created_at, proxy_access) VALUES (?, ?, 0)'),
      getOrg: p('SELECT * FROM organizations WHERE id = ?'),
      listOrgs: p('SELECT * FROM organizations ORDER BY created_at, id'),
      setProxy: p('UPDATE organizations SET proxy_access = ? WHERE id = ?'),
      getLimits: p(`SELECT ${kLimitsColumns} FROM org_limits WHERE org_id = ?`),
      putLimits: p(putLimitsSql(() => '?')),
      insertKey: p('INSERT INTO api_keys (id, org_id, hash, prefix, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)'),
      keyByHash: p('SELECT * FROM api_keys WHERE hash = ?'),
      listKeys: p('SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, id'),
      revokeKey: p('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?'),
      insertProject: p('INSERT INTO projects (id, org_id, name, created_at) VALUES (?, ?, ?, ?)'),
      getProject: p('SELECT * FROM projects WHERE id = ?'),
      listProjects: p('SELECT * FROM projects WHERE org_id = ? ORDER BY created_at, id'),
      setBudget: p('UPDATE projects SET monthly_token_budget = ? WHERE id = ?'),
      getModel: p('SELECT * FROM models WHERE id = ?'),
      listModels: p('SELECT * FROM models WHERE org_id = ? AND classifier_id IS NULL ORDER BY created_at, id'),
      deleteModel: p('DELETE FROM models WHERE id = ?'),
    };
    this.versions = new SqliteVersions(db, (m, examples, options, limit, classifierId) =>
      this.#jobs.queueModel(m, examples, options, limit, classifierId),
    );
  }

  /** Opens (creating if needed) the store in `dataDir` and migrates it to the newest schema. */
  static open(dataDir: string): SqliteStore {
    mkdirSync(dataDir, { recursive: true });
    const db = new (loadSqlite())(join(dataDir, kDatabaseFile));
    // A CLI write and the server's job runner may meet, and so may two processes opening a fresh directory:
    // wait instead of failing with SQLITE_BUSY. Set first, so that switching to WAL waits too.
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    migrate(db);
    return new SqliteStore(db);
  }

  /** The schema version the file is at. */
  schemaVersion(): number {
    return (this.#db.prepare('SELECT version FROM schema_version').get() as { version: number }).version;
  }

  async createOrganization(id: string): Promise<Organization> {
    const now = Date.now();
    this.#sql.insertOrg.run(id, now);
    return { id, createdAt: now, proxyAccess: false };
  }

  async getOrganization(id: string): Promise<Organization | null> {
    const row = this.#sql.getOrg.get(id) as OrgRow | undefined;
    return row === undefined ? null : toOrg(row);
  }

  async listOrganizations(): Promise<Organization[]> {
    return (this.#sql.listOrgs.all() as OrgRow[]).map(toOrg);
  }

  async setProxyAccess(orgId: string, granted: boolean): Promise<void> {
    this.#sql.setProxy.run(granted ? 1 : 0, orgId);
  }

  async getOrgLimits(orgId: string): Promise<OrgLimits> {
    return toLimits(this.#sql.getLimits.get(orgId) as LimitsRow | undefined);
  }

  async setOrgLimits(orgId: string, limits: Partial<OrgLimits>): Promise<void> {
    this.#db
      .transaction(() => {
        const merged = { ...toLimits(this.#sql.getLimits.get(orgId) as LimitsRow | undefined), ...limits };
        this.#sql.putLimits.run(orgId, ...limitsParams(merged));
      })
      .immediate();
  }

  async insertApiKey(r: ApiKeyRecord): Promise<void> {
    this.#sql.insertKey.run(r.id, r.orgId, r.hash, r.prefix, r.createdAt, r.revokedAt);
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | null> {
    const row = this.#sql.keyByHash.get(hash) as KeyRow | undefined;
    return row === undefined ? null : toKey(row);
  }

  async listApiKeys(orgId: string): Promise<ApiKeyRecord[]> {
    return (this.#sql.listKeys.all(orgId) as KeyRow[]).map(toKey);
  }

  async revokeApiKey(keyId: string, at: Millis): Promise<boolean> {
    return this.#sql.revokeKey.run(at, keyId).changes > 0;
  }

  async createProject(p: Project): Promise<void> {
    this.#sql.insertProject.run(p.id, p.orgId, p.name, p.createdAt);
    if (p.monthlyTokenBudget !== null) this.#sql.setBudget.run(p.monthlyTokenBudget, p.id);
  }

  async setProjectBudget(projectId: string, monthlyTokens: number | null): Promise<void> {
    this.#sql.setBudget.run(monthlyTokens, projectId);
  }

  async getProject(id: string): Promise<Project | null> {
    const row = this.#sql.getProject.get(id) as ProjectRow | undefined;
    return row === undefined ? null : toProject(row);
  }

  async listProjects(orgId: string): Promise<Project[]> {
    return (this.#sql.listProjects.all(orgId) as ProjectRow[]).map(toProject);
  }

  async getModel(id: string): Promise<ModelRecord | null> {
    const row = this.#sql.getModel.get(id) as ModelRow | undefined;
    return row === undefined ? null : toModel(row);
  }

  async listModels(orgId: string): Promise<ModelRecord[]> {
    return (this.#sql.listModels.all(orgId) as ModelRow[]).map(toModel);
  }

  async deleteModel(id: string): Promise<boolean> {
    // The job and its examples go with it, and its later versions with theirs (ON DELETE CASCADE).
    return this.#sql.deleteModel.run(id).changes > 0;
  }

  // Training jobs: sqlite-job-queue.ts.

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

  // The proxy's request log: sqlite-request-log.ts.

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
    if (this.#db.open) this.#db.close();
  }
}
