// The SQLite store's shadow classifiers: a project's settings and the results the proxy's shadow runner writes
// (see ShadowStore in shadow-types.ts). The PostgreSQL twin is postgres-shadows.ts.
import type Database from 'better-sqlite3';

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

export class SqliteShadows implements ShadowStore {
  readonly #sql;

  constructor(db: Database.Database) {
    const p = (sql: string) => db.prepare(sql);
    const stats = shadowStatsSql(() => '?');
    this.#sql = {
      put: p(
        `INSERT INTO project_shadows (project_id, model, classifier_id, text_pointer, label_rule, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (project_id, model) DO UPDATE SET classifier_id = excluded.classifier_id,
           text_pointer = excluded.text_pointer, label_rule = excluded.label_rule, updated_at = excluded.updated_at`,
      ),
      list: p('SELECT * FROM project_shadows WHERE project_id = ? ORDER BY model'),
      remove: p('DELETE FROM project_shadows WHERE project_id = ? AND model = ?'),
      insert: p(`INSERT INTO shadow_results (${kShadowResultColumns}) VALUES (${Array(13).fill('?').join(', ')})`),
      listResults: p('SELECT * FROM shadow_results WHERE project_id = ? AND id < ? ORDER BY id DESC LIMIT ?'),
      totals: p(stats.totals),
      buckets: p(stats.buckets),
      median: p(stats.median),
    };
  }

  async put(s: ShadowSetting): Promise<void> {
    this.#sql.put.run(s.projectId, s.model, s.classifierId, s.textPointer, JSON.stringify(s.labelRule), s.createdAt, s.updatedAt);
  }

  async list(projectId: string): Promise<ShadowSetting[]> {
    return (this.#sql.list.all(projectId) as ShadowSettingRow[]).map(toShadowSetting);
  }

  async remove(projectId: string, model: string): Promise<boolean> {
    return this.#sql.remove.run(projectId, model).changes > 0;
  }

  async insertResult(result: Omit<ShadowResult, 'id'>): Promise<number> {
    return Number(this.#sql.insert.run(...shadowResultParams(result)).lastInsertRowid);
  }

  async listResults(projectId: string, options: { limit: number; before?: number }): Promise<ShadowResult[]> {
    const rows = this.#sql.listResults.all(projectId, options.before ?? Number.MAX_SAFE_INTEGER, options.limit) as ShadowResultRow[];
    return rows.map(toShadowResult);
  }

  async stats(projectId: string, query: ShadowStatsQuery): Promise<ShadowStats> {
    const model = query.model ?? null;
    // The statements name each placeholder where it is used: SQLite's `?` takes one value per mark.
    const filter = [projectId, query.since, model, model];
    const totals = this.#sql.totals.get(...filter) as ShadowTotalsRow;
    const buckets = this.#sql.buckets.all(query.bucketMs, query.bucketMs, ...filter) as ShadowBucketRow[];
    const answered = Number(totals.calls) - Number(totals.errors);
    const median =
      answered === 0 ? null : (this.#sql.median.get(...filter, Math.floor((answered - 1) / 2)) as { classifier_ms: number }).classifier_ms;
    return toShadowStats(totals, buckets, median);
  }
}

type ShadowBucketRow = { start: number; calls: number; compared: number; agreed: number };
