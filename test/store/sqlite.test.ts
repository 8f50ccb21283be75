import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';

import { kDatabaseFile, SqliteStore } from '../../src/store/sqlite.js';
import { kPruneLogSql } from '../../src/store/sqlite-request-log.js';
import { kMigrations } from '../../src/store/migrations.js';
import { storedBytes } from '../../src/store/quotas.js';
import { storeContract } from './contract.js';
import type { StoreBackend } from './contract-fixtures.js';
import { versionsContract } from './versions-contract.js';
import { baseModelsContract } from './base-models-contract.js';

const dirs: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const backend: StoreBackend = {
  create: async () => tempDir(),
  open: async (dir) => SqliteStore.open(dir),
  errors: {
    duplicateOrganization: 'UNIQUE constraint failed: organizations.id',
    projectOfUnknownOrganization: 'FOREIGN KEY constraint failed',
    limitsOfUnknownOrganization: 'FOREIGN KEY constraint failed',
  },
};
storeContract('SqliteStore', backend);
versionsContract('SqliteStore', backend);
baseModelsContract('SqliteStore', backend);

describe('SqliteStore on its file', () => {
  let dir: string;
  let store: SqliteStore;
  beforeEach(() => {
    dir = tempDir();
    store = SqliteStore.open(dir);
  });
  afterEach(async () => {
    await store.close();
  });

  it('creates the file in WAL mode at the newest schema, and reopening keeps the data', async () => {
    expect(store.schemaVersion()).toBe(kMigrations.length);
    await store.createOrganization('acme');
    await store.close();
    const db = new Database(join(dir, kDatabaseFile), { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.prepare('SELECT version FROM schema_version').all()).toEqual([{ version: kMigrations.length }]);
    db.close();
    store = SqliteStore.open(dir);
    expect((await store.listOrganizations()).map((o) => o.id)).toEqual(['acme']);
  });

  it('refuses a data directory written by a newer schema', async () => {
    await store.close();
    const db = new Database(join(dir, kDatabaseFile));
    db.prepare('UPDATE schema_version SET version = 99').run();
    db.close();
    expect(() => SqliteStore.open(dir)).toThrow(
      `the data directory was written by a newer svc-classify (schema 99, this build knows ${kMigrations.length})`,
    );
    store = SqliteStore.open(tempDir());
  });

  it('counts the usage a data directory logged before the counter existed', async () => {
    // A directory at schema 2, the last one without the counter, with three logged calls.
    const old = tempDir();
    const db = new Database(join(old, kDatabaseFile));
    db.exec('CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version (version) VALUES (2);');
    db.exec(kMigrations[0]);
    db.exec(kMigrations[1]);
    const at = Date.UTC(2026, 10, 15);
    const insert = db.prepare(
      `INSERT INTO request_log (project_id, key_id, provider, model, stream, status, ttfb_ms, total_ms, tokens_in,
         tokens_out, error, request_body, response_body, created_at) VALUES (?, 'key_1', 'provider-a', 'm', 0, 200, 1, 2, ?, ?, NULL, '{}', '{}', ?)`,
    );
    insert.run('proj_1', 4, 5, at);
    insert.run('proj_1', 7, null, at);
    insert.run('proj_1', null, null, at);
    db.close();
    const upgraded = SqliteStore.open(old);
    expect(upgraded.schemaVersion()).toBe(kMigrations.length);
    expect(await upgraded.getProjectUsage('proj_1', '2026-11')).toBe(16);
    await upgraded.close();
  });

  it('makes every model of a directory from before versions its version 1, live', async () => {
    const old = tempDir();
    const db = new Database(join(old, kDatabaseFile));
    const versions = kMigrations.findIndex((sql) => sql.includes('live_version'));
    db.exec(`CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version (version) VALUES (${versions});`);
    for (const sql of kMigrations.slice(0, versions)) db.exec(sql);
    db.exec("INSERT INTO organizations (id, created_at) VALUES ('acme', 1)");
    db.exec(`INSERT INTO models (id, org_id, base_model, task_type, label_text, status, created_at, updated_at)
      VALUES ('svc-small-0123456789ab', 'acme', 'svc-small', 'binary-classification', 'positive', 'trained', 1, 2)`);
    db.close();
    const upgraded = SqliteStore.open(old);
    expect((await upgraded.versions.list('svc-small-0123456789ab')).map((v) => [v.id, v.version, v.live, v.status])).toEqual([
      ['svc-small-0123456789ab', 1, true, 'trained'],
    ]);
    expect(
      (await upgraded.versions.add('svc-small-0123456789ab', { ...(await upgraded.getModel('svc-small-0123456789ab'))! }, [], {})).version
        ?.id,
    ).toBe('svc-small-0123456789ab.v2');
    await upgraded.close();
  });

  it('charges the models of a directory from before storage quotas by the rule new rows are charged', async () => {
    const old = tempDir();
    const db = new Database(join(old, kDatabaseFile));
    const quotas = kMigrations.findIndex((sql) => sql.includes('stored_bytes'));
    db.exec(`CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version (version) VALUES (${quotas});`);
    for (const sql of kMigrations.slice(0, quotas)) db.exec(sql);
    db.exec("INSERT INTO organizations (id, created_at) VALUES ('acme', 1)");
    db.exec(`INSERT INTO models (id, org_id, base_model, task_type, label_text, status, created_at, updated_at)
      VALUES ('svc-small-0123456789ab', 'acme', 'svc-small', 'binary-classification', 'positive', 'trained', 1, 2)`);
    db.exec(
      `INSERT INTO training_jobs (model_id, state, options, created_at, updated_at) VALUES ('svc-small-0123456789ab', 'done', '{"a":1}', 1, 2)`,
    );
    db.exec(`INSERT INTO training_examples (model_id, position, text, label, label_text)
      VALUES ('svc-small-0123456789ab', 0, 'été', 1, 'positive'), ('svc-small-0123456789ab', 1, 'bad', 0, 'positive')`);
    db.close();
    const upgraded = SqliteStore.open(old);
    const charged = storedBytes(
      [
        { text: 'été', label: true, label_text: 'positive' },
        { text: 'bad', label: false, label_text: 'positive' },
      ],
      '{"a":1}',
    );
    expect(charged).toBe(2 * 1024 * 1024 + 7 + 2 * (5 + 8 + 3 + 8) + 2 * 4096);
    const next = { ...(await upgraded.getModel('svc-small-0123456789ab'))!, id: 'svc-small-ba9876543210' };
    expect((await upgraded.createModelWithJob(next, [], {}, { maxQueuedJobs: 10, maxStoredBytes: charged })).quota).toEqual({
      quota: 'storage',
      used: charged,
      needed: 2 * 1024 * 1024 + 2,
      limit: charged,
    });
    await upgraded.close();
  });

  it("prunes through the request log's indexes, never a full scan", async () => {
    // Each half of the DELETE walks an index on the project: no full scan of the log.
    const db = new Database(join(dir, kDatabaseFile), { readonly: true });
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${kPruneLogSql}`).all('proj_1', 1, 'proj_1', 1, 1) as { detail: string }[];
    db.close();
    expect(plan.map((step) => step.detail).filter((detail) => detail.startsWith('SEARCH request_log USING'))).toEqual([
      'SEARCH request_log USING INTEGER PRIMARY KEY (rowid=?)',
      'SEARCH request_log USING COVERING INDEX request_log_project_created (project_id=? AND created_at<?)',
      'SEARCH request_log USING COVERING INDEX request_log_project (project_id=? AND id<?)',
    ]);
  });
});
