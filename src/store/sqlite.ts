import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import type Database from 'better-sqlite3';

import { migrate } from './migrations.js';
import { loadSqlite } from './sqlite-driver.js';
import type { RequestLogWrite } from './proxy-ledger.js';
import { SqliteProxyLedger } from './sqlite-proxy-ledger.js';
import { SqliteVersions } from './sqlite-versions.js';
import {
  type ExampleRow,
  type JobRow,
  type KeyRow,
  type LimitsRow,
  type LogPreviewRow,
  type LogRow,
  type ModelRow,
  type OrgRow,
  type ProjectRow,
  logPageSql,
  toExample,
  toJob,
  toJobProgress,
  toKey,
  toLimits,
  toLog,
  toLogPage,
  toModel,
  toOrg,
  toProject,
  toProgressColumn,
} from './rows.js';
import { rowTokens, usageMonth } from './types.js';
import type {
  ApiKeyRecord,
  JobState,
  Millis,
  ModelRecord,
  ModelStatus,
  OrgLimits,
  Organization,
  Project,
  QueuedJob,
  RequestLogPage,
  RequestLogRow,
  JobClaim,
  JobLease,
  JobProgress,
  Store,
  TrainingExample,
  TrainingJob,
} from './types.js';

/**
 * One retention batch: a project's rows too old, or at or below the id of the newest row it no longer keeps.
 * Exported for the test that checks its query plan.
 */
