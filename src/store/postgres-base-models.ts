import type pg from 'pg';

import {
  type BaseModelDisagreement,
  type BaseModelLedger,
  disagreements,
  type RecordedBaseModel,
  recordedBaseModelFrom,
} from './base-model-ledger.js';
import { inTransaction } from './postgres-migrations.js';

/** Any number fixed for the product: replicas starting together check and record their base models one at a time. */
const kRecordLock = 0x7376_635f_626d; // 'svc_bm'

const kSql = Object.freeze({
  lock: 'SELECT pg_advisory_xact_lock($1)',
  list: 'SELECT name, fingerprint, dir FROM base_models ORDER BY name',
  insert: 'INSERT INTO base_models (name, fingerprint, dir, recorded_at) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING',
});

/**
 * The registered base models on PostgreSQL. A transaction-level advisory lock orders replicas that start at once, so
 * that of two bringing other files under one new name, the second reads the first's row and is refused.
 */
export class PostgresBaseModels implements BaseModelLedger {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async record(models: readonly RecordedBaseModel[], now: number): Promise<BaseModelDisagreement[]> {
    return inTransaction(this.#pool, async (client) => {
      await client.query(kSql.lock, [kRecordLock]);
      const refused = disagreements(models, (await client.query(kSql.list)).rows.map(recordedBaseModelFrom));
      if (refused.length === 0) for (const m of models) await client.query(kSql.insert, [m.name, m.fingerprint, m.dir, now]);
      return refused;
    });
  }

  async list(): Promise<RecordedBaseModel[]> {
    return (await this.#pool.query(kSql.list)).rows.map(recordedBaseModelFrom);
  }
}
