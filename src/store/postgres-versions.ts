import type pg from 'pg';

import { inTransaction } from './postgres-migrations.js';
import { type VersionRow, toVersion, versionSql } from './rows.js';
import type {
  ModelRecord,
  ModelVersions,
  PromoteOutcome,
  QueueLimits,
  QueuedJob,
  RemoveVersionOutcome,
  TrainingExample,
  VersionRecord,
} from './types.js';

/** The store's own insert of a model, its job and examples, on the caller's transaction, as `classifierId`'s version. */
export type QueueModelOn = (
  client: pg.PoolClient,
  model: ModelRecord,
  examples: TrainingExample[],
  options: Record<string, unknown>,
  limit: QueueLimits | undefined,
  classifierId: string,
) => Promise<QueuedJob>;

const kSql = versionSql({ classifier: '$1', version: '$2', key: '$3' });
/** The classifier's row lock: replicas change one classifier's versions one after the other. */
const kLockClassifier = `${kSql.classifier} FOR UPDATE`;

/** A classifier's versions on PostgreSQL, shared by every replica (see {@link ModelVersions}). */
export class PostgresVersions implements ModelVersions {
  readonly #pool: pg.Pool;
  readonly #queue: QueueModelOn;

  constructor(pool: pg.Pool, queue: QueueModelOn) {
    this.#pool = pool;
    this.#queue = queue;
  }

  async add(
    classifierId: string,
    model: Omit<ModelRecord, 'id'>,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: QueueLimits,
  ): Promise<QueuedJob & { version: VersionRecord | null }> {
    return inTransaction(this.#pool, async (client) => {
      if ((await client.query(kLockClassifier, [classifierId])).rowCount === 0) return { created: false, queued: -1, version: null };
      const version = Number((await client.query(kSql.nextVersion, [classifierId])).rows[0].n);
      const key = `${classifierId}.v${version}`;
      const queued = await this.#queue(client, { ...model, id: key }, examples, options, limit, classifierId);
      if (!queued.created) return { ...queued, version: null };
      await client.query(kSql.setVersion, [classifierId, version, key]);
      await client.query(kSql.setLast, [classifierId, version]);
      return { ...queued, version: { ...model, id: key, classifierId, version, live: false } };
    });
  }

  async list(classifierId: string): Promise<VersionRecord[]> {
    return ((await this.#pool.query(kSql.list, [classifierId])).rows as VersionRow[]).map(toVersion);
  }

  async listLive(orgId: string): Promise<VersionRecord[]> {
    return ((await this.#pool.query(kSql.listLive, [orgId])).rows as VersionRow[]).map(toVersion);
  }

  async promote(classifierId: string, version: number): Promise<PromoteOutcome> {
    return inTransaction(this.#pool, async (client): Promise<PromoteOutcome> => {
      const found = await this.#locked(client, classifierId, version);
      if (found === undefined) return 'not_found';
      if (found.status !== 'trained') return 'not_trained';
      await client.query(kSql.setLive, [classifierId, version]);
      return 'promoted';
    });
  }

  async remove(classifierId: string, version: number): Promise<RemoveVersionOutcome> {
    return inTransaction(this.#pool, async (client): Promise<RemoveVersionOutcome> => {
      const found = await this.#locked(client, classifierId, version);
      if (found === undefined) return 'not_found';
      if (version === found.live_version) return 'live';
      if (version === 1) return 'first';
      await client.query(kSql.remove, [classifierId, version]);
      return 'deleted';
    });
  }

  /** Locks the classifier's row, then reads one of its versions. */
  async #locked(client: pg.PoolClient, classifierId: string, version: number): Promise<VersionRow | undefined> {
    await client.query(kLockClassifier, [classifierId]);
    return ((await client.query(kSql.list, [classifierId])).rows as VersionRow[]).find((row) => row.version === version);
  }
}
