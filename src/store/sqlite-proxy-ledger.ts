import type Database from 'better-sqlite3';

import { bodiesUnderCap, grantable, type TokenLedger, type TokenReservation, type TokenReservationRequest } from './proxy-ledger.js';

/**
 * The proxy ledger on the SQLite file. Each step is one IMMEDIATE transaction, so it holds the write lock from its
 * first read: two processes (or two calls) can never both see the same room in a budget.
 */
export class SqliteProxyLedger implements TokenLedger {
  readonly #db: Database.Database;
  readonly #sql;

  constructor(db: Database.Database) {
    this.#db = db;
    const p = (sql: string) => db.prepare(sql);
    this.#sql = {
      usage: p('SELECT tokens FROM project_usage WHERE project_id = ? AND month = ?'),
      dropLapsed: p('DELETE FROM token_reservations WHERE project_id = ? AND expires_at <= ?'),
      held: p('SELECT COALESCE(SUM(tokens), 0) AS n FROM token_reservations WHERE project_id = ? AND month = ? AND expires_at > ?'),
      insert: p('INSERT INTO token_reservations (project_id, month, tokens, expires_at) VALUES (?, ?, ?, ?)'),
      get: p('SELECT project_id, month, tokens FROM token_reservations WHERE id = ? AND expires_at > ?'),
      grow: p('UPDATE token_reservations SET tokens = tokens + ?, expires_at = ? WHERE id = ?'),
      release: p('DELETE FROM token_reservations WHERE id = ?'),
      storedBytes: p('SELECT bytes FROM request_log_bytes WHERE project_id = ?'),
      addBytes: p(
        `INSERT INTO request_log_bytes (project_id, bytes) VALUES (?, ?)
         ON CONFLICT (project_id) DO UPDATE SET bytes = bytes + excluded.bytes`,
      ),
    };
  }

  async reserve(r: TokenReservationRequest): Promise<TokenReservation> {
    return this.#db
      .transaction((): TokenReservation => {
        this.#sql.dropLapsed.run(r.projectId, r.at);
        const used = (this.#sql.usage.get(r.projectId, r.month) as { tokens: number } | undefined)?.tokens ?? 0;
        const held = (this.#sql.held.get(r.projectId, r.month, r.at) as { n: number }).n;
        const granted = grantable(r.want, r.budget, used, held);
        if (granted === 0) return { id: null, granted, used, held };
        const id = Number(this.#sql.insert.run(r.projectId, r.month, granted, r.expiresAt).lastInsertRowid);
        return { id, granted, used, held };
      })
      .immediate();
  }

  async extend(id: number, r: Omit<TokenReservationRequest, 'projectId' | 'month'>): Promise<number> {
    return this.#db
      .transaction((): number => {
        const own = this.#sql.get.get(id, r.at) as { project_id: string; month: string; tokens: number } | undefined;
        if (own === undefined) return 0;
        const used = (this.#sql.usage.get(own.project_id, own.month) as { tokens: number } | undefined)?.tokens ?? 0;
        // `held` includes this reservation's own tokens: they are already its.
        const held = (this.#sql.held.get(own.project_id, own.month, r.at) as { n: number }).n;
        const granted = grantable(r.want, r.budget, used, held);
        this.#sql.grow.run(granted, r.expiresAt, id);
        return granted;
      })
      .immediate();
  }

  async release(id: number): Promise<void> {
    this.#sql.release.run(id);
  }

  /** Inside `insertRequestLog`'s transaction: gives the reservation back. */
  releaseInTransaction(id: number | null | undefined): void {
    if (id !== null && id !== undefined) this.#sql.release.run(id);
  }

  /** Inside `insertRequestLog`'s transaction: the bodies the row keeps under the project's cap, counted. */
  keepBodies(projectId: string, requestBody: string, responseBody: string, cap: number | undefined) {
    const stored = (this.#sql.storedBytes.get(projectId) as { bytes: number } | undefined)?.bytes ?? 0;
    const kept = bodiesUnderCap(requestBody, responseBody, stored, cap);
    if (kept.bytes > 0) this.#sql.addBytes.run(projectId, kept.bytes);
    return kept;
  }

  /** Inside a prune's transaction: the bytes of the rows it deleted no longer count. */
  forgetBodies(projectId: string, bytes: number): void {
    if (bytes > 0) this.#sql.addBytes.run(projectId, -bytes);
  }
}