export const kPruneLogSql = `DELETE FROM request_log WHERE id IN (
  SELECT id FROM request_log WHERE project_id = ? AND created_at < ?
  UNION SELECT id FROM request_log WHERE project_id = ? AND id <= ?
  LIMIT ?)`;

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
  readonly #db: Database.Database;
  readonly #sql;

  private constructor(db: Database.Database) {
    this.#db = db;
    this.proxyLedger = new SqliteProxyLedger(db);
    const p = (sql: string) => db.prepare(sql);
    this.#sql = {
      insertOrg: p('INSERT INTO organizations (id, created_at, proxy_access) VALUES (?, ?, 0)'),
      getOrg: p('SELECT * FROM organizations WHERE id = ?'),
      listOrgs: p('SELECT * FROM organizations ORDER BY created_at, id'),
      setProxy: p('UPDATE organizations SET proxy_access = ? WHERE id = ?'),
      getLimits: p(
        'SELECT max_running_jobs, max_queued_jobs, requests_per_minute, org_requests_per_minute FROM org_limits WHERE org_id = ?',
      ),
      putLimits: p(
        `INSERT INTO org_limits (org_id, max_running_jobs, max_queued_jobs, requests_per_minute, org_requests_per_minute) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (org_id) DO UPDATE SET max_running_jobs = excluded.max_running_jobs,
           max_queued_jobs = excluded.max_queued_jobs, requests_per_minute = excluded.requests_per_minute,
           org_requests_per_minute = excluded.org_requests_per_minute`,
      ),
      insertKey: p('INSERT INTO api_keys (id, org_id, hash, prefix, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)'),
      keyByHash: p('SELECT * FROM api_keys WHERE hash = ?'),
      listKeys: p('SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, id'),
      revokeKey: p('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?'),
      insertProject: p('INSERT INTO projects (id, org_id, name, created_at) VALUES (?, ?, ?, ?)'),
      getProject: p('SELECT * FROM projects WHERE id = ?'),
      listProjects: p('SELECT * FROM projects WHERE org_id = ? ORDER BY created_at, id'),
      setBudget: p('UPDATE projects SET monthly_token_budget = ? WHERE id = ?'),
      insertModel: p(
        `INSERT INTO models (id, org_id, base_model, task_type, label_text, status, error, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertJob: p(
        `INSERT INTO training_jobs (model_id, state, attempts, options, created_at, updated_at)
         VALUES (?, 'queued', 0, ?, ?, ?)`,
      ),
      insertExample: p('INSERT INTO training_examples (model_id, position, text, label, label_text) VALUES (?, ?, ?, ?, ?)'),
      getModel: p('SELECT * FROM models WHERE id = ?'),
      listModels: p('SELECT * FROM models WHERE org_id = ? AND classifier_id IS NULL ORDER BY created_at, id'),
      setModelStatus: p('UPDATE models SET status = ?, error = ?, updated_at = ? WHERE id = ?'),
      deleteModel: p('DELETE FROM models WHERE id = ?'),
      getJob: p('SELECT * FROM training_jobs WHERE model_id = ?'),
      examples: p('SELECT text, label, label_text FROM training_examples WHERE model_id = ? ORDER BY position'),
      setJobState: p('UPDATE training_jobs SET state = ?, updated_at = ?, locked_by = NULL, locked_until = NULL WHERE model_id = ?'),
      countQueued: p(
        "SELECT COUNT(*) AS n FROM training_jobs j JOIN models m ON m.id = j.model_id WHERE j.state = 'queued' AND m.org_id = ?",
      ),
      // Round robin by organization (the one served longest ago first), oldest job first within one, skipping
      // organizations at their running cap. A running job whose lease ended (no lease: left by a dead process)
      // neither counts towards the cap nor stays out of reach.
      nextFair: p(
        `SELECT j.*, m.org_id FROM training_jobs j
           JOIN models m ON m.id = j.model_id
           JOIN organizations o ON o.id = m.org_id
           LEFT JOIN org_limits l ON l.org_id = m.org_id
         WHERE (j.state = 'queued' OR (j.state = 'running' AND COALESCE(j.locked_until, 0) < @at))
           AND (SELECT COUNT(*) FROM training_jobs rj JOIN models rm ON rm.id = rj.model_id
                WHERE rj.state = 'running' AND COALESCE(rj.locked_until, 0) >= @at AND rm.org_id = m.org_id)
               < COALESCE(l.max_running_jobs, @cap)
         ORDER BY COALESCE(o.last_job_started_at, -1), j.seq
         LIMIT 1`,
      ),
      markOrgServed: p('UPDATE organizations SET last_job_started_at = ? WHERE id = ?'),
      markRunning: p(
        `UPDATE training_jobs SET state = 'running', attempts = attempts + 1, updated_at = ?, locked_by = ?, locked_until = ?,
           progress = NULL, lease_token = lease_token + 1 WHERE model_id = ?`,
      ),
      // A holder's writes: only while the job is running under its claim (its name and its claim's token).
      recordProgress: p(
        "UPDATE training_jobs SET progress = ? WHERE model_id = ? AND state = 'running' AND locked_by = ? AND lease_token = ?",
      ),
      jobProgress: p('SELECT progress FROM training_jobs WHERE model_id = ?'),
      renewLease: p(
        "UPDATE training_jobs SET locked_until = ? WHERE model_id = ? AND state = 'running' AND locked_by = ? AND lease_token = ?",
      ),
      requeue: p(
        `UPDATE training_jobs SET state = 'queued', updated_at = ?, locked_by = NULL, locked_until = NULL, progress = NULL
         WHERE state = 'running' AND COALESCE(locked_until, 0) < ?`,
      ),
      release: p(
        `UPDATE training_jobs SET state = 'queued', attempts = MAX(attempts - 1, 0), updated_at = ?, locked_by = NULL,
           locked_until = NULL, progress = NULL WHERE model_id = ? AND state = 'running' AND locked_by = ? AND lease_token = ?`,
      ),
      finish: p(
        `UPDATE training_jobs SET state = ?, updated_at = ?, locked_by = NULL, locked_until = NULL
         WHERE model_id = ? AND state = 'running' AND locked_by = ? AND lease_token = ?`,
      ),
      countJobs: p('SELECT state, COUNT(*) AS n FROM training_jobs GROUP BY state'),
      insertLog: p(
        `INSERT INTO request_log (project_id, key_id, provider, model, stream, status, ttfb_ms, total_ms,
           tokens_in, tokens_out, error, request_body, response_body, created_at, body_bytes)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      addUsage: p(
        `INSERT INTO project_usage (project_id, month, tokens) VALUES (?, ?, ?)
         ON CONFLICT (project_id, month) DO UPDATE SET tokens = tokens + excluded.tokens`,
      ),
      getUsage: p('SELECT tokens FROM project_usage WHERE project_id = ? AND month = ?'),
      listLog: p('SELECT * FROM request_log WHERE project_id = ? AND id < ? ORDER BY id DESC LIMIT ?'),
      listLogPage: p(logPageSql({ project: '@project', before: '@before', limit: '@limit', maxBytes: '@maxBytes', chars: '@chars' })),
      getLog: p('SELECT * FROM request_log WHERE project_id = ? AND id = ?'),
      logProjects: p('SELECT DISTINCT project_id FROM request_log ORDER BY project_id'),
      // The oldest row the project keeps by count: everything at or below the next id goes.
      nthNewestLog: p('SELECT id FROM request_log WHERE project_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?'),
      // The deleted rows' body bytes leave the project's count (see `proxyLedger`).
      pruneLog: p(`${kPruneLogSql} RETURNING body_bytes`),
    };
    this.versions = new SqliteVersions(db, (m, examples, options, limit) => this.#queueModel(m, examples, options, limit));
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
        this.#sql.putLimits.run(orgId, merged.maxRunningJobs, merged.maxQueuedJobs, merged.requestsPerMinute, merged.orgRequestsPerMinute);
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

  async createModelWithJob(
    m: ModelRecord,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: { maxQueuedJobs: number },
  ): Promise<QueuedJob> {
    // IMMEDIATE: the count and the insert see the same queue, even with a second process on the file.
    return this.#db.transaction(() => this.#queueModel(m, examples, options, limit)).immediate();
  }

  /** Inside a transaction: the queue cap's check, then the model, its job and its examples. */
  #queueModel(m: ModelRecord, examples: TrainingExample[], options: Record<string, unknown>, limit?: { maxQueuedJobs: number }): QueuedJob {
    const queued = (this.#sql.countQueued.get(m.orgId) as { n: number }).n;
    if (limit !== undefined && queued >= limit.maxQueuedJobs) return { created: false, queued };
    this.#sql.insertModel.run(m.id, m.orgId, m.baseModel, m.taskType, m.labelText, m.status, m.error, m.createdAt, m.updatedAt);
    this.#sql.insertJob.run(m.id, JSON.stringify(options), m.createdAt, m.createdAt);
    examples.forEach((e, i) => this.#sql.insertExample.run(m.id, i, e.text, e.label ? 1 : 0, e.label_text));
    return { created: true, queued: queued + 1 };
  }

  async getModel(id: string): Promise<ModelRecord | null> {
    const row = this.#sql.getModel.get(id) as ModelRow | undefined;
    return row === undefined ? null : toModel(row);
  }

  async listModels(orgId: string): Promise<ModelRecord[]> {
    return (this.#sql.listModels.all(orgId) as ModelRow[]).map(toModel);
  }

  async setModelStatus(id: string, status: ModelStatus, error: string | null, at: Millis): Promise<void> {
    this.#sql.setModelStatus.run(status, error, at, id);
  }

  async deleteModel(id: string): Promise<boolean> {
    // The job and its examples go with it, and its later versions with theirs (ON DELETE CASCADE).
    return this.#sql.deleteModel.run(id).changes > 0;
  }

  async getJob(modelId: string): Promise<TrainingJob | null> {
    const row = this.#sql.getJob.get(modelId) as JobRow | undefined;
    return row === undefined ? null : toJob(row);
  }

  async getJobExamples(modelId: string): Promise<TrainingExample[]> {
    return (this.#sql.examples.all(modelId) as ExampleRow[]).map(toExample);
  }

  async setJobState(modelId: string, state: JobState, at: Millis): Promise<void> {
    this.#sql.setJobState.run(state, at, modelId);
  }

  async claimNextJob(at: Millis, claim: JobClaim): Promise<TrainingJob | null> {
    // One IMMEDIATE transaction, so two runners on one file never claim the same job.
    return this.#db
      .transaction(() => {
        const found = this.#sql.nextFair.get({ at, cap: claim.maxRunningJobs }) as (JobRow & { org_id: string }) | undefined;
        if (found === undefined) return null;
        const { org_id: orgId, ...row } = found;
        const until = at + claim.leaseMs;
        this.#sql.markRunning.run(at, claim.holder, until, row.model_id);
        this.#sql.markOrgServed.run(at, orgId);
        return toJob({
          ...row,
          state: 'running',
          attempts: row.attempts + 1,
          updated_at: at,
          locked_by: claim.holder,
          locked_until: until,
          lease_token: row.lease_token + 1,
        });
      })
      .immediate();
  }

  async renewLease(modelId: string, lease: JobLease, until: Millis): Promise<boolean> {
    return this.#sql.renewLease.run(until, modelId, lease.holder, lease.token).changes > 0;
  }

  async recordJobProgress(modelId: string, lease: JobLease, progress: JobProgress): Promise<boolean> {
    return this.#sql.recordProgress.run(toProgressColumn(progress), modelId, lease.holder, lease.token).changes > 0;
  }

  async getJobProgress(modelId: string): Promise<JobProgress | null> {
    const row = this.#sql.jobProgress.get(modelId) as { progress: string | null } | undefined;
    return toJobProgress(row?.progress ?? null);
  }

  async requeueInterruptedJobs(at: Millis): Promise<number> {
    return this.#sql.requeue.run(at, at).changes;
  }

  async releaseJob(modelId: string, lease: JobLease, at: Millis): Promise<void> {
    this.#sql.release.run(at, modelId, lease.holder, lease.token);
  }

  async finishJob(modelId: string, lease: JobLease, at: Millis, failure: string | null): Promise<boolean> {
    return this.#db
      .transaction(() => {
        if (this.#sql.finish.run(failure === null ? 'done' : 'failed', at, modelId, lease.holder, lease.token).changes === 0) return false;
        this.#sql.setModelStatus.run(failure === null ? 'trained' : 'failed', failure, at, modelId);
        return true;
      })
      .immediate();
  }

  async countJobs(): Promise<Record<JobState, number>> {
    const counts: Record<JobState, number> = { queued: 0, running: 0, done: 0, failed: 0 };
    for (const row of this.#sql.countJobs.all() as { state: JobState; n: number }[]) counts[row.state] = row.n;
    return counts;
  }

  async insertRequestLog(r: Omit<RequestLogRow, 'id'>, write: RequestLogWrite = {}): Promise<number> {
    // One transaction: the usage counter never misses a logged call, nor counts one twice, and the call's
    // reservation is given back in the same step that counts its tokens.
    return this.#db
      .transaction(() => {
        const kept = this.proxyLedger.keepBodies(r.projectId, r.requestBody, r.responseBody, write.maxProjectBodyBytes);
        const info = this.#sql.insertLog.run(
          r.projectId,
          r.keyId,
          r.provider,
          r.model,
          r.stream ? 1 : 0,
          r.status,
          r.ttfbMs,
          r.totalMs,
          r.tokensIn,
          r.tokensOut,
          r.error,
          kept.requestBody,
          kept.responseBody,
          r.createdAt,
          kept.bytes,
        );
        const tokens = rowTokens(r);
        if (tokens > 0) this.#sql.addUsage.run(r.projectId, usageMonth(r.createdAt), tokens);
        this.proxyLedger.releaseInTransaction(write.reservationId);
        return Number(info.lastInsertRowid);
      })
      .immediate();
  }

  async getProjectUsage(projectId: string, month: string): Promise<number> {
    return (this.#sql.getUsage.get(projectId, month) as { tokens: number } | undefined)?.tokens ?? 0;
  }

  async listRequestLog(projectId: string, options: { limit: number; before?: number }): Promise<RequestLogRow[]> {
    const before = options.before ?? Number.MAX_SAFE_INTEGER;
    return (this.#sql.listLog.all(projectId, before, options.limit) as LogRow[]).map(toLog);
  }

  async listRequestLogPreviews(
    projectId: string,
    options: { limit: number; before?: number; previewChars: number; maxBodyBytes: number },
  ): Promise<RequestLogPage> {
    const query = {
      project: projectId,
      before: options.before ?? Number.MAX_SAFE_INTEGER,
      limit: options.limit + 1,
      maxBytes: options.maxBodyBytes,
      chars: options.previewChars,
    };
    return toLogPage(this.#sql.listLogPage.all(query) as LogPreviewRow[], options.limit);
  }

  async getRequestLog(projectId: string, id: number): Promise<RequestLogRow | null> {
    const row = this.#sql.getLog.get(projectId, id) as LogRow | undefined;
    return row === undefined ? null : toLog(row);
  }

  async listRequestLogProjects(): Promise<string[]> {
    return (this.#sql.logProjects.all() as { project_id: string }[]).map((r) => r.project_id);
  }

  async pruneRequestLog(projectId: string, options: { olderThan: Millis; keepNewest: number; limit: number }): Promise<number> {
    const nth = this.#sql.nthNewestLog.get(projectId, options.keepNewest) as { id: number } | undefined;
    // Both halves walk an index on (project_id, ...); UNION counts a row in both once, so a short batch means done.
    return this.#db
      .transaction(() => {
        const gone = this.#sql.pruneLog.all(projectId, options.olderThan, projectId, nth?.id ?? 0, options.limit) as {
          body_bytes: number;
        }[];
        this.proxyLedger.forgetBodies(
          projectId,
          gone.reduce((sum, row) => sum + row.body_bytes, 0),
        );
        return gone.length;
      })
      .immediate();
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}
