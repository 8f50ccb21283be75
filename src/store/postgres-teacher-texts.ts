import type pg from 'pg';

import { inTransaction } from './postgres-migrations.js';
import { kTeacherColumns, teacherRowFrom, teacherRowValues, type TeacherTextRow, type TeacherTexts } from './teacher-texts.js';
import type { JobLease } from './types.js';

const kSql = Object.freeze({
  list: `SELECT ${kTeacherColumns} FROM teacher_texts WHERE model_id = $1 ORDER BY position`,
  // The job's row locked for the batch: a claim by another replica waits until the batch is in, or finds it refused.
  holds: "SELECT 1 FROM training_jobs WHERE model_id = $1 AND state = 'running' AND locked_by = $2 AND lease_token = $3 FOR UPDATE",
  upsert: `INSERT INTO teacher_texts (model_id, ${kTeacherColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT (model_id, position) DO UPDATE SET text = excluded.text, outcome = excluded.outcome,
      teacher_label = excluded.teacher_label, detail = excluded.detail, call_number = excluded.call_number, tokens_in = excluded.tokens_in,
      tokens_out = excluded.tokens_out, ms = excluded.ms`,
});

/** The teacher's answers on PostgreSQL: each batch in one transaction, behind the job's lease. */
export class PostgresTeacherTexts implements TeacherTexts {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async list(modelId: string): Promise<TeacherTextRow[]> {
    return (await this.#pool.query(kSql.list, [modelId])).rows.map(teacherRowFrom);
  }

  async record(modelId: string, lease: JobLease, rows: readonly TeacherTextRow[]): Promise<boolean> {
    return inTransaction(this.#pool, async (client) => {
      if ((await client.query(kSql.holds, [modelId, lease.holder, lease.token])).rowCount === 0) return false;
      for (const row of rows) await client.query(kSql.upsert, teacherRowValues(modelId, row));
      return true;
    });
  }
}
