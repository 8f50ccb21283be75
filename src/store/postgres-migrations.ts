import type pg from 'pg';

/**
 * The PostgreSQL dialect of `migrations.ts`, number for number: schema version N means the same tables on both
 * backends. Column types follow SQLite's (flags as 0/1 integers, times as Unix ms in BIGINT) so that one row
 * mapper (`rows.ts`) serves both stores. Never edit a migration that has shipped, add one.
 */
export const kPgMigrations: readonly string[] = Object.freeze([
  // 1: organizations, keys, projects, models, training jobs and their examples, proxy request log.
  `
  CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    proxy_access INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
  );
  CREATE INDEX api_keys_org ON api_keys(org_id);
  CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL
  );
  CREATE INDEX projects_org ON projects(org_id);
  CREATE TABLE models (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    base_model TEXT NOT NULL,
    task_type TEXT NOT NULL,
    label_text TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('training', 'trained', 'failed')),
    error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  );
  CREATE INDEX models_org ON models(org_id, created_at);
  CREATE TABLE training_jobs (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    model_id TEXT NOT NULL UNIQUE REFERENCES models(id) ON DELETE CASCADE,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    options TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  );
  CREATE INDEX training_jobs_state ON training_jobs(state, seq);
  CREATE TABLE training_examples (
    model_id TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    label INTEGER NOT NULL,
    label_text TEXT NOT NULL,
    PRIMARY KEY (model_id, position)
  );
  CREATE TABLE request_log (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    stream INTEGER NOT NULL,
    status INTEGER NOT NULL,
    ttfb_ms DOUBLE PRECISION,
    total_ms DOUBLE PRECISION NOT NULL,
    tokens_in INTEGER,
    tokens_out INTEGER,
    error TEXT,
    request_body TEXT NOT NULL,
    response_body TEXT NOT NULL,
    created_at BIGINT NOT NULL
  );
  CREATE INDEX request_log_project ON request_log(project_id, id);
  `,
  // 2: per-organization limits, per-project proxy token budgets.
  `
  CREATE TABLE org_limits (
    org_id TEXT PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
    max_running_jobs INTEGER,
    max_queued_jobs INTEGER,
    requests_per_minute INTEGER
  );
  ALTER TABLE projects ADD COLUMN monthly_token_budget BIGINT;
  `,
  // 3: each project's proxy tokens per calendar month (UTC), counted from the rows the log already holds.
  `
  CREATE TABLE project_usage (
    project_id TEXT NOT NULL,
    month TEXT NOT NULL,
    tokens BIGINT NOT NULL,
    PRIMARY KEY (project_id, month)
  );
  INSERT INTO project_usage (project_id, month, tokens)
    SELECT project_id, to_char(to_timestamp(created_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM'),
      SUM(COALESCE(tokens_in, 0) + COALESCE(tokens_out, 0))
    FROM request_log GROUP BY 1, 2 HAVING SUM(COALESCE(tokens_in, 0) + COALESCE(tokens_out, 0)) > 0;
  `,
  // 4: request-log retention finds a project's rows past the age limit without reading the others.
  `
  CREATE INDEX request_log_project_created ON request_log(project_id, created_at);
  `,
  // 5: when each organization's last training job started: the job queue takes turns by it (round robin).
  `
  ALTER TABLE organizations ADD COLUMN last_job_started_at BIGINT;
  `,
  // 6: a running job's lease: who holds it and until when; an expired one is claimed by any replica.
  `
  ALTER TABLE training_jobs ADD COLUMN locked_by TEXT;
  ALTER TABLE training_jobs ADD COLUMN locked_until BIGINT;
  `,
]);

/**
 * Any number fixed for the whole product: every replica asks for the same session-level advisory lock before it
 * looks at the schema, so two replicas starting together migrate one after the other.
 */
const kMigrationLock = 0x7376_635f_6d69; // 'svc_mi'

/**
 * Brings the database to the newest schema under `pg_advisory_lock`; returns the version it ends at. Each
 * migration runs in its own transaction with its version bump, so a replica that dies half-way leaves a
 * consistent version for the next one. A replica that waited for the lock finds the work done.
 */
export async function migratePostgres(client: pg.ClientBase, migrations: readonly string[] = kPgMigrations): Promise<number> {
  await client.query('SELECT pg_advisory_lock($1)', [kMigrationLock]);
  try {
    await client.query('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_version');
    if (rows.length === 0) await client.query('INSERT INTO schema_version (version) VALUES (0)');
    let version = rows[0]?.version ?? 0;
    if (version > migrations.length) {
      throw new Error(
        `the database was written by a newer svc-classify (schema ${version}, this build knows ${migrations.length})`,
      );
    }
    for (; version < migrations.length; version += 1) {
      await client.query('BEGIN');
      try {
        await client.query(migrations[version]);
        await client.query('UPDATE schema_version SET version = $1', [version + 1]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    }
    return version;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [kMigrationLock]);
  }
}
