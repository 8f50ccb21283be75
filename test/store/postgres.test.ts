import pg from 'pg';
import { describe, expect, it } from 'vitest';

import { PostgresStore } from '../../src/store/postgres.js';
import { kPgMigrations, toPostgres } from '../../src/store/postgres-migrations.js';
import { kMigrations } from '../../src/store/migrations.js';
import { storedBytes } from '../../src/store/quotas.js';
import { usePostgres } from '../_support/postgres.js';
import { storeContract } from './contract.js';
import type { StoreBackend } from './contract-fixtures.js';
import { versionsContract } from './versions-contract.js';
import { baseModelsContract } from './base-models-contract.js';

const server = usePostgres();

const backend: StoreBackend = {
  create: () => server.cluster.createDatabase(),
  open: (url) => PostgresStore.open(url),
  errors: {
    duplicateOrganization: 'duplicate key value violates unique constraint "organizations_pkey"',
    projectOfUnknownOrganization: 'insert or update on table "projects" violates foreign key constraint "projects_org_id_fkey"',
    limitsOfUnknownOrganization: 'insert or update on table "org_limits" violates foreign key constraint "org_limits_org_id_fkey"',
  },
};
storeContract('PostgresStore', backend);
versionsContract('PostgresStore', backend);
baseModelsContract('PostgresStore', backend);

async function query<T>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

describe('PostgresStore on its database', () => {
  it("runs the SQLite store's migrations in its own dialect, and reopening keeps the data", async () => {
    expect(kPgMigrations.length).toBe(kMigrations.length);
    expect(kPgMigrations.filter((sql) => /AUTOINCREMENT|WITHOUT ROWID|strftime|\bREAL\b|\bINTEGER\b/.test(sql))).toEqual([]);
    // What a `/* PostgreSQL only: */` comment holds runs here, translated like the rest; SQLite skips it.
    expect(toPostgres('CREATE TABLE t (a INTEGER);\n/* PostgreSQL only:\nINSERT INTO t SELECT length(b) FROM u;\n*/\n')).toBe(
      'CREATE TABLE t (a BIGINT);\n\nINSERT INTO t SELECT length(b) FROM u;\n\n',
    );
    expect(kPgMigrations.filter((sql) => sql.includes('PostgreSQL only'))).toEqual([]);
    const lease = kMigrations.findIndex((sql) => sql.includes('locked_until'));
    expect(kPgMigrations[lease]).toBe(kMigrations[lease].replace('locked_until INTEGER', 'locked_until BIGINT'));
    const url = await server.cluster.createDatabase();
    const store = await PostgresStore.open(url);
    expect(await store.schemaVersion()).toBe(kMigrations.length);
    await store.createOrganization('acme');
    await store.close();
    const again = await PostgresStore.open(url);
    expect((await again.listOrganizations()).map((o) => o.id)).toEqual(['acme']);
    await again.close();
  });

  it('migrates one replica at a time: eight stores opening one fresh database at once all come up', async () => {
    const url = await server.cluster.createDatabase();
    const stores = await Promise.all(Array.from({ length: 8 }, () => PostgresStore.open(url)));
    expect(await Promise.all(stores.map((s) => s.schemaVersion()))).toEqual(Array(8).fill(kMigrations.length));
    await stores[0].createOrganization('acme');
    expect((await stores[7].listOrganizations()).map((o) => o.id)).toEqual(['acme']);
    await Promise.all(stores.map((s) => s.close()));
    expect(await query(url, 'SELECT version FROM schema_version')).toEqual([{ version: kMigrations.length }]);
  });

  it('refuses a database written by a newer schema', async () => {
    const url = await server.cluster.createDatabase();
    await (await PostgresStore.open(url)).close();
    await query(url, 'UPDATE schema_version SET version = 99');
    await expect(PostgresStore.open(url)).rejects.toThrow(
      `the database was written by a newer svc-classify (schema 99, this build knows ${kMigrations.length})`,
    );
  });

  it('counts the usage a database logged before the counter existed', async () => {
    const url = await server.cluster.createDatabase();
    await query(
      url,
      `CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (2);
      ${kPgMigrations[0]} ${kPgMigrations[1]}`,
    );
    const at = Date.UTC(2026, 10, 15);
    await query(
      url,
      `INSERT INTO request_log (project_id, key_id, provider, model, stream, status, ttfb_ms, total_ms,
      tokens_in, tokens_out, error, request_body, response_body, created_at) VALUES
      ('proj_1', 'key_1', 'provider-a', 'm', 0, 200, 1, 2, 4, 5, NULL, '{}', '{}', ${at}),
      ('proj_1', 'key_1', 'provider-a', 'm', 0, 200, 1, 2, 7, NULL, NULL, '{}', '{}', ${at}),
      ('proj_1', 'key_1', 'provider-a', 'm', 0, 200, 1, 2, NULL, NULL, NULL, '{}', '{}', ${at})`,
    );
    const store = await PostgresStore.open(url);
    expect(await store.schemaVersion()).toBe(kMigrations.length);
    expect(await store.getProjectUsage('proj_1', '2026-11')).toBe(16);
    await store.close();
  });

  it('charges the models of a database from before storage quotas by the rule new rows are charged', async () => {
    const url = await server.cluster.createDatabase();
    const quotas = kMigrations.findIndex((sql) => sql.includes('stored_bytes'));
    await query(
      url,
      `CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (${quotas});
      ${kPgMigrations.slice(0, quotas).join('\n')}
      INSERT INTO organizations (id, created_at) VALUES ('acme', 1);
      INSERT INTO models (id, org_id, base_model, task_type, label_text, status, created_at, updated_at)
        VALUES ('svc-small-0123456789ab', 'acme', 'svc-small', 'binary-classification', 'positive', 'trained', 1, 2);
      INSERT INTO training_jobs (model_id, state, options, created_at, updated_at)
        VALUES ('svc-small-0123456789ab', 'done', '{"a":1}', 1, 2);
      INSERT INTO training_examples (model_id, position, text, label, label_text)
        VALUES ('svc-small-0123456789ab', 0, 'été', 1, 'positive'), ('svc-small-0123456789ab', 1, 'bad', 0, 'positive');`,
    );
    const store = await PostgresStore.open(url);
    const charged = storedBytes(
      [
        { text: 'été', label: true, label_text: 'positive' },
        { text: 'bad', label: false, label_text: 'positive' },
      ],
      '{"a":1}',
    );
    expect(charged).toBe(2 * 1024 * 1024 + 7 + 2 * (5 + 8 + 3 + 8) + 2 * 4096);
    const next = { ...(await store.getModel('svc-small-0123456789ab'))!, id: 'svc-small-ba9876543210' };
    expect((await store.createModelWithJob(next, [], {}, { maxQueuedJobs: 10, maxStoredBytes: charged })).quota).toEqual({
      quota: 'storage',
      used: charged,
      needed: 2 * 1024 * 1024 + 2,
      limit: charged,
    });
    await store.close();
  });
});
