import type Database from 'better-sqlite3';

import {
  type BaseModelDisagreement,
  type BaseModelLedger,
  disagreements,
  type RecordedBaseModel,
  recordedBaseModelFrom,
} from './base-model-ledger.js';

/** The registered base models on the SQLite file: checked and recorded in one IMMEDIATE transaction. */
export class SqliteBaseModels implements BaseModelLedger {
  readonly #db: Database.Database;
  readonly #sql;

  constructor(db: Database.Database) {
    this.#db = db;
    const p = (sql: string) => db.prepare(sql);
    this.#sql = {
      list: p('SELECT name, fingerprint, dir FROM base_models ORDER BY name'),
      insert: p('INSERT OR IGNORE INTO base_models (name, fingerprint, dir, recorded_at) VALUES (?, ?, ?, ?)'),
    };
  }

  async record(models: readonly RecordedBaseModel[], now: number): Promise<BaseModelDisagreement[]> {
    return this.#db
      .transaction(() => {
        const refused = disagreements(models, this.#rows());
        if (refused.length === 0) for (const m of models) this.#sql.insert.run(m.name, m.fingerprint, m.dir, now);
        return refused;
      })
      .immediate();
  }

  async list(): Promise<RecordedBaseModel[]> {
    return this.#rows();
  }

  #rows(): RecordedBaseModel[] {
    return (this.#sql.list.all() as Record<string, unknown>[]).map(recordedBaseModelFrom);
  }
}
