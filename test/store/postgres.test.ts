import pg from 'pg';
import { describe, expect, it } from 'vitest';

import { PostgresStore } from '../../src/store/postgres.js';
import { kPgMigrations, toPostgres } from '../../src/store/postgres-migrations.js';
import { kMigrations } from '../../src/store/migrations.js';
import { usePostgres } from '../_support/postgres.js';
import { storeContract } from './contract.js';
import type { StoreBackend } from './contract-fixtures.js';
import { versionsContract } from './versions-contract.js';

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
});
