import type pg from 'pg';

import { PostgresRequestCounter } from './postgres-counts.js';
import { inTransaction, openMigratedPool } from './postgres-migrations.js';
import { PostgresProxyLedger } from './postgres-proxy-ledger.js';
import { PostgresVersions } from './postgres-versions.js';
import type { RequestLogWrite } from './proxy-ledger.js';
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

/** Connections per replica: a few requests and the job runner at once; PostgreSQL's default cap is 100 in all. */
const kPoolSize = 10;

/** The statements, one table as in the SQLite store; `$n` placeholders. */
const kSql = Object.freeze({
  insertOrg: 'INSERT INTO organizations (id, created_at, proxy_access) VALUES ($1, $2, 0)',
  getOrg: 'SELECT * FROM organizations WHERE id = $1',
  lockOrg: 'SELECT id FROM organizations WHERE id = $1 FOR UPDATE',
  listOrgs: 'SELECT * FROM organizations ORDER BY created_at, id',
  setProxy: 'UPDATE organizations SET proxy_access = $1 WHERE id = $2',
  getLimits: 'SELECT max_running_jobs, max_queued_jobs, requests_per_minute, org_requests_per_minute FROM org_limits WHERE org_id = $1',
  putLimits: `INSERT INTO org_limits (org_id, max_running_jobs, max_queued_jobs, requests_per_minute, org_requests_per_minute) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (org_id) DO UPDATE SET max_running_jobs = excluded.max_running_jobs,
      max_queued_jobs = excluded.max_queued_jobs, requests_per_minute = excluded.requests_per_minute,
      org_requests_per_minute = excluded.org_requests_per_minute`,
  insertKey: 'INSERT INTO api_keys (id, org_id, hash, prefix, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6)',
  keyByHash: 'SELECT * FROM api_keys WHERE hash = $1',
  listKeys: 'SELECT * FROM api_keys WHERE org_id = $1 ORDER BY created_at, id',
  revokeKey: 'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2',
  insertProject: 'INSERT INTO projects (id, org_id, name, created_at, monthly_token_budget) VALUES ($1, $2, $3, $4, $5)',
  getProject: 'SELECT * FROM projects WHERE id = $1',
  listProjects: 'SELECT * FROM projects WHERE org_id = $1 ORDER BY created_at, id',
  setBudget: 'UPDATE projects SET monthly_token_budget = $1 WHERE id = $2',
  insertModel: `INSERT INTO models (id, org_id, base_model, task_type, label_text, status, error, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
  insertJob: `INSERT INTO training_jobs (model_id, state, attempts, options, created_at, updated_at)
    VALUES ($1, 'queued', 0, $2, $3, $3)`,
  // One statement for all of a model's examples: a round trip per example would cost more than the training request.
  insertExamples: `INSERT INTO training_examples (model_id, position, text, label, label_text)
    SELECT $1, e.position - 1, e.text, e.label, e.label_text
    FROM unnest($2::text[], $3::int[], $4::text[]) WITH ORDINALITY AS e(text, label, label_text, position)`,
  getModel: 'SELECT * FROM models WHERE id = $1',
  listModels: 'SELECT * FROM models WHERE org_id = $1 AND classifier_id IS NULL ORDER BY created_at, id',
  setModelStatus: 'UPDATE models SET status = $1, error = $2, updated_at = $3 WHERE id = $4',
  deleteModel: 'DELETE FROM models WHERE id = $1',
  getJob: 'SELECT * FROM training_jobs WHERE model_id = $1',
  examples: 'SELECT text, label, label_text FROM training_examples WHERE model_id = $1 ORDER BY position',
  setJobState: 'UPDATE training_jobs SET state = $1, updated_at = $2, locked_by = NULL, locked_until = NULL WHERE model_id = $3',
  countQueued: "SELECT COUNT(*) AS n FROM training_jobs j JOIN models m ON m.id = j.model_id WHERE j.state = 'queued' AND m.org_id = $1",
  countRunning: `SELECT COUNT(*) AS n FROM training_jobs j JOIN models m ON m.id = j.model_id
    WHERE j.state = 'running' AND COALESCE(j.locked_until, 0) >= $2 AND m.org_id = $1`,
  // The SQLite store's fair order (round robin by organization, oldest job first, live running jobs under the cap,
  // expired leases claimable), plus SKIP LOCKED: a claimer passes over the jobs and organizations another claimer
  // is taking right now instead of waiting for it.
  nextFair: `SELECT j.model_id, j.state, j.attempts, j.options, j.created_at, j.updated_at, j.lease_token, m.org_id,
      COALESCE(l.max_running_jobs, $1) AS cap
    FROM training_jobs j
      JOIN models m ON m.id = j.model_id
      JOIN organizations o ON o.id = m.org_id
      LEFT JOIN org_limits l ON l.org_id = m.org_id
    WHERE (j.state = 'queued' OR (j.state = 'running' AND COALESCE(j.locked_until, 0) < $2))
      AND (SELECT COUNT(*) FROM training_jobs rj JOIN models rm ON rm.id = rj.model_id
           WHERE rj.state = 'running' AND COALESCE(rj.locked_until, 0) >= $2 AND rm.org_id = m.org_id)
          < COALESCE(l.max_running_jobs, $1)
    ORDER BY COALESCE(o.last_job_started_at, -1), j.seq
    LIMIT 1
    FOR UPDATE OF j, o SKIP LOCKED`,
  markOrgServed: 'UPDATE organizations SET last_job_started_at = $1 WHERE id = $2',
  markRunning: `UPDATE training_jobs SET state = 'running', attempts = attempts + 1, updated_at = $1, locked_by = $2,
    locked_until = $3, progress = NULL, lease_token = lease_token + 1 WHERE model_id = $4`,
  // A holder's writes: only while the job is running under its claim (its name and its claim's token).
  recordProgress:
    "UPDATE training_jobs SET progress = $1 WHERE model_id = $2 AND state = 'running' AND locked_by = $3 AND lease_token = $4",
  jobProgress: 'SELECT progress FROM training_jobs WHERE model_id = $1',
  renewLease:
    "UPDATE training_jobs SET locked_until = $1 WHERE model_id = $2 AND state = 'running' AND locked_by = $3 AND lease_token = $4",
  requeue: `UPDATE training_jobs SET state = 'queued', updated_at = $1, locked_by = NULL, locked_until = NULL, progress = NULL
    WHERE state = 'running' AND COALESCE(locked_until, 0) < $1`,
  release: `UPDATE training_jobs SET state = 'queued', attempts = GREATEST(attempts - 1, 0), updated_at = $1,
    locked_by = NULL, locked_until = NULL, progress = NULL WHERE model_id = $2 AND state = 'running' AND locked_by = $3
    AND lease_token = $4`,
  finish: `UPDATE training_jobs SET state = $1, updated_at = $2, locked_by = NULL, locked_until = NULL
    WHERE model_id = $3 AND state = 'running' AND locked_by = $4 AND lease_token = $5`,
  countJobs: 'SELECT state, COUNT(*) AS n FROM training_jobs GROUP BY state',
  insertLog: `INSERT INTO request_log (project_id, key_id, provider, model, stream, status, ttfb_ms, total_ms,
      tokens_in, tokens_out, error, request_body, response_body, created_at, body_bytes)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
  addUsage: `INSERT INTO project_usage (project_id, month, tokens) VALUES ($1, $2, $3)
    ON CONFLICT (project_id, month) DO UPDATE SET tokens = project_usage.tokens + excluded.tokens`,
  getUsage: 'SELECT tokens FROM project_usage WHERE project_id = $1 AND month = $2',
  listLog: 'SELECT * FROM request_log WHERE project_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3',
  listLogPage: logPageSql({ project: '$1', before: '$2', limit: '$3', maxBytes: '$4', chars: '$5' }),
  getLog: 'SELECT * FROM request_log WHERE project_id = $1 AND id = $2',
  logProjects: 'SELECT DISTINCT project_id FROM request_log ORDER BY project_id',
  nthNewestLog: 'SELECT id FROM request_log WHERE project_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2',
  pruneLog: `DELETE FROM request_log WHERE id IN (
    SELECT id FROM request_log WHERE project_id = $1 AND created_at < $2
    UNION SELECT id FROM request_log WHERE project_id = $1 AND id <= $3
    LIMIT $4) RETURNING body_bytes`,
});

