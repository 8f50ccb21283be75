// The PostgreSQL store's training jobs: queueing a model with its job and examples, the fair claim every replica
// makes, the holder's lease, progress and end, and the model's status that follows its job. PostgresStore forwards
// the Store's job methods here (postgres.ts); the SQLite store's twin is sqlite-job-queue.ts.
import type pg from 'pg';

import { inTransaction } from './postgres-migrations.js';
import { lockOrganization, queryCount, queryOne, queryRows } from './postgres-query.js';
import { countRefusal, quotaSql, storageRefusal, storedBytes } from './quotas.js';
import { type ExampleRow, type JobRow, toExample, toJob, toJobProgress, toProgressColumn } from './rows.js';
import type {
  JobClaim,
  JobLease,
  JobProgress,
  JobState,
  Millis,
  ModelRecord,
  ModelStatus,
  QueueLimits,
  QueuedJob,
  QuotaRefusal,
  TrainingExample,
  TrainingJob,
} from './types.js';

/** The statements, one table as in the SQLite store; `$n` placeholders. */
const kSql = Object.freeze({
  insertModel: `INSERT INTO models (id, org_id, base_model, task_type, label_text, status, error, created_at, updated_at, stored_bytes)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
  insertJob: `INSERT INTO training_jobs (model_id, state, attempts, options, created_at, updated_at)
    VALUES ($1, 'queued', 0, $2, $3, $3)`,
  // One statement for all of a model's examples: a round trip per example would cost more than the training request.
  insertExamples: `INSERT INTO training_examples (model_id, position, text, label, label_text)
    SELECT $1, e.position - 1, e.text, e.label, e.label_text
    FROM unnest($2::text[], $3::int[], $4::text[]) WITH ORDINALITY AS e(text, label, label_text, position)`,
  setModelStatus: 'UPDATE models SET status = $1, error = $2, updated_at = $3 WHERE id = $4',
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
});

/** The organization's usage, read under its row lock; each statement has one parameter, the organization or classifier. */
const kQuotaSql = quotaSql({ org: '$1', classifier: '$1' });

/** How many times a claim looks again when another replica filled an organization's cap between look and lock. */
const kClaimRetries = 5;

/**
 * Training jobs on PostgreSQL, shared by every replica (see the Store's job methods in `types.ts`). Queueing and
 * claiming lock the organization's row first, so replicas take turns per organization and never per database.
 */
export class PostgresJobQueue {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async createModelWithJob(
    m: ModelRecord,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: QueueLimits,
  ): Promise<QueuedJob> {
    return inTransaction(this.#pool, (client) => this.queueModel(client, m, examples, options, limit));
  }

  /**
   * On the caller's transaction: the quotas' and the queue cap's checks, then the model (charged its stored bytes),
   * its job and its examples. `classifierId`: the model is that classifier's next version (versions counted, no
   * classifier added).
   */
  async queueModel(
    client: pg.PoolClient,
    m: ModelRecord,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: QueueLimits,
    classifierId?: string,
  ): Promise<QueuedJob> {
    // The organization's row lock: two replicas queueing for one organization count one after the other.
    await lockOrganization(client, m.orgId);
    const queued = await queryCount(client, kSql.countQueued, [m.orgId]);
    const optionsJson = JSON.stringify(options);
    const charge = storedBytes(examples, optionsJson);
    const quota = limit === undefined ? null : await this.#quotaRefusal(client, m.orgId, charge, limit, classifierId);
    if (quota !== null) return { created: false, queued, quota };
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
      charge,
    ]);
    await client.query(kSql.insertJob, [m.id, optionsJson, m.createdAt]);
    await client.query(kSql.insertExamples, [
      m.id,
      examples.map((e) => e.text),
      examples.map((e) => (e.label ? 1 : 0)),
      examples.map((e) => e.label_text),
    ]);
    return { created: true, queued: queued + 1 };
  }

  /** The first quota a model charged `charge` bytes would pass; each count is read only when its limit is set. */
  async #quotaRefusal(
    client: pg.PoolClient,
    orgId: string,
    charge: number,
    limit: QueueLimits,
    classifierId: string | undefined,
  ): Promise<QuotaRefusal | null> {
    if (classifierId === undefined && limit.maxModels !== undefined) {
      const refused = countRefusal('models', await queryCount(client, kQuotaSql.countModels, [orgId]), limit.maxModels);
      if (refused !== null) return refused;
    }
    if (classifierId !== undefined && limit.maxVersions !== undefined) {
      const refused = countRefusal('versions', await queryCount(client, kQuotaSql.countVersions, [classifierId]), limit.maxVersions);
      if (refused !== null) return refused;
    }
    if (limit.maxStoredBytes === undefined) return null;
    return storageRefusal(await queryCount(client, kQuotaSql.storedBytes, [orgId]), charge, limit.maxStoredBytes);
  }

  async setModelStatus(id: string, status: ModelStatus, error: string | null, at: Millis): Promise<void> {
    await this.#pool.query(kSql.setModelStatus, [status, error, at, id]);
  }

  async getJob(modelId: string): Promise<TrainingJob | null> {
    const row = await queryOne<JobRow>(this.#pool, kSql.getJob, [modelId]);
    return row === undefined ? null : toJob(row);
  }

  async getJobExamples(modelId: string): Promise<TrainingExample[]> {
    return (await queryRows<ExampleRow>(this.#pool, kSql.examples, [modelId])).map(toExample);
  }

  async setJobState(modelId: string, state: JobState, at: Millis): Promise<void> {
    await this.#pool.query(kSql.setJobState, [state, at, modelId]);
  }

  async claimNextJob(at: Millis, claim: JobClaim): Promise<TrainingJob | null> {
    return inTransaction(this.#pool, async (client) => {
      for (let attempt = 0; attempt < kClaimRetries; attempt += 1) {
        type Found = Omit<JobRow, 'locked_by' | 'locked_until'> & { org_id: string; cap: number };
        const found = await queryOne<Found>(client, kSql.nextFair, [claim.maxRunningJobs, at]);
        if (found === undefined) return null;
        const { org_id: orgId, cap, ...row } = found;
        // The look above read a snapshot from before our locks; with the organization's row now held, count again:
        // a claimer that committed in between is seen, and no one else can add to the count until we commit.
        if ((await queryCount(client, kSql.countRunning, [orgId, at])) >= cap) continue;
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
    const row = await queryOne<{ progress: string | null }>(this.#pool, kSql.jobProgress, [modelId]);
    return toJobProgress(row?.progress ?? null);
  }

  async requeueInterruptedJobs(at: Millis): Promise<number> {
    return (await this.#pool.query(kSql.requeue, [at])).rowCount ?? 0;
  }

  async releaseJob(modelId: string, lease: JobLease, at: Millis): Promise<void> {
    await this.#pool.query(kSql.release, [at, modelId, lease.holder, lease.token]);
  }

  async finishJob(modelId: string, lease: JobLease, at: Millis, failure: string | null): Promise<boolean> {
    return inTransaction(this.#pool, async (client) => {
      const finished = await client.query(kSql.finish, [failure === null ? 'done' : 'failed', at, modelId, lease.holder, lease.token]);
      if ((finished.rowCount ?? 0) === 0) return false;
      await client.query(kSql.setModelStatus, [failure === null ? 'trained' : 'failed', failure, at, modelId]);
      return true;
    });
  }

  async countJobs(): Promise<Record<JobState, number>> {
    const counts: Record<JobState, number> = { queued: 0, running: 0, done: 0, failed: 0 };
    for (const row of await queryRows<{ state: JobState; n: number }>(this.#pool, kSql.countJobs, [])) counts[row.state] = row.n;
    return counts;
  }
}
