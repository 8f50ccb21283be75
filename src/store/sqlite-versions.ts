import type Database from 'better-sqlite3';

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

/** The store's own insert of a model, its job and examples (inside the caller's transaction), as `classifierId`'s version. */
export type QueueModel = (
  model: ModelRecord,
  examples: TrainingExample[],
  options: Record<string, unknown>,
  limit: QueueLimits | undefined,
  classifierId: string,
) => QueuedJob;

/**
 * A classifier's versions on SQLite. Each change is one IMMEDIATE transaction: it holds the file's write lock, so
 * that two processes on one file take version numbers, promote and delete one after the other.
 */
export class SqliteVersions implements ModelVersions {
  readonly #db: Database.Database;
  readonly #queue: QueueModel;
  readonly #sql;

  constructor(db: Database.Database, queue: QueueModel) {
    this.#db = db;
    this.#queue = queue;
    const sql = versionSql({ classifier: '@classifier', version: '@version', key: '@key' });
    this.#sql = Object.fromEntries(Object.entries(sql).map(([name, text]) => [name, db.prepare(text)])) as Record<
      keyof typeof sql,
      Database.Statement
    >;
  }

  async add(
    classifierId: string,
    model: Omit<ModelRecord, 'id'>,
    examples: TrainingExample[],
    options: Record<string, unknown>,
    limit?: QueueLimits,
  ): Promise<QueuedJob & { version: VersionRecord | null }> {
    return this.#db
      .transaction(() => {
        if (this.#sql.classifier.get({ classifier: classifierId }) === undefined) return { created: false, queued: -1, version: null };
        const version = (this.#sql.nextVersion.get({ classifier: classifierId }) as { n: number }).n;
        const key = `${classifierId}.v${version}`;
        const queued = this.#queue({ ...model, id: key }, examples, options, limit, classifierId);
        if (!queued.created) return { ...queued, version: null };
        this.#sql.setVersion.run({ classifier: classifierId, version, key });
        this.#sql.setLast.run({ classifier: classifierId, version });
        return { ...queued, version: { ...model, id: key, classifierId, version, live: false } };
      })
      .immediate();
  }

  async list(classifierId: string): Promise<VersionRecord[]> {
    return (this.#sql.list.all({ classifier: classifierId }) as VersionRow[]).map(toVersion);
  }

  async listLive(orgId: string): Promise<VersionRecord[]> {
    return (this.#sql.listLive.all({ classifier: orgId }) as VersionRow[]).map(toVersion);
  }

  async promote(classifierId: string, version: number): Promise<PromoteOutcome> {
    return this.#db
      .transaction((): PromoteOutcome => {
        const found = (this.#sql.list.all({ classifier: classifierId }) as VersionRow[]).find((row) => row.version === version);
        if (found === undefined) return 'not_found';
        if (found.status !== 'trained') return 'not_trained';
        this.#sql.setLive.run({ classifier: classifierId, version });
        return 'promoted';
      })
      .immediate();
  }

  async remove(classifierId: string, version: number): Promise<RemoveVersionOutcome> {
    return this.#db
      .transaction((): RemoveVersionOutcome => {
        const found = (this.#sql.list.all({ classifier: classifierId }) as VersionRow[]).find((row) => row.version === version);
        if (found === undefined) return 'not_found';
        if (version === found.live_version) return 'live';
        if (version === 1) return 'first';
        this.#sql.remove.run({ classifier: classifierId, version });
        return 'deleted';
      })
      .immediate();
  }
}
