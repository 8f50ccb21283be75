import type pg from 'pg';

import { requireOptional } from '../optional-deps.js';
import { kMigrations } from './migrations.js';
import { asUnreachable } from './unreachable.js';

/**
 * SQLite's dialect words and their PostgreSQL translations, in the order applied. The schema is written once, in
 * `migrations.ts`; PostgreSQL runs the same migrations, number for number, through this table, so schema version N
 * means the same tables on both backends and one row mapper (`rows.ts`) serves both. SQLite's INTEGER is 64-bit:
 * BIGINT here (times are Unix ms). A migration that needs a word not listed fails the PostgreSQL store tests.
 */
const kDialect: readonly (readonly [RegExp, string])[] = Object.freeze([
  // Statements in a `/* PostgreSQL only: ... */` comment run here and nowhere else: SQLite skips comments. For tables
  // only a PostgreSQL store writes (SQLite holds no rows to move) and functions SQLite lacks (sha256). First, so that
  // the words inside are translated too.
  [/\/\* PostgreSQL only:([^*]*)\*\//g, '$1'],
  [/\bINTEGER PRIMARY KEY AUTOINCREMENT\b/g, 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY'],
  [/\bINTEGER\b/g, 'BIGINT'],
  [/\bREAL\b/g, 'DOUBLE PRECISION'],
  [/\bBLOB\b/g, 'BYTEA'],
  [/\)\s*WITHOUT ROWID;/g, ');'],
  [/strftime\('%Y-%m', (\w+) \/ 1000, 'unixepoch'\)/g, "to_char(to_timestamp($1 / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM')"],
]);

/** One SQLite migration in PostgreSQL's dialect. */
export function toPostgres(sql: string): string {
  return kDialect.reduce((text, [word, translation]) => text.replace(word, translation), sql);
}

/** The migrations of `migrations.ts`, in PostgreSQL's dialect. */
export const kPgMigrations: readonly string[] = Object.freeze(kMigrations.map(toPostgres));

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
      throw new Error(`the database was written by a newer svc-classify (schema ${version}, this build knows ${migrations.length})`);
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

// BIGINT columns (Unix ms, ids, COUNT(*), file sizes) arrive as strings by default; every one of ours fits a double
// exactly.
function typesOf(driver: typeof pg): { getTypeParser: typeof pg.types.getTypeParser } {
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === driver.types.builtins.INT8
        ? (value: string) => Number(value)
        : driver.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
}

/**
 * A pool of `max` connections to `url`, the database migrated to the newest schema (one replica at a time): how the
 * record store and the artifact store both open the database they share.
 */
export async function openMigratedPool(url: string, max: number): Promise<pg.Pool> {
  // pg is an optional dependency, loaded only when a database is named (SQLite-only installs may lack it).
  const driver = requireOptional<typeof pg>('pg');
  const pool = new driver.Pool({ connectionString: url, max, types: typesOf(driver) });
  // An idle connection the server dropped must not take the process down with it.
  pool.on('error', () => {});
  try {
    const client = await pool.connect();
    try {
      await migratePostgres(client);
    } finally {
      client.release();
    }
  } catch (error) {
    await pool.end();
    throw error; // at start-up the driver's own words say best what could not be reached
  }
  guardUnreachable(pool);
  return pool;
}

/** Runs `work` in one transaction on one of the pool's connections: rolled back if it throws. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw asUnreachable(error);
  } finally {
    client.release();
  }
}

/**
 * Every statement the pool runs, and every connection it hands out, fails with SvcError('overloaded') and a
 * retry-after while the server cannot be reached (see unreachable.ts): one place instead of one per call site.
 */
function guardUnreachable(pool: pg.Pool): void {
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => Promise<pg.PoolClient> | undefined;
  const rethrow = (error: unknown) => {
    throw asUnreachable(error);
  };
  pool.query = ((...args: unknown[]) => query(...args).catch(rethrow)) as typeof pool.query;
  // The pool's own query() connects with a callback: that form passes through untouched.
  pool.connect = ((...args: unknown[]) => (args.length > 0 ? connect(...args) : connect()!.catch(rethrow))) as typeof pool.connect;
}
