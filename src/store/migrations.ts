import type Database from 'better-sqlite3';

/**
 * Numbered schema migrations. Each runs once, in order, inside a transaction,
 * and bumps `schema_version`; never edit a migration that has shipped, add one.
 */
export const kMigrations: readonly string[] = Object.freeze([
  // 1: organizations, keys, projects, models, training jobs and their examples, proxy request log.
  `
  CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    proxy_access INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
  );
  CREATE INDEX api_keys_org ON api_keys(org_id);
  CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL
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
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX models_org ON models(org_id, created_at);
  -- seq orders the queue: a requeued job keeps its place ahead of newer ones.
  CREATE TABLE training_jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    model_id TEXT NOT NULL UNIQUE REFERENCES models(id) ON DELETE CASCADE,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    options TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX training_jobs_state ON training_jobs(state, seq);
  CREATE TABLE training_examples (
    model_id TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    label INTEGER NOT NULL,
    label_text TEXT NOT NULL,
    PRIMARY KEY (model_id, position)
  ) WITHOUT ROWID;
  CREATE TABLE request_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    stream INTEGER NOT NULL,
    status INTEGER NOT NULL,
    ttfb_ms REAL,
    total_ms REAL NOT NULL,
    tokens_in INTEGER,
    tokens_out INTEGER,
    error TEXT,
    request_body TEXT NOT NULL,
    response_body TEXT NOT NULL,
    created_at INTEGER NOT NULL
  );
  CREATE INDEX request_log_project ON request_log(project_id, id);
  `,
  // 2: per-organization limits set by the operator (null: the service default), per-project proxy token budgets.
  // (Its column list has the shape of migration 1's tables: plain DDL, nothing to share.)
  `
  CREATE TABLE org_limits (
    org_id TEXT PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
    max_running_jobs INTEGER,
    max_queued_jobs INTEGER,
    requests_per_minute INTEGER
  );
  ALTER TABLE projects ADD COLUMN monthly_token_budget INTEGER;
  `,
  // 3: each project's proxy tokens per calendar month (UTC), kept apart from the request log so that pruning the
  // log never gives a project its budget back; counted from the rows the log already holds.
  `
  CREATE TABLE project_usage (
    project_id TEXT NOT NULL,
    month TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (project_id, month)
  ) WITHOUT ROWID;
  INSERT INTO project_usage (project_id, month, tokens)
    SELECT project_id, strftime('%Y-%m', created_at / 1000, 'unixepoch'), SUM(COALESCE(tokens_in, 0) + COALESCE(tokens_out, 0))
    FROM request_log GROUP BY 1, 2 HAVING SUM(COALESCE(tokens_in, 0) + COALESCE(tokens_out, 0)) > 0;
  `,
  // 4: request-log retention finds a project's rows past the age limit without reading the others.
  `
  CREATE INDEX request_log_project_created ON request_log(project_id, created_at);
  `,
  // 5: when each organization's last training job started: the job queue takes turns by it (round robin).
  `
  ALTER TABLE organizations ADD COLUMN last_job_started_at INTEGER;
  `,
  // 6: a running job's lease: who holds it and until when. A job found running at start-up was left by a dead
  // process and keeps no holder.
  `
  ALTER TABLE training_jobs ADD COLUMN locked_by TEXT;
  ALTER TABLE training_jobs ADD COLUMN locked_until INTEGER;
  `,
  // 7: request counts that every replica on a database shares (the request limits' fixed windows): a limited key's
  // count and the moment its window ends, Unix ms by the database's clock. SQLite keeps it empty: one process
  // counts in its memory.
  `
  CREATE TABLE request_counts (
    key TEXT PRIMARY KEY,
    count INTEGER NOT NULL,
    window_ends_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX request_counts_ends ON request_counts(window_ends_at);
  `,
  // 8: model files in the database, for replicas with no shared folder. A file's bytes are a blob named by their
  // SHA-256, stored once however many models hold the same file, in chunks so that no file is ever whole in memory;
  // a model's files reference blobs by hash. Only the PostgreSQL artifact store writes these tables.
  `
  CREATE TABLE artifact_blobs (
    sha256 TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    chunks INTEGER NOT NULL
  );
  CREATE TABLE artifact_chunks (
    sha256 TEXT NOT NULL REFERENCES artifact_blobs(sha256) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (sha256, position)
  ) WITHOUT ROWID;
  CREATE TABLE artifact_files (
    model TEXT NOT NULL,
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL REFERENCES artifact_blobs(sha256),
    PRIMARY KEY (model, name)
  ) WITHOUT ROWID;
  CREATE INDEX artifact_files_blob ON artifact_files(sha256);
  `,
  // 9: a job's latest training progress (JSON), written by the runner holding it, so that every replica answers
  // `/progress` of a model training elsewhere; the last one stays after the job ends.
  `
  ALTER TABLE training_jobs ADD COLUMN progress TEXT;
  `,
  // 10: model files cut at content-defined boundaries. A chunk is named by its own SHA-256 and stored once across every
  // file, so two models whose ONNX graphs differ only in their heads share the encoder's bytes; a blob becomes the
  // ordered list of its chunks. The rows of migration 8 (each blob's 1 MiB pieces) become chunks as they are, so
  // stored models read back unchanged. SQLite holds no such rows and has no SHA-256: the move is PostgreSQL's only.
  // Chunks are stored uncompressed (STORAGE EXTERNAL): pglz gains nothing on float weights and made a 90 MB put
  // three to four times slower.
  `
  ALTER TABLE artifact_chunks RENAME TO artifact_chunks_fixed;
  CREATE TABLE artifact_chunks (
    sha256 TEXT PRIMARY KEY,
    data BLOB NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE artifact_blob_chunks (
    blob TEXT NOT NULL REFERENCES artifact_blobs(sha256) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    chunk TEXT NOT NULL REFERENCES artifact_chunks(sha256),
    length INTEGER NOT NULL,
    PRIMARY KEY (blob, position)
  ) WITHOUT ROWID;
  CREATE INDEX artifact_blob_chunks_chunk ON artifact_blob_chunks(chunk);
  /* PostgreSQL only:
  ALTER TABLE artifact_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
  INSERT INTO artifact_chunks (sha256, data)
    SELECT encode(sha256(data), 'hex'), data FROM artifact_chunks_fixed ON CONFLICT (sha256) DO NOTHING;
  INSERT INTO artifact_blob_chunks (blob, position, chunk, length)
    SELECT sha256, position, encode(sha256(data), 'hex'), length(data) FROM artifact_chunks_fixed;
  */
  DROP TABLE artifact_chunks_fixed;
  `,
  // 11: requests per minute of an organization's keys together, beside the per-key rate (null: one key's rate), so
  // that a second key does not bring a second allowance.
  `
  ALTER TABLE org_limits ADD COLUMN org_requests_per_minute INTEGER;
  `,
  // 12: proxy token reservations (part of a project's monthly budget held by a call under way, lapsing if its process
  // dies), and the body bytes each log row and each project's log hold, for the per-project cap. Rows logged before
  // count their characters, a near bound of their bytes.
  `
  CREATE TABLE token_reservations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id TEXT NOT NULL,
    month TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  );
  CREATE INDEX token_reservations_project ON token_reservations(project_id, month);
  ALTER TABLE request_log ADD COLUMN body_bytes INTEGER NOT NULL DEFAULT 0;
  UPDATE request_log SET body_bytes = length(request_body) + length(response_body);
  CREATE TABLE request_log_bytes (
    project_id TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL
  ) WITHOUT ROWID;
  INSERT INTO request_log_bytes (project_id, bytes) SELECT project_id, SUM(body_bytes) FROM request_log GROUP BY project_id;
  `,
  // 13: each claim of a job takes the next lease token, and the holder's writes (heartbeat, progress, release, end)
  // name it: a runner whose lease lapsed and whose job was claimed again, by another replica or by itself, is refused.
  `
  ALTER TABLE training_jobs ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
  `,
  // 14: versions of a classifier. Its first version is its own row (classifier_id NULL); each later one is a row of its
  // own, id `<classifier>.v<n>`, with its own job, examples and hub copy, gone with the classifier. On the classifier's
  // row, live_version is the version predict uses (every model stored before is version 1 and live) and last_version
  // the highest number given, so that a deleted version's number (and hub name) is never given again.
  `
  ALTER TABLE models ADD COLUMN classifier_id TEXT REFERENCES models(id) ON DELETE CASCADE;
  ALTER TABLE models ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE models ADD COLUMN live_version INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE models ADD COLUMN last_version INTEGER NOT NULL DEFAULT 1;
  CREATE UNIQUE INDEX models_classifier_version ON models(classifier_id, version);
  `,
  // 15: storage quotas per organization (classifiers, versions per classifier, MiB; null: the service default), and
  // what each model row is charged against them (quotas.ts storedBytes). Rows stored before are charged by the same
  // rule, with its figures as they were when this shipped: options, each example twice plus 4096, plus 2 MiB.
  `
  ALTER TABLE org_limits ADD COLUMN max_models INTEGER;
  ALTER TABLE org_limits ADD COLUMN max_versions INTEGER;
  ALTER TABLE org_limits ADD COLUMN max_storage_mb INTEGER;
  ALTER TABLE models ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0;
  UPDATE models SET stored_bytes = 2097152
    + COALESCE((SELECT octet_length(options) FROM training_jobs j WHERE j.model_id = models.id), 0)
    + COALESCE((SELECT SUM(2 * (octet_length(text) + octet_length(label_text)) + 4096)
                FROM training_examples e WHERE e.model_id = models.id), 0);
  `,
  // 16: the texts a teacher (a chat model through the proxy) labels for a job, and what each call bought: a label
  // bought is kept here the moment it arrives, so a job that runs again after a restart never pays for it twice.
  // outcome is null until asked, then 'labelled', 'refused' or 'invalid'; labels are JSON (boolean, class, array).
  `
  CREATE TABLE teacher_texts (
    model_id TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    human_label TEXT,
    outcome TEXT,
    teacher_label TEXT,
    detail TEXT,
    call_number INTEGER,
    tokens_in INTEGER,
    tokens_out INTEGER,
    ms REAL,
    PRIMARY KEY (model_id, position)
  ) WITHOUT ROWID;
  `,
  // 17: shadow classifiers. A project names a classifier for one proxied model (project_shadows), and each proxied call
  // of that model leaves a row comparing the classifier's label with the chat model's (shadow_results). A result goes
  // with its request-log row (ON DELETE CASCADE): retention prunes both in one statement. Labels are JSON; agreed is
  // 1, 0, or null when either label is missing; classifier_id is not a reference, so that a deleted classifier's
  // results stay and later calls record the error.
  `
  CREATE TABLE project_shadows (
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    classifier_id TEXT NOT NULL,
    text_pointer TEXT,
    label_rule TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, model)
  ) WITHOUT ROWID;
  CREATE TABLE shadow_results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id TEXT NOT NULL,
    request_id INTEGER NOT NULL REFERENCES request_log(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    classifier_id TEXT NOT NULL,
    chat_label TEXT,
    classifier_label TEXT,
    agreed INTEGER,
    classifier_ms REAL,
    error TEXT,
    tokens_in INTEGER,
    tokens_out INTEGER,
    chat_ms REAL NOT NULL,
    created_at INTEGER NOT NULL
  );
  CREATE INDEX shadow_results_project ON shadow_results(project_id, created_at);
  CREATE INDEX shadow_results_request ON shadow_results(request_id);
  `,
  // 18: the base models replicas registered (name -> sha256 of the folder's files), as the first replica to register
  // each name recorded it: a replica whose files differ under a name refuses to start (base-model-ledger.ts).
  `
  CREATE TABLE base_models (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    dir TEXT NOT NULL,
    recorded_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
]);

/**
 * Brings the database to the newest schema; returns the version it ends at. All of it runs in one IMMEDIATE
 * transaction: a second process opening a fresh directory at the same time waits for the write lock (the
 * connection's busy timeout), then reads the version the first one left and has nothing to do.
 */
export function migrate(db: Database.Database): number {
  const run = db.transaction((): number => {
    db.exec('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
    const row = db.prepare('SELECT version FROM schema_version').get() as { version: number } | undefined;
    if (row === undefined) db.prepare('INSERT INTO schema_version (version) VALUES (0)').run();
    let version = row?.version ?? 0;
    if (version > kMigrations.length) {
      throw new Error(`the data directory was written by a newer svc-classify (schema ${version}, this build knows ${kMigrations.length})`);
    }
    const bump = db.prepare('UPDATE schema_version SET version = ?');
    for (; version < kMigrations.length; version += 1) {
      db.exec(kMigrations[version]);
      bump.run(version + 1);
    }
    return version;
  });
  return run.immediate();
}
