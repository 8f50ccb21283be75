// The PostgreSQL store's statement helpers, shared by its parts (postgres.ts, postgres-job-queue.ts,
// postgres-request-log.ts): rows, one row or a count from a statement, on the pool or on a transaction's client.
import type pg from 'pg';

/** Where a statement runs: the pool (a connection of its own), or the client a transaction holds. */
export type Queryable = pg.ClientBase | pg.Pool;

export async function queryRows<T>(client: Queryable, sql: string, params: unknown[]): Promise<T[]> {
  return (await client.query(sql, params)).rows as T[];
}

export async function queryOne<T>(client: Queryable, sql: string, params: unknown[]): Promise<T | undefined> {
  return (await queryRows<T>(client, sql, params))[0];
}

export async function queryCount(client: Queryable, sql: string, params: unknown[]): Promise<number> {
  return (await queryOne<{ n: number }>(client, sql, params))!.n;
}

/** Locks the organization's row (a missing organization locks nothing), until the transaction ends. */
export async function lockOrganization(client: pg.ClientBase, orgId: string): Promise<void> {
  await client.query('SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [orgId]);
}
