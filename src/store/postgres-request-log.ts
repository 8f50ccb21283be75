// The PostgreSQL store's proxy request log: a call's row with its tokens added to the project's monthly usage, the
// pages the dashboard reads, and retention's pruning. PostgresStore forwards the Store's request-log methods here
// (postgres.ts); the SQLite store's twin is sqlite-request-log.ts.
import type pg from 'pg';

import { inTransaction } from './postgres-migrations.js';
import type { PostgresProxyLedger } from './postgres-proxy-ledger.js';
import { queryOne, queryRows } from './postgres-query.js';
import type { RequestLogWrite } from './proxy-ledger.js';
import { type LogPreviewRow, type LogRow, logPageSql, logRangeParams, toLog, toLogPage } from './rows.js';
import { rowTokens, usageMonth } from './types.js';
import type { Millis, RequestLogPage, RequestLogRange, RequestLogRow } from './types.js';

/** The statements, one table as in the SQLite store; `$n` placeholders. */
const kSql = Object.freeze({
  insertLog: `INSERT INTO request_log (project_id, key_id, provider, model, stream, status, ttfb_ms, total_ms,
      tokens_in, tokens_out, error, request_body, response_body, created_at, body_bytes)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
  addUsage: `INSERT INTO project_usage (project_id, month, tokens) VALUES ($1, $2, $3)
    ON CONFLICT (project_id, month) DO UPDATE SET tokens = project_usage.tokens + excluded.tokens`,
  getUsage: 'SELECT tokens FROM project_usage WHERE project_id = $1 AND month = $2',
  listLog: 'SELECT * FROM request_log WHERE project_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3',
  listLogPage: logPageSql({ project: '$1', before: '$2', limit: '$3', maxBytes: '$4', chars: '$5' }),
  getLog: 'SELECT * FROM request_log WHERE project_id = $1 AND id = $2',
  readLogRange: `SELECT * FROM request_log WHERE project_id = $1 AND id > $2 AND created_at >= $3 AND created_at < $4
    AND status BETWEEN 200 AND 299 AND ($5::text IS NULL OR model = $5) ORDER BY id LIMIT $6`,
  logProjects: 'SELECT DISTINCT project_id FROM request_log ORDER BY project_id',
  nthNewestLog: 'SELECT id FROM request_log WHERE project_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2',
  pruneLog: `DELETE FROM request_log WHERE id IN (
    SELECT id FROM request_log WHERE project_id = $1 AND created_at < $2
    UNION SELECT id FROM request_log WHERE project_id = $1 AND id <= $3
    LIMIT $4) RETURNING body_bytes`,
});

/**
 * The proxy's request log on PostgreSQL (see the Store's request-log methods in `types.ts`). A write and a prune
 * each run in one transaction with the proxy ledger's step, so the usage and the stored body bytes never drift
 * from the rows.
 */
export class PostgresRequestLog {
  readonly #pool: pg.Pool;
  readonly #ledger: PostgresProxyLedger;

  constructor(pool: pg.Pool, ledger: PostgresProxyLedger) {
    this.#pool = pool;
    this.#ledger = ledger;
  }

  async insertRequestLog(r: Omit<RequestLogRow, 'id'>, write: RequestLogWrite = {}): Promise<number> {
    // One transaction: the usage counter never misses a logged call, nor counts one twice, and the call's
    // reservation is given back in the same step that counts its tokens.
    return inTransaction(this.#pool, async (client) => {
      const kept = await this.#ledger.keepBodies(client, r.projectId, r.requestBody, r.responseBody, write.maxProjectBodyBytes);
      const { id } = (await queryOne<{ id: number }>(client, kSql.insertLog, [
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
      ]))!;
      const tokens = rowTokens(r);
      if (tokens > 0) await client.query(kSql.addUsage, [r.projectId, usageMonth(r.createdAt), tokens]);
      await this.#ledger.releaseInTransaction(client, write.reservationId);
      return id;
    });
  }

  async getProjectUsage(projectId: string, month: string): Promise<number> {
    return (await queryOne<{ tokens: number }>(this.#pool, kSql.getUsage, [projectId, month]))?.tokens ?? 0;
  }

  async listRequestLog(projectId: string, options: { limit: number; before?: number }): Promise<RequestLogRow[]> {
    const before = options.before ?? Number.MAX_SAFE_INTEGER;
    return (await queryRows<LogRow>(this.#pool, kSql.listLog, [projectId, before, options.limit])).map(toLog);
  }

  async listRequestLogPreviews(
    projectId: string,
    options: { limit: number; before?: number; previewChars: number; maxBodyBytes: number },
  ): Promise<RequestLogPage> {
    const params = [projectId, options.before ?? Number.MAX_SAFE_INTEGER, options.limit + 1, options.maxBodyBytes, options.previewChars];
    return toLogPage(await queryRows<LogPreviewRow>(this.#pool, kSql.listLogPage, params), options.limit);
  }

  async readRequestLogRange(projectId: string, range: RequestLogRange): Promise<RequestLogRow[]> {
    const p = logRangeParams(projectId, range);
    return (await queryRows<LogRow>(this.#pool, kSql.readLogRange, [p.project, p.afterId, p.since, p.until, p.model, p.limit])).map(toLog);
  }

  async getRequestLog(projectId: string, id: number): Promise<RequestLogRow | null> {
    const row = await queryOne<LogRow>(this.#pool, kSql.getLog, [projectId, id]);
    return row === undefined ? null : toLog(row);
  }

  async listRequestLogProjects(): Promise<string[]> {
    return (await queryRows<{ project_id: string }>(this.#pool, kSql.logProjects, [])).map((r) => r.project_id);
  }

  async pruneRequestLog(projectId: string, options: { olderThan: Millis; keepNewest: number; limit: number }): Promise<number> {
    const nth = await queryOne<{ id: number }>(this.#pool, kSql.nthNewestLog, [projectId, options.keepNewest]);
    return inTransaction(this.#pool, async (client) => {
      const gone = await queryRows<{ body_bytes: number }>(client, kSql.pruneLog, [
        projectId,
        options.olderThan,
        nth?.id ?? 0,
        options.limit,
      ]);
      await this.#ledger.forgetBodies(
        client,
        projectId,
        gone.reduce((sum, row) => sum + Number(row.body_bytes), 0),
      );
      return gone.length;
    });
  }
}
