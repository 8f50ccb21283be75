// Which files each registered base model name stands for, as the first replica to register it recorded them. Every
// replica sharing a store records its own base models at start-up and learns here whether another one already
// registered the same name on other files: models trained on one replica are served by any other, so a name must
// mean the same weights everywhere.

/** A base model name and the fingerprint of the files registered under it (`registerBaseModel`). */
export interface RecordedBaseModel {
  name: string;
  /** `sha256:<64 hex>` over the folder's defining files. */
  fingerprint: string;
  /** The folder the recording replica registered it from (each replica may keep its copy elsewhere). */
  dir: string;
}

/** A name the store already records with other files than a replica brings. */
export interface BaseModelDisagreement {
  name: string;
  /** What the store records (the first replica's). */
  recorded: RecordedBaseModel;
  /** What this replica registered. */
  registered: RecordedBaseModel;
}

/** The base models replicas on one store registered. */
export interface BaseModelLedger {
  /**
   * Records the names the store does not hold yet, all at once or none: when any name is recorded with another
   * fingerprint, nothing is recorded and every such name comes back. A name recorded with the same fingerprint
   * (from any folder) agrees and is left as it is. Replicas recording at once are taken one after the other.
   */
  record(models: readonly RecordedBaseModel[], now: number): Promise<BaseModelDisagreement[]>;
  /** Every recorded base model, by name. */
  list(): Promise<RecordedBaseModel[]>;
}

/** The row of `base_models` as both stores read it. */
export function recordedBaseModelFrom(row: Record<string, unknown>): RecordedBaseModel {
  return { name: String(row.name), fingerprint: String(row.fingerprint), dir: String(row.dir) };
}

/** The models of `models` whose name `recorded` holds with another fingerprint. */
export function disagreements(models: readonly RecordedBaseModel[], recorded: readonly RecordedBaseModel[]): BaseModelDisagreement[] {
  const byName = new Map(recorded.map((model) => [model.name, model]));
  return models.flatMap((registered) => {
    const known = byName.get(registered.name);
    return known === undefined || known.fingerprint === registered.fingerprint
      ? []
      : [{ name: registered.name, recorded: known, registered }];
  });
}
