import type pg from 'pg';

import { inTransaction } from './postgres-migrations.js';
import { bodiesUnderCap, grantable, type TokenLedger, type TokenReservation, type TokenReservationRequest } from './proxy-ledger.js';

const kSql = Object.freeze({
  // Every step that reads a project's room locks its month's usage row first (made if missing), so replicas
  // reserving at once take turns per project; `insertRequestLog` takes the same lock when it adds tokens.
  ensureUsage: `INSERT INTO project_usage (project_id, month, tokens) VALUES ($1, $2, 0) ON CONFLICT (project_id, month) DO NOTHING`,
  lockUsage: 'SELECT tokens FROM project_usage WHERE project_id = $1 AND month = $2 FOR UPDATE',
  dropLapsed: 'DELETE FROM token_reservations WHERE project_id = $1 AND expires_at <= $2',
  held: 'SELECT COALESCE(SUM(tokens), 0) AS n FROM token_reservations WHERE project_id = $1 AND month = $2 AND expires_at > $3',
  insert: 'INSERT INTO token_reservations (project_id, month, tokens, expires_at) VALUES ($1, $2, $3, $4) RETURNING id',
  get: 'SELECT project_id, month FROM token_reservations WHERE id = $1 AND expires_at > $2',
  grow: 'UPDATE token_reservations SET tokens = tokens + $1, expires_at = $2 WHERE id = $3',
  release: 'DELETE FROM token_reservations WHERE id = $1',
  lockBytes: `INSERT INTO request_log_bytes (project_id, bytes) VALUES ($1, 0)
    ON CONFLICT (project_id) DO UPDATE SET bytes = request_log_bytes.bytes RETURNING bytes`,
  addBytes: 'UPDATE request_log_bytes SET bytes = bytes + $2 WHERE project_id = $1',
});

/** The proxy ledger on PostgreSQL: each step one transaction under the project's usage-row lock. */
export class PostgresProxyLedger implements TokenLedger {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async reserve(r: TokenReservationRequest): Promise<TokenReservation> {
    return inTransaction(this.#pool, async (client) => {
      const used = await lockUsage(client, r.projectId, r.month);
      await client.query(kSql.dropLapsed, [r.projectId, r.at]);
      const held = await heldTokens(client, r.projectId, r.month, r.at);
      const granted = grantable(r.want, r.budget, used, held);
      if (granted === 0) return { id: null, granted, used, held };
      const { rows } = await client.query<{ id: number }>(kSql.insert, [r.projectId, r.month, granted, r.expiresAt]);
      return { id: Number(rows[0].id), granted, used, held };
    });
  }

  async extend(id: number, r: Omit<TokenReservationRequest, 'projectId' | 'month'>): Promise<number> {
    const own = (await this.#pool.query<{ project_id: string; month: string }>(kSql.get, [id, r.at])).rows[0];
    if (own === undefined) return 0;
    return inTransaction(this.#pool, async (client) => {
      const used = await lockUsage(client, own.project_id, own.month);
      const held = await heldTokens(client, own.project_id, own.month, r.at);
      const granted = grantable(r.want, r.budget, used, held);
      const grown = await client.query(kSql.grow, [granted, r.expiresAt, id]);
      return (grown.rowCount ?? 0) === 0 ? 0 : granted;
    });
  }

  async release(id: number): Promise<void> {
    await this.#pool.query(kSql.release, [id]);
  }

  /** Inside `insertRequestLog`'s transaction, after the usage is added: gives the reservation back. */
  async releaseInTransaction(client: pg.ClientBase, id: number | null | undefined): Promise<void> {
    if (id !== null && id !== undefined) await client.query(kSql.release, [id]);
  }

  /** Inside `insertRequestLog`'s transaction: the bodies the row keeps under the project's cap, counted. */
  async keepBodies(client: pg.ClientBase, projectId: string, requestBody: string, responseBody: string, cap: number | undefined) {
    const { rows } = await client.query<{ bytes: number }>(kSql.lockBytes, [projectId]);
    const kept = bodiesUnderCap(requestBody, responseBody, Number(rows[0].bytes), cap);
    if (kept.bytes > 0) await client.query(kSql.addBytes, [projectId, kept.bytes]);
    return kept;
  }

  /** Inside a prune's transaction: the bytes of the rows it deleted no longer count. */
  async forgetBodies(client: pg.ClientBase, projectId: string, bytes: number): Promise<void> {
    if (bytes > 0) await client.query(kSql.addBytes, [projectId, -bytes]);
  }
}

async function lockUsage(client: pg.ClientBase, projectId: string, month: string): Promise<number> {
  await client.query(kSql.ensureUsage, [projectId, month]);
  const { rows } = await client.query<{ tokens: number }>(kSql.lockUsage, [projectId, month]);
  return Number(rows[0].tokens);
}

async function heldTokens(client: pg.ClientBase, projectId: string, month: string, at: number): Promise<number> {
  const { rows } = await client.query<{ n: number }>(kSql.held, [projectId, month, at]);
  return Number(rows[0].n);
}
