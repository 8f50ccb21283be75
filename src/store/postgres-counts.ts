import type pg from 'pg';

import type { RequestCount, RequestCounter } from './types.js';

// The database's clock, Unix ms: every replica reads windows against one clock, so skew between machines never
// lengthens or shortens a window. now() is fixed for a statement, so each statement sees one moment.
const kNow = '(EXTRACT(EPOCH FROM now()) * 1000)::BIGINT';

const kSql = Object.freeze({
  // One atomic statement per request: the row lock of ON CONFLICT orders concurrent requests from all replicas,
  // and a window that has ended starts again at 1.
  count: `INSERT INTO request_counts AS c (key, count, window_ends_at) VALUES ($1, 1, ${kNow} + $2)
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN c.window_ends_at <= ${kNow} THEN 1 ELSE c.count + 1 END,
      window_ends_at = CASE WHEN c.window_ends_at <= ${kNow} THEN excluded.window_ends_at ELSE c.window_ends_at END
    RETURNING count, window_ends_at - ${kNow} AS reset_in_ms`,
  read: `SELECT count, window_ends_at - ${kNow} AS reset_in_ms FROM request_counts
    WHERE key = $1 AND window_ends_at > ${kNow}`,
  prune: `DELETE FROM request_counts WHERE window_ends_at <= ${kNow}`,
});

interface CountRow {
  count: number;
  reset_in_ms: number;
}

/**
 * The request limits' counts in the `request_counts` table of a PostgreSQL database, shared by every replica on
 * it. Rows of ended windows are deleted from the counting path, at most once per (shortest) window length by
 * each replica, so the table holds about one row per key active in the last window.
 *
 * @example
 * ```ts
 * const counter = new PostgresRequestCounter(pool);
 * await counter.countRequest('key_0123456789ab', 60_000); // { count: 1, resetInMs: 60000 }
 * await counter.countRequest('key_0123456789ab', 60_000); // { count: 2, resetInMs: 59998 }
 * ```
 */
export class PostgresRequestCounter implements RequestCounter {
  readonly #pool: pg.Pool;
  #nextPruneAt = 0;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async countRequest(key: string, windowMs: number): Promise<RequestCount> {
    const { rows } = await this.#pool.query<CountRow>(kSql.count, [key, windowMs]);
    const now = Date.now();
    if (now >= this.#nextPruneAt) {
      this.#nextPruneAt = now + windowMs;
      await this.pruneRequestCounts();
    } else {
      // A shorter window's rows end sooner: prune by the shortest window counted.
      this.#nextPruneAt = Math.min(this.#nextPruneAt, now + windowMs);
    }
    return toCount(rows[0]);
  }

  async readRequestCount(key: string): Promise<RequestCount> {
    const { rows } = await this.#pool.query<CountRow>(kSql.read, [key]);
    return rows.length === 0 ? { count: 0, resetInMs: 0 } : toCount(rows[0]);
  }

  /** Deletes the rows of ended windows; returns how many. */
  async pruneRequestCounts(): Promise<number> {
    return (await this.#pool.query(kSql.prune)).rowCount ?? 0;
  }
}

function toCount(row: CountRow): RequestCount {
  return { count: row.count, resetInMs: row.reset_in_ms };
}
