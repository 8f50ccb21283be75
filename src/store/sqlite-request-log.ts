// The SQLite store's proxy request log: a call's row with its tokens added to the project's monthly usage, the
// pages the dashboard reads, and retention's pruning. SqliteStore forwards the Store's request-log methods here
// (sqlite.ts); the PostgreSQL store's twin is postgres-request-log.ts.
import type Database from 'better-sqlite3';

import type { RequestLogWrite } from './proxy-ledger.js';
import { type LogPreviewRow, type LogRow, logPageSql, logRangeParams, toLog, toLogPage } from './rows.js';
import type { SqliteProxyLedger } from './sqlite-proxy-ledger.js';
import { rowTokens, usageMonth } from './types.js';
import type { Millis, RequestLogPage, RequestLogRange, RequestLogRow } from './types.js';

/**
 * One retention batch: a project's rows too old, or at or below the id of the newest row it no longer keeps.
 * Exported for the test that checks its query plan.
 */
export const kPruneLogSql = `DELETE FROM request_log WHERE id IN (
  SELECT id FROM request_log WHERE project_id = ? AND created_at < ?
  UNION SELECT id FROM request_log WHERE project_id = ? AND id <= ?
  LIMIT ?)`;

/**
 * The proxy's request log on the SQLite file (see the Store's request-log methods in `types.ts`). A write and a
 * prune each run in one IMMEDIATE transaction with the proxy ledger's step, so the usage and the stored body bytes
 * never drift from the rows.
 */
export class SqliteRequestLog {
  readonly #db: Database.Database;
  readonly #ledger: SqliteProxyLedger;
  readonly #sql;

  constructor(db: Database.Database, ledger: SqliteProxyLedger) {
    this.#db = db;
    this.#ledger = ledger;
    const p = (sql: string) => db.prepare(sql);
    this.#sql = {
      insertLog: p(
        `INSERT INTO request_log (project_id, key_id, provider, model, stream, status, ttfb_ms, total_ms,
           tokens_in, tokens_out, error, request_body, response_body, created_at, body_bytes)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      addUsage: p(
        `INSERT INTO project_usage (project_id, month, tokens) VALUES (?, ?, ?)
         ON CONFLICT (project_id, month) DO UPDATE SET tokens = tokens + excluded.tokens`,
      ),
      getUsage: p('SELECT tokens FROM project_usage WHERE project_id = ? AND month = ?'),
      listLog: p('SELECT * FROM request_log WHERE project_id = ? AND id < ? ORDER BY id DESC LIMIT ?'),
      listLogPage: p(logPageSql({ project: '@project', before: '@before', limit: '@limit', maxBytes: '@maxBytes', chars: '@chars' })),
      getLog: p('SELECT * FROM request_log WHERE project_id = ? AND id = ?'),
      readLogRange: p(
        `SELECT * FROM request_log WHERE project_id = @project AND id > @afterId AND created_at >= @since AND created_at < @until
           AND status BETWEEN 200 AND 299 AND (@model IS NULL OR model = @model) ORDER BY id LIMIT @limit`,
      ),
      logProjects: p('SELECT DISTINCT project_id FROM request_log ORDER BY project_id'),
      // The oldest row the project keeps by count: everything at or below the next id goes.
      nthNewestLog: p('SELECT id FROM request_log WHERE project_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?'),
      // The deleted rows' body bytes leave the project's count (see sqlite-proxy-ledger.ts).
      pruneLog: p(`${kPruneLogSql} RETURNING body_bytes`),
    };
  }

  async insertRequestLog(r: Omit<RequestLogRow, 'id'>, write: RequestLogWrite = {}): Promise<number> {
    // One transaction: the usage counter never misses a logged call, nor counts one twice, and the call's
    // reservation is given back in the same step that counts its tokens.
    return this.#db
      .transaction(() => {
        const kept = this.#ledger.keepBodies(r.projectId, r.requestBody, r.responseBody, write.maxProjectBodyBytes);
        const info = this.#sql.insertLog.run(
          r.projectId,
          r.keyId,
          r.provider,
          r.model,
          r.stream ? 1 : 0,
          r.status,
          r.ttfbMs,
          r.totalMs,
          r.tokensIn,
          r.tokensOut,
          r.error,
          kept.requestBody,
          kept.responseBody,
          r.createdAt,
          kept.bytes,
        );
        const tokens = rowTokens(r);
        if (tokens > 0) this.#sql.addUsage.run(r.projectId, usageMonth(r.createdAt), tokens);
        this.#ledger.releaseInTransaction(write.reservationId);
        return Number(info.lastInsertRowid);
      })
      .immediate();
  }

  async getProjectUsage(projectId: string, month: string): Promise<number> {
    return (this.#sql.getUsage.get(projectId, month) as { tokens: number } | undefined)?.tokens ?? 0;
  }

  async listRequestLog(projectId: string, options: { limit: number; before?: number }): Promise<RequestLogRow[]> {
    const before = options.before ?? Number.MAX_SAFE_INTEGER;
    return (this.#sql.listLog.all(projectId, before, options.limit) as LogRow[]).map(toLog);
  }

  async listRequestLogPreviews(
    projectId: string,
    options: { limit: number; before?: number; previewChars: number; maxBodyBytes: number },
  ): Promise<RequestLogPage> {
    const query = {
      project: projectId,
      before: options.before ?? Number.MAX_SAFE_INTEGER,
      limit: options.limit + 1,
      maxBytes: options.maxBodyBytes,
      chars: options.previewChars,
    };
    return toLogPage(this.#sql.listLogPage.all(query) as LogPreviewRow[], options.limit);
  }

  async readRequestLogRange(projectId: string, range: RequestLogRange): Promise<RequestLogRow[]> {
    return (this.#sql.readLogRange.all(logRangeParams(projectId, range)) as LogRow[]).map(toLog);
  }

  async getRequestLog(projectId: string, id: number): Promise<RequestLogRow | null> {
    const row = this.#sql.getLog.get(projectId, id) as LogRow | undefined;
    return row === undefined ? null : toLog(row);
  }

  async listRequestLogProjects(): Promise<string[]> {
    return (this.#sql.logProjects.all() as { project_id: string }[]).map((r) => r.project_id);
  }

  async pruneRequestLog(projectId: string, options: { olderThan: Millis; keepNewest: number; limit: number }): Promise<number> {
    const nth = this.#sql.nthNewestLog.get(projectId, options.keepNewest) as { id: number } | undefined;
    // Both halves walk an index on (project_id, ...); UNION counts a row in both once, so a short batch means done.
    return this.#db
      .transaction(() => {
        const gone = this.#sql.pruneLog.all(projectId, options.olderThan, projectId, nth?.id ?? 0, options.limit) as {
          body_bytes: number;
        }[];
        this.#ledger.forgetBodies(
          projectId,
          gone.reduce((sum, row) => sum + row.body_bytes, 0),
        );
        return gone.length;
      })
      .immediate();
  }
}
