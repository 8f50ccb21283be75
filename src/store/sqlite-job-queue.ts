// The SQLite store's training jobs: queueing a model with its job and examples, the fair claim, the holder's lease,
// progress and end, and the model's status that follows its job. SqliteStore forwards the Store's job methods here
// (sqlite.ts); the PostgreSQL store's twin is postgres-job-queue.ts.
import type Database from 'better-sqlite3';

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

/**
 * Training jobs on the SQLite file (see the Store's job methods in `types.ts`). A step that reads the queue and
 * writes by what it read is one IMMEDIATE transaction, so a second process on the file waits for it.
 */
export class SqliteJobQueue {
  readonly #db: Database.Database;
  readonly #sql;
  /** The organization's usage, read under the transaction's write lock before a model is queued. */
  readonly #quotaSql: Record<keyof ReturnType<typeof quotaSql>, Database.Statement>;

  constructor(db: Database.Database) {
    this.#db = db;
    const p = (sql: string) => db.prepare(sql);
    this.#sql = {
      insertModel: p(
        `INSERT INTO models (id, org_id, base_model, task_type, label_text, status, error, created_at, updated_at, stored_bytes)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertJob: p(
        `INSERT INTO training_jobs (model_id, state, attempts, options, created_at, updated_at)
         VALUES (?, 'queued', 0, ?, ?, ?)`,
      ),
      insertExample: p('INSERT INTO training_examples (model_id, position, text, label, label_text) VALUES (?, ?, ?, ?, ?)'),
      setModelStatus: p('UPDATE models SET status = ?, error = ?, updated_at = ? WHERE id = ?'),
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
    };
    const quota = quotaSql({ org: '?', classifier: '?' });
    this.#quotaSql = { countModels: p(quota.countModels), countVersions: p(quota.countVersions), storedBytes: p(quota.storedBytes) };
  }

  async createModelWithJob(
    m: ModelRecord,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: QueueLimits,
  ): Promise<QueuedJob> {
    // IMMEDIATE: the counts and the insert see the same rows, even with a second process on the file.
    return this.#db.transaction(() => this.queueModel(m, examples, options, limit)).immediate();
  }

  /**
   * Inside a transaction: the quotas' and the queue cap's checks, then the model (charged its stored bytes), its job
   * and its examples. `classifierId`: the model is that classifier's next version (versions counted, no classifier
   * added).
   */
  queueModel(
    m: ModelRecord,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: QueueLimits,
    classifierId?: string,
  ): QueuedJob {
    const queued = (this.#sql.countQueued.get(m.orgId) as { n: number }).n;
    const optionsJson = JSON.stringify(options);
    const charge = storedBytes(examples, optionsJson);
    const quota = limit === undefined ? null : this.#quotaRefusal(m.orgId, charge, limit, classifierId);
    if (quota !== null) return { created: false, queued, quota };
    if (limit !== undefined && queued >= limit.maxQueuedJobs) return { created: false, queued };
    this.#sql.insertModel.run(m.id, m.orgId, m.baseModel, m.taskType, m.labelText, m.status, m.error, m.createdAt, m.updatedAt, charge);
    this.#sql.insertJob.run(m.id, optionsJson, m.createdAt, m.createdAt);
    examples.forEach((e, i) => this.#sql.insertExample.run(m.id, i, e.text, e.label ? 1 : 0, e.label_text));
    return { created: true, queued: queued + 1 };
  }

  /** The first quota a model charged `charge` bytes would pass; each count is read only when its limit is set. */
  #quotaRefusal(orgId: string, charge: number, limit: QueueLimits, classifierId: string | undefined): QuotaRefusal | null {
    const count = (name: keyof ReturnType<typeof quotaSql>, id: string) => (this.#quotaSql[name].get(id) as { n: number }).n;
    if (classifierId === undefined && limit.maxModels !== undefined) {
      const refused = countRefusal('models', count('countModels', orgId), limit.maxModels);
      if (refused !== null) return refused;
    }
    if (classifierId !== undefined && limit.maxVersions !== undefined) {
      const refused = countRefusal('versions', count('countVersions', classifierId), limit.maxVersions);
      if (refused !== null) return refused;
    }
    if (limit.maxStoredBytes === undefined) return null;
    return storageRefusal(count('storedBytes', orgId), charge, limit.maxStoredBytes);
  }

  async setModelStatus(id: string, status: ModelStatus, error: string | null, at: Millis): Promise<void> {
    this.#sql.setModelStatus.run(status, error, at, id);
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
}
