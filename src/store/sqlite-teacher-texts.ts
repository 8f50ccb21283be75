import type Database from 'better-sqlite3';

import { kTeacherColumns, teacherRowFrom, teacherRowValues, type TeacherTextRow, type TeacherTexts } from './teacher-texts.js';
import type { JobLease } from './types.js';

/** The teacher's answers on the SQLite file: each batch in one transaction, behind the job's lease. */
export class SqliteTeacherTexts implements TeacherTexts {
  readonly #db: Database.Database;
  readonly #sql;

  constructor(db: Database.Database) {
    this.#db = db;
    const p = (sql: string) => db.prepare(sql);
    this.#sql = {
      list: p(`SELECT ${kTeacherColumns} FROM teacher_texts WHERE model_id = ? ORDER BY position`),
      holds: p("SELECT 1 FROM training_jobs WHERE model_id = ? AND state = 'running' AND locked_by = ? AND lease_token = ?"),
      upsert: p(`INSERT OR REPLACE INTO teacher_texts (model_id, ${kTeacherColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    };
  }

  async list(modelId: string): Promise<TeacherTextRow[]> {
    return (this.#sql.list.all(modelId) as Record<string, unknown>[]).map(teacherRowFrom);
  }

  async record(modelId: string, lease: JobLease, rows: readonly TeacherTextRow[]): Promise<boolean> {
    return this.#db
      .transaction(() => {
        if (this.#sql.holds.get(modelId, lease.holder, lease.token) === undefined) return false;
        for (const row of rows) this.#sql.upsert.run(...teacherRowValues(modelId, row));
        return true;
      })
      .immediate();
  }
}
