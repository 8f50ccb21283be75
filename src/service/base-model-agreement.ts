// Replicas agree on their base models: a model trained on one replica may be served by any other, so every replica on
// a store must mean the same files by a registered name. Each records its registered base models in the store at
// start-up and refuses to start when the store already holds one of the names with another fingerprint.
import { SvcError } from '../errors.js';
import type { BaseModel } from '../model/base-models.js';
import type { BaseModelDisagreement, RecordedBaseModel } from '../store/base-model-ledger.js';
import type { Store } from '../store/types.js';

function disagreementLine({ name, recorded, registered }: BaseModelDisagreement): string {
  return (
    `base model '${name}' is registered here from ${registered.dir} (${registered.fingerprint}), but the store records ` +
    `'${name}' as ${recorded.fingerprint} (first registered from ${recorded.dir})`
  );
}

/**
 * Records `models` (this process's registered base models) in `store`; a name the store holds with other files is an
 * `invalid_request` naming it and both fingerprints, and nothing is recorded then. Built-in models are not recorded:
 * their npm package pins their files.
 *
 * @example
 * ```ts
 * await agreeOnBaseModels(store, registeredBaseModels());
 * // throws "base model 'e5-small' is registered here from /models/e5 (sha256:3f2a…), but the store records 'e5-small' as
 * //   sha256:91c0… (first registered from /mnt/e5); register the same files on every replica, or another name"
 * ```
 */
export async function agreeOnBaseModels(store: Store, models: readonly BaseModel[]): Promise<void> {
  const registered = models.filter((model) => !model.builtin);
  if (registered.length === 0) return;
  const refused = await store.baseModels.record(
    registered.map(({ name, fingerprint, dir }) => ({ name, fingerprint, dir })),
    Date.now(),
  );
  if (refused.length === 0) return;
  throw new SvcError(
    'invalid_request',
    `${refused.map(disagreementLine).join('; ')}; register the same files on every replica, or another name`,
    { param: 'base_model' },
  );
}

/**
 * The base models the store records (another replica, or this server before a restart, registered them) that this
 * process has not registered: the models trained on them cannot be served here. For a warning at start-up.
 *
 * @example
 * ```ts
 * (await unregisteredBaseModels(store, registeredBaseModels())).map((m) => m.name); // ['e5-small']
 * ```
 */
export async function unregisteredBaseModels(store: Store, models: readonly BaseModel[]): Promise<RecordedBaseModel[]> {
  const here = new Set(models.map((model) => model.name));
  return (await store.baseModels.list()).filter((recorded) => !here.has(recorded.name));
}