/** How many times a claim looks again when another replica filled an organization's cap between look and lock. */
const kClaimRetries = 5;

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
  readonly #pool: pg.Pool;

  private constructor(pool: pg.Pool) {
    this.#pool = pool;
    this.proxyLedger = new PostgresProxyLedger(pool);
    this.requestCounter = new PostgresRequestCounter(pool);
    this.versions = new PostgresVersions(pool, (client, m, examples, options, limit) =>
      this.#queueModel(client, m, examples, options, limit),
    );
  }

  /** Connects to `url` and migrates the database to the newest schema (one replica at a time). */
  static async open(url: string): Promise<PostgresStore> {
    const pool = await openMigratedPool(url, kPoolSize);
    return new PostgresStore(pool);
  }

  /** The schema version the database is at. */
  async schemaVersion(): Promise<number> {
    return (await this.#one<{ version: number }>('SELECT version FROM schema_version', []))!.version;
  }

  async #rows<T>(sql: string, params: unknown[], client: pg.ClientBase | pg.Pool = this.#pool): Promise<T[]> {
    return (await client.query(sql, params)).rows as T[];
  }

  async #one<T>(sql: string, params: unknown[], client: pg.ClientBase | pg.Pool = this.#pool): Promise<T | undefined> {
    return (await this.#rows<T>(sql, params, client))[0];
  }

  async #count(sql: string, params: unknown[], client: pg.ClientBase | pg.Pool = this.#pool): Promise<number> {
    return (await this.#one<{ n: number }>(sql, params, client))!.n;
  }

  /** Runs `work` in one transaction on one connection. */
  #tx<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.#pool, work);
  }

  async createOrganization(id: string): Promise<Organization> {
    const now = Date.now();
    await this.#pool.query(kSql.insertOrg, [id, now]);
    return { id, createdAt: now, proxyAccess: false };
  }

  async getOrganization(id: string): Promise<Organization | null> {
    const row = await this.#one<OrgRow>(kSql.getOrg, [id]);
    return row === undefined ? null : toOrg(row);
  }

  async listOrganizations(): Promise<Organization[]> {
    return (await this.#rows<OrgRow>(kSql.listOrgs, [])).map(toOrg);
  }

  async setProxyAccess(orgId: string, granted: boolean): Promise<void> {
    await this.#pool.query(kSql.setProxy, [granted ? 1 : 0, orgId]);
  }

  async getOrgLimits(orgId: string): Promise<OrgLimits> {
    return toLimits(await this.#one<LimitsRow>(kSql.getLimits, [orgId]));
  }

  async setOrgLimits(orgId: string, limits: Partial<OrgLimits>): Promise<void> {
    await this.#tx(async (client) => {
      // The organization's row lock orders two operators' changes; a missing organization fails on the insert.
      await client.query(kSql.lockOrg, [orgId]);
      const merged = { ...toLimits(await this.#one<LimitsRow>(kSql.getLimits, [orgId], client)), ...limits };
      await client.query(kSql.putLimits, [
        orgId,
        merged.maxRunningJobs,
        merged.maxQueuedJobs,
        merged.requestsPerMinute,
        merged.orgRequestsPerMinute,
      ]);
    });
  }

  async insertApiKey(r: ApiKeyRecord): Promise<void> {
    await this.#pool.query(kSql.insertKey, [r.id, r.orgId, r.hash, r.prefix, r.createdAt, r.revokedAt]);
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | null> {
    const row = await this.#one<KeyRow>(kSql.keyByHash, [hash]);
    return row === undefined ? null : toKey(row);
  }

  async listApiKeys(orgId: string): Promise<ApiKeyRecord[]> {
    return (await this.#rows<KeyRow>(kSql.listKeys, [orgId])).map(toKey);
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
    const row = await this.#one<ProjectRow>(kSql.getProject, [id]);
    return row === undefined ? null : toProject(row);
  }

  async listProjects(orgId: string): Promise<Project[]> {
    return (await this.#rows<ProjectRow>(kSql.listProjects, [orgId])).map(toProject);
  }

  async createModelWithJob(
    m: ModelRecord,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: { maxQueuedJobs: number },
  ): Promise<QueuedJob> {
    return this.#tx((client) => this.#queueModel(client, m, examples, options, limit));
  }

  /** On the caller's transaction: the queue cap's check, then the model, its job and its examples. */
  async #queueModel(
    client: pg.PoolClient,
    m: ModelRecord,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: { maxQueuedJobs: number },
  ): Promise<QueuedJob> {
    // The organization's row lock: two replicas queueing for one organization count one after the other.
    await client.query(kSql.lockOrg, [m.orgId]);
    const queued = await this.#count(kSql.countQueued, [m.orgId], client);
    if (limit !== undefined && queued >= limit.maxQueuedJobs) return { created: false, queued };
    await client.query(kSql.insertModel, [
      m.id,
      m.orgId,
      m.baseModel,
      m.taskType,
      m.labelText,
      m.status,
      m.error,
      m.createdAt,
      m.updatedAt,
    ]);
    await client.query(kSql.insertJob, [m.id, JSON.stringify(options), m.createdAt]);
    await client.query(kSql.insertExamples, [
      m.id,
      examples.map((e) => e.text),
      examples.map((e) => (e.label ? 1 : 0)),
      examples.map((e) => e.label_text),
    ]);
    return { created: true, queued: queued + 1 };
  }

  async getModel(id: string): Promise<ModelRecord | null> {
    const row = await this.#one<ModelRow>(kSql.getModel, [id]);
    return row === undefined ? null : toModel(row);
  }

  async listModels(orgId: string): Promise<ModelRecord[]> {
    return (await this.#rows<ModelRow>(kSql.listModels, [orgId])).map(toModel);
  }

  async setModelStatus(id: string, status: ModelStatus, error: string | null, at: Millis): Promise<void> {
    await this.#pool.query(kSql.setModelStatus, [status, error, at, id]);
  }

  async deleteModel(id: string): Promise<boolean> {
    // The job and its examples go with it, and its later versions with theirs (ON DELETE CASCADE).
    return ((await this.#pool.query(kSql.deleteModel, [id])).rowCount ?? 0) > 0;
  }

  async getJob(modelId: string): Promise<TrainingJob | null> {
    const row = await this.#one<JobRow>(kSql.getJob, [modelId]);
    return row === undefined ? null : toJob(row);
  }

  async getJobExamples(modelId: string): Promise<TrainingExample[]> {
    return (await this.#rows<ExampleRow>(kSql.examples, [modelId])).map(toExample);
  }

  async setJobState(modelId: string, state: JobState, at: Millis): Promise<void> {
    await this.#pool.query(kSql.setJobState, [state, at, modelId]);
  }

  async claimNextJob(at: Millis, claim: JobClaim): Promise<TrainingJob | null> {
    return this.#tx(async (client) => {
      for (let attempt = 0; attempt < kClaimRetries; attempt += 1) {
        type Found = Omit<JobRow, 'locked_by' | 'locked_until'> & { org_id: string; cap: number };
        const found = await this.#one<Found>(kSql.nextFair, [claim.maxRunningJobs, at], client);
        if (found === undefined) return null;
        const { org_id: orgId, cap, ...row } = found;
        // The look above read a snapshot from before our locks; with the organization's row now held, count again:
        // a claimer that committed in between is seen, and no one else can add to the count until we commit.
        if ((await this.#count(kSql.countRunning, [orgId, at], client)) >= cap) continue;
        const until = at + claim.leaseMs;
        await client.query(kSql.markRunning, [at, claim.holder, until, row.model_id]);
        await client.query(kSql.markOrgServed, [at, orgId]);
        return toJob({
          ...row,
          state: 'running',
          attempts: row.attempts + 1,
          updated_at: at,
          locked_by: claim.holder,
          locked_until: until,
          lease_token: row.lease_token + 1,
        });
      }
      return null;
    });
  }

  async renewLease(modelId: string, lease: JobLease, until: Millis): Promise<boolean> {
    return ((await this.#pool.query(kSql.renewLease, [until, modelId, lease.holder, lease.token])).rowCount ?? 0) > 0;
  }

  async recordJobProgress(modelId: string, lease: JobLease, progress: JobProgress): Promise<boolean> {
    const written = await this.#pool.query(kSql.recordProgress, [toProgressColumn(progress), modelId, lease.holder, lease.token]);
    return (written.rowCount ?? 0) > 0;
  }

  async getJobProgress(modelId: string): Promise<JobProgress | null> {
    const row = await this.#one<{ progress: string | null }>(kSql.jobProgress, [modelId]);
    return toJobProgress(row?.progress ?? null);
  }

  async requeueInterruptedJobs(at: Millis): Promise<number> {
    return (await this.#pool.query(kSql.requeue, [at])).rowCount ?? 0;
  }

  async releaseJob(modelId: string, lease: JobLease, at: Millis): Promise<void> {
    await this.#pool.query(kSql.release, [at, modelId, lease.holder, lease.token]);
  }

  async finishJob(modelId: string, lease: JobLease, at: Millis, failure: string | null): Promise<boolean> {
    return this.#tx(async (client) => {
      const finished = await client.query(kSql.finish, [failure === null ? 'done' : 'failed', at, modelId, lease.holder, lease.token]);
      if ((finished.rowCount ?? 0) === 0) return false;
      await client.query(kSql.setModelStatus, [failure === null ? 'trained' : 'failed', failure, at, modelId]);
      return true;
    });
  }

  async countJobs(): Promise<Record<JobState, number>> {
    const counts: Record<JobState, number> = { queued: 0, running: 0, done: 0, failed: 0 };
    for (const row of await this.#rows<{ state: JobState; n: number }>(kSql.countJobs, [])) counts[row.state] = row.n;
    return counts;
  }

  async insertRequestLog(r: Omit<RequestLogRow, 'id'>, write: RequestLogWrite = {}): Promise<number> {
    // One transaction: the usage counter never misses a logged call, nor counts one twice, and the call's
    // reservation is given back in the same step that counts its tokens.
    return this.#tx(async (client) => {
      const kept = await this.proxyLedger.keepBodies(client, r.projectId, r.requestBody, r.responseBody, write.maxProjectBodyBytes);
      const { id } = (await this.#one<{ id: number }>(
        kSql.insertLog,
        [
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
        ],
        client,
      ))!;
      const tokens = rowTokens(r);
      if (tokens > 0) await client.query(kSql.addUsage, [r.projectId, usageMonth(r.createdAt), tokens]);
      await this.proxyLedger.releaseInTransaction(client, write.reservationId);
      return id;
    });
  }

  async getProjectUsage(projectId: string, month: string): Promise<number> {
    return (await this.#one<{ tokens: number }>(kSql.getUsage, [projectId, month]))?.tokens ?? 0;
  }

  async listRequestLog(projectId: string, options: { limit: number; before?: number }): Promise<RequestLogRow[]> {
    const before = options.before ?? Number.MAX_SAFE_INTEGER;
    return (await this.#rows<LogRow>(kSql.listLog, [projectId, before, options.limit])).map(toLog);
  }

  async listRequestLogPreviews(
    projectId: string,
    options: { limit: number; before?: number; previewChars: number; maxBodyBytes: number },
  ): Promise<RequestLogPage> {
    const params = [projectId, options.before ?? Number.MAX_SAFE_INTEGER, options.limit + 1, options.maxBodyBytes, options.previewChars];
    return toLogPage(await this.#rows<LogPreviewRow>(kSql.listLogPage, params), options.limit);
  }

  async getRequestLog(projectId: string, id: number): Promise<RequestLogRow | null> {
    const row = await this.#one<LogRow>(kSql.getLog, [projectId, id]);
    return row === undefined ? null : toLog(row);
  }

  async listRequestLogProjects(): Promise<string[]> {
    return (await this.#rows<{ project_id: string }>(kSql.logProjects, [])).map((r) => r.project_id);
  }

  async pruneRequestLog(projectId: string, options: { olderThan: Millis; keepNewest: number; limit: number }): Promise<number> {
    const nth = await this.#one<{ id: number }>(kSql.nthNewestLog, [projectId, options.keepNewest]);
    return this.#tx(async (client) => {
      const gone = await this.#rows<{ body_bytes: number }>(
        kSql.pruneLog,
        [projectId, options.olderThan, nth?.id ?? 0, options.limit],
        client,
      );
      await this.proxyLedger.forgetBodies(
        client,
        projectId,
        gone.reduce((sum, row) => sum + Number(row.body_bytes), 0),
      );
      return gone.length;
    });
  }

  async close(): Promise<void> {
    if (!this.#pool.ended) await this.#pool.end();
  }
}
