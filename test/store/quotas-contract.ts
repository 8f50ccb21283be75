// The storage-quota part of the store contract (contract.ts runs every part): what a model row is charged, and the
// classifiers, versions and bytes an organization may keep, counted in the transaction that would store the model.
import { describe, expect, it } from 'vitest';

import type { ModelRecord, QueueLimits } from '../../src/store/types.js';
import { examples, freshStore, model, type StoreBackend } from './contract-fixtures.js';

const first = 'svc-small-000000000001';
const second = 'svc-small-000000000002';
/** What one model row with the fixture's two examples and options `{}` is charged: 2 MiB + '{}' + 2 x (4 + 8 + 3 + 8) + 2 x 4096. */
const kCharge = 2_105_392;
const versionOf = (id: string): Omit<ModelRecord, 'id'> => {
  const { id: _id, ...rest } = model(id, 'acme', 2000);
  return rest;
};

export function quotasContract(backend: StoreBackend): void {
  describe('storage quotas', () => {
    const fresh = freshStore(backend);

    it("refuses a classifier past the organization's maxModels, storing nothing, and counts each organization apart", async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      await store.createOrganization('globex');
      const limit: QueueLimits = { maxQueuedJobs: 10, maxModels: 1 };
      expect(await store.createModelWithJob(model(first), examples, {}, limit)).toEqual({ created: true, queued: 1 });
      expect(await store.createModelWithJob(model(second), examples, {}, limit)).toEqual({
        created: false,
        queued: 1,
        quota: { quota: 'models', used: 1, limit: 1 },
      });
      expect(await store.getModel(second)).toBeNull();
      expect(await store.getJob(second)).toBeNull();
      expect(await store.createModelWithJob(model(second, 'globex'), examples, {}, limit)).toEqual({ created: true, queued: 1 });
      // Deleting a classifier makes room for the next.
      expect(await store.deleteModel(first)).toBe(true);
      expect(await store.createModelWithJob(model('svc-small-000000000003'), examples, {}, limit)).toEqual({ created: true, queued: 1 });
    });

    it("refuses a version past maxVersions (the classifier's own row is version 1), and a version adds no classifier", async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      const limit: QueueLimits = { maxQueuedJobs: 10, maxModels: 1, maxVersions: 2 };
      await store.createModelWithJob(model(first), examples, {}, limit);
      const added = await store.versions.add(first, versionOf(first), examples, {}, limit);
      expect([added.created, added.queued, added.version?.version]).toEqual([true, 2, 2]);
      expect(await store.versions.add(first, versionOf(first), examples, {}, limit)).toEqual({
        created: false,
        queued: 2,
        quota: { quota: 'versions', used: 2, limit: 2 },
        version: null,
      });
      expect((await store.versions.list(first)).map((v) => v.version)).toEqual([1, 2]);
      expect(await store.getModel(`${first}.v3`)).toBeNull();
      expect(await store.versions.remove(first, 2)).toBe('deleted');
      expect((await store.versions.add(first, versionOf(first), examples, {}, limit)).version?.version).toBe(3);
    });

    it('charges each row its options, examples twice, 4096 per example and 2 MiB, and refuses what would pass maxStoredBytes', async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      const limit: QueueLimits = { maxQueuedJobs: 10, maxStoredBytes: 3 * kCharge - 1 };
      expect(await store.createModelWithJob(model(first), examples, {}, limit)).toEqual({ created: true, queued: 1 });
      expect((await store.versions.add(first, versionOf(first), examples, {}, limit)).created).toBe(true);
      // Two rows hold 2 x kCharge; a third would pass the quota by one byte, as a classifier or as a version.
      expect(await store.createModelWithJob(model(second), examples, {}, limit)).toEqual({
        created: false,
        queued: 2,
        quota: { quota: 'storage', used: 2 * kCharge, needed: kCharge, limit: 3 * kCharge - 1 },
      });
      expect((await store.versions.add(first, versionOf(first), examples, {}, limit)).quota).toEqual({
        quota: 'storage',
        used: 2 * kCharge,
        needed: kCharge,
        limit: 3 * kCharge - 1,
      });
      // Multi-byte text counts its UTF-8 bytes; options count as stored JSON.
      const wide = [{ text: 'été', label: true, label_text: 'positive' }];
      expect((await store.createModelWithJob(model(second), wide, { a: 1 }, { maxQueuedJobs: 10, maxStoredBytes: 1 })).quota).toEqual({
        quota: 'storage',
        used: 2 * kCharge,
        needed: 2 * 1024 * 1024 + '{"a":1}'.length + 2 * (5 + 8) + 4096,
        limit: 1,
      });
      // Without quotas in the limit (an operator's own insert) nothing is counted, and the row is still charged.
      expect(await store.createModelWithJob(model(second), examples, {})).toEqual({ created: true, queued: 3 });
      expect(
        (await store.createModelWithJob(model('svc-small-000000000003'), examples, {}, { maxQueuedJobs: 10, maxStoredBytes: 3 * kCharge }))
          .quota,
      ).toEqual({
        quota: 'storage',
        used: 3 * kCharge,
        needed: kCharge,
        limit: 3 * kCharge,
      });
    });

    it('lets one of two stores queueing at once take the last slot, never both', async () => {
      const { store, location } = fresh;
      await store.createOrganization('acme');
      const other = await backend.open(location);
      try {
        const limit: QueueLimits = { maxQueuedJobs: 10, maxModels: 1 };
        const outcomes = await Promise.all([
          store.createModelWithJob(model(first), examples, {}, limit),
          other.createModelWithJob(model(second), examples, {}, limit),
        ]);
        expect(outcomes.map((o) => o.created).sort()).toEqual([false, true]);
        expect((await store.listModels('acme')).length).toBe(1);
      } finally {
        await other.close();
      }
    });
  });
}
