// The versions part of the store contract (test/store/contract.ts runs the rest): both backends run it, each with
// two stores on one database, as two processes or two replicas would have.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { ModelRecord, Store } from '../../src/store/types.js';
import { claim, examples, model, type StoreBackend } from './contract-fixtures.js';

const kClassifier = 'svc-small-0123456789ab';
const versionOf = (orgId = 'acme', labelText = 'positive'): Omit<ModelRecord, 'id'> => {
  const { id: _id, ...rest } = model(kClassifier, orgId, 2000);
  return { ...rest, labelText };
};

/** Runs the version's job to its end, as the job runner does. */
async function train(store: Store, key: string, failure: string | null = null): Promise<void> {
  const job = await store.claimNextJob(Date.now(), { ...claim, maxRunningJobs: 10 });
  expect(job?.modelId).toBe(key);
  expect(await store.finishJob(key, { holder: claim.holder, token: job!.leaseToken }, 3000, failure)).toBe(true);
}

export function versionsContract(name: string, backend: StoreBackend): void {
  describe(`${name}: a classifier's versions`, () => {
    let location: string;
    let store: Store;
    let other: Store;
    beforeEach(async () => {
      location = await backend.create();
      store = await backend.open(location);
      other = await backend.open(location);
      await store.createOrganization('acme');
      await store.createModelWithJob(model(kClassifier), examples, {});
      await train(store, kClassifier);
    });
    afterEach(async () => {
      await store.close();
      await other.close();
    });

    it('makes a classifier version 1 and live; a new version trains beside it, listed but neither live nor a classifier', async () => {
      expect(await store.versions.list(kClassifier)).toEqual([
        { ...model(kClassifier), status: 'trained', updatedAt: 3000, classifierId: kClassifier, version: 1, live: true },
      ]);
      const added = await store.versions.add(kClassifier, versionOf(), examples, { finetune: false });
      expect(added).toEqual({
        created: true,
        queued: 1,
        version: { ...versionOf(), id: `${kClassifier}.v2`, classifierId: kClassifier, version: 2, live: false },
      });
      expect(await store.getJobExamples(`${kClassifier}.v2`)).toEqual(examples);
      expect((await store.getJob(`${kClassifier}.v2`))?.options).toEqual({ finetune: false });
      // The job ran to its end: the version is trained, and still not live.
      await train(store, `${kClassifier}.v2`);
      const listed = await other.versions.list(kClassifier);
      expect(listed.map((v) => [v.id, v.version, v.status, v.live])).toEqual([
        [kClassifier, 1, 'trained', true],
        [`${kClassifier}.v2`, 2, 'trained', false],
      ]);
      expect((await store.listModels('acme')).map((m) => m.id)).toEqual([kClassifier]);
      expect(await store.versions.list('svc-small-ffffffffffff')).toEqual([]);
      expect(await store.versions.list(`${kClassifier}.v2`)).toEqual([]);
    });

    it('promotes a trained version and rolls back by promoting the first; refuses one in training or failed, and an unknown one', async () => {
      const v2 = (await store.versions.add(kClassifier, versionOf(), examples, {})).version!;
      expect(await store.versions.promote(kClassifier, 2)).toBe('not_trained');
      await train(store, v2.id, 'out of memory');
      expect(await store.versions.promote(kClassifier, 2)).toBe('not_trained');
      const v3 = (await store.versions.add(kClassifier, versionOf(), examples, {})).version!;
      expect(v3.version).toBe(3);
      await train(store, v3.id);
      expect(await other.versions.promote(kClassifier, 3)).toBe('promoted');
      expect((await store.versions.list(kClassifier)).filter((v) => v.live).map((v) => v.version)).toEqual([3]);
      expect((await store.versions.listLive('acme')).map((v) => [v.id, v.classifierId, v.version, v.live])).toEqual([
        [v3.id, kClassifier, 3, true],
      ]);
      expect(await store.versions.promote(kClassifier, 1)).toBe('promoted');
      expect((await store.versions.list(kClassifier)).filter((v) => v.live).map((v) => v.version)).toEqual([1]);
      expect((await store.versions.listLive('acme')).map((v) => [v.id, v.version])).toEqual([[kClassifier, 1]]);
      expect(await store.versions.listLive('other')).toEqual([]);
      expect(await store.versions.promote(kClassifier, 7)).toBe('not_found');
      expect(await store.versions.promote('svc-small-ffffffffffff', 1)).toBe('not_found');
    });

    it('deletes a version with its job and examples, never the live one nor the first; the classifier takes all its versions with it', async () => {
      const v2 = (await store.versions.add(kClassifier, versionOf(), examples, {})).version!;
      await train(store, v2.id);
      const v3 = (await store.versions.add(kClassifier, versionOf(), examples, {})).version!;
      await train(store, v3.id);
      await store.versions.promote(kClassifier, 2);
      expect(await store.versions.remove(kClassifier, 2)).toBe('live');
      expect(await store.versions.remove(kClassifier, 1)).toBe('first');
      expect(await store.versions.remove(kClassifier, 3)).toBe('deleted');
      expect(await store.versions.remove(kClassifier, 3)).toBe('not_found');
      expect(await store.getJob(v3.id)).toBeNull();
      expect(await store.getJobExamples(v3.id)).toEqual([]);
      // A deleted version's number is not given again: its hub name must not come back with other files.
      const v4 = (await store.versions.add(kClassifier, versionOf(), examples, {})).version!;
      expect(v4.version).toBe(4);
      expect(await store.deleteModel(kClassifier)).toBe(true);
      expect(await store.getModel(v2.id)).toBeNull();
      expect(await store.getJob(v4.id)).toBeNull();
      expect(await store.versions.list(kClassifier)).toEqual([]);
    });

    it('takes the next numbers one after the other when two processes add versions at once, and keeps the queue cap', async () => {
      const added = await Promise.all(
        Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? store : other).versions.add(kClassifier, versionOf(), examples, {})),
      );
      expect(added.map((a) => a.version!.version).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7]);
      const capped = await store.versions.add(kClassifier, versionOf(), examples, {}, { maxQueuedJobs: 6 });
      expect(capped).toEqual({ created: false, queued: 6, version: null });
      expect(await store.versions.add('svc-small-ffffffffffff', versionOf(), examples, {})).toEqual({
        created: false,
        queued: -1,
        version: null,
      });
    });

    it('never lets a promote and a delete of one version both succeed', async () => {
      for (let round = 0; round < 4; round++) {
        const v = (await store.versions.add(kClassifier, versionOf(), examples, {})).version!;
        await train(store, v.id);
        const [promoted, removed] = await Promise.all([
          store.versions.promote(kClassifier, v.version),
          other.versions.remove(kClassifier, v.version),
        ]);
        expect([promoted, removed]).toContainEqual(promoted === 'promoted' ? 'live' : 'deleted');
        const live = (await store.versions.list(kClassifier)).find((x) => x.live)!;
        expect(live.status).toBe('trained');
        await store.versions.promote(kClassifier, 1);
      }
    });
  });
}
