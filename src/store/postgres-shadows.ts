// The PostgreSQL store's shadow classifiers: a project's settings and the results the proxy's shadow runner writes
// (see ShadowStore in shadow-types.ts). The SQLite twin is sqlite-shadows.ts; both read rows through shadow-rows.ts.
import type pg from 'pg';

import { queryOne, queryRows } from './postgres-query.js';
import {
  kShadowResultColumns,
  shadowResultParams,
  type ShadowResultRow,
  type ShadowSettingRow,
  shadowStatsSql,
  type ShadowTotalsRow,
  toShadowResult,
  toShadowSetting,
  toShadowStats,
} from './shadow-rows.js';
import type { ShadowResult, ShadowSetting, ShadowStats, ShadowStatsQuery, ShadowStore } from './shadow-types.js';

const kStats = shadowStatsSql((n) => `$${n}`);
const kSql = Object.freeze({
  put: `INSERT INTO project_shadows (project_id, model, classifier_id, text_pointer, label_rule, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (project_id, model) DO UPDATE SET classifier_id = excluded.classifier_id,
      text_pointer = excluded.text_pointer, label_rule = excluded.label_rule, updated_at = excluded.updated_at`,
  list: 'SELECT * FROM project_shadows WHERE project_id = $1 ORDER BY model',
  remove: 'DELETE FROM project_shadows WHERE project_id = $1 AND model = $2',
  insert: `INSERT INTO shadow_results (${kShadowResultColumns})
    VALUES (${Array.from({ length: 13 }, (_, i) => `$${i + 1}`).join(', ')}) RETURNING id`,
  listResults: 'SELECT * FROM shadow_results WHERE project_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3',
});

export class PostgresShadows implements ShadowStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async put(s: ShadowSetting): Promise<void> {
    await this.#pool.query(kSql.put, [
      s.projectId,
      s.model,
      s.classifierId,
      s.textPointer,
      JSON.stringify(s.labelRule),
      s.createdAt,
      s.updatedAt,
    ]);
  }

  async list(projectId: string): Promise<ShadowSetting[]> {
    return (await queryRows<ShadowSettingRow>(this.#pool, kSql.list, [projectId])).map(toShadowSetting);
  }

  async remove(projectId: string, model: string): Promise<boolean> {
    return ((await this.#pool.query(kSql.remove, [projectId, model])).rowCount ?? 0) > 0;
  }

  async insertResult(result: Omit<ShadowResult, 'id'>): Promise<number> {
    return (await queryOne<{ id: number }>(this.#pool, kSql.insert, shadowResultParams(result)))!.id;
  }

  async listResults(projectId: string, options: { limit: number; before?: number }): Promise<ShadowResult[]> {
    const rows = await queryRows<ShadowResultRow>(this.#pool, kSql.listResults, [
      projectId,
      options.before ?? Number.MAX_SAFE_INTEGER,
      options.limit,
    ]);
    return rows.map(toShadowResult);
  }

  async stats(projectId: string, query: ShadowStatsQuery): Promise<ShadowStats> {
    const filter = [projectId, query.since, query.model ?? null];
    const totals = (await queryOne<ShadowTotalsRow>(this.#pool, kStats.totals, filter))!;
    const buckets = await queryRows<{ start: number; calls: number; compared: number; agreed: number }>(this.#pool, kStats.buckets, [
      ...filter,
      query.bucketMs,
    ]);
    const answered = Number(totals.calls) - Number(totals.errors);
    const median =
      answered === 0
        ? null
        : (await queryOne<{ classifier_ms: number }>(this.#pool, kStats.median, [...filter, Math.floor((answered - 1) / 2)]))!
            .classifier_ms;
    return toShadowStats(totals, buckets, median);
  }
}
