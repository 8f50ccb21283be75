// The store contract's lease part: what the holder of a running job may write (heartbeat, progress, release, end)
// and what a lapsed claim may not, once another claim took the job. contract.ts runs it for every backend.
import { describe, expect, it } from 'vitest';

import { claim, examples, freshStore, model, type StoreBackend } from './contract-fixtures.js';

export function jobLeasesContract(backend: StoreBackend): void {
  describe("a running job's lease", () => {
    const fresh = freshStore(backend);

    it('leases a running job: the holder renews it, and once it ends any runner takes the job over', async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      await store.createModelWithJob(model('svc-small-00000000000a'), examples, {});
      await store.createModelWithJob(model('svc-small-00000000000b', 'acme', 2000), examples, {});
      const one = { maxRunningJobs: 1, holder: 'replica-1', leaseMs: 100 };
      const two = { maxRunningJobs: 1, holder: 'replica-2', leaseMs: 100 };
      expect(await store.claimNextJob(1000, one)).toMatchObject({ modelId: 'svc-small-00000000000a', lockedUntil: 1100 });
      // The live lease fills acme's cap of 1 and keeps its job out of reach.
      expect(await store.claimNextJob(1050, two)).toBeNull();
      expect(await store.renewLease('svc-small-00000000000a', { holder: 'replica-1', token: 1 }, 1150)).toBe(true);
      expect(await store.renewLease('svc-small-00000000000a', { holder: 'replica-2', token: 1 }, 9999)).toBe(false);
      expect(await store.claimNextJob(1150, two)).toBeNull();
      // replica-1 stops beating: past the lease, replica-2 takes the job (a second start), before the newer job.
      expect(await store.claimNextJob(1151, two)).toEqual({
        modelId: 'svc-small-00000000000a',
        state: 'running',
        attempts: 2,
        options: {},
        createdAt: 1000,
        updatedAt: 1151,
        lockedBy: 'replica-2',
        lockedUntil: 1251,
        leaseToken: 2,
      });
      // replica-1's next heartbeat learns it lost the job; a deleted model's holder learns the same way.
      expect(await store.renewLease('svc-small-00000000000a', { holder: 'replica-1', token: 1 }, 1200)).toBe(false);
      expect(await store.renewLease('svc-small-00000000000a', { holder: 'replica-2', token: 2 }, 1300)).toBe(true);
      // Nor may it write the job's end: the result of the holder counts.
      expect(await store.finishJob('svc-small-00000000000a', { holder: 'replica-1', token: 1 }, 1210, null)).toBe(false);
      expect(await store.getModel('svc-small-00000000000a')).toMatchObject({ status: 'training', updatedAt: 1000 });
      await store.deleteModel('svc-small-00000000000a');
      expect(await store.renewLease('svc-small-00000000000a', { holder: 'replica-2', token: 2 }, 1400)).toBe(false);
      expect(await store.claimNextJob(1160, one)).toMatchObject({ modelId: 'svc-small-00000000000b', attempts: 1 });
    });

    it('ends a job and its model together, trained or failed with the reason', async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      await store.createModelWithJob(model('svc-small-00000000000a'), examples, {});
      await store.createModelWithJob(model('svc-small-00000000000b', 'acme', 2000), examples, {});
      await store.claimNextJob(3000, claim);
      expect(await store.finishJob('svc-small-00000000000a', { holder: 'runner-1', token: 1 }, 3100, null)).toBe(true);
      expect(await store.getModel('svc-small-00000000000a')).toMatchObject({ status: 'trained', error: null, updatedAt: 3100 });
      expect(await store.getJob('svc-small-00000000000a')).toMatchObject({ state: 'done', updatedAt: 3100, lockedBy: null });
      // A job already ended is not ended twice.
      expect(await store.finishJob('svc-small-00000000000a', { holder: 'runner-1', token: 1 }, 3150, 'late')).toBe(false);
      await store.claimNextJob(3200, claim);
      expect(await store.finishJob('svc-small-00000000000b', { holder: 'runner-1', token: 1 }, 3300, 'the examples ran out')).toBe(true);
      expect(await store.getModel('svc-small-00000000000b')).toMatchObject({ status: 'failed', error: 'the examples ran out' });
      expect(await store.getJob('svc-small-00000000000b')).toMatchObject({ state: 'failed', lockedBy: null, lockedUntil: null });
    });

    it("keeps the holder's latest progress of a job for every reader, the last one after the job ends, none for a new attempt", async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      await store.createModelWithJob(model('svc-small-00000000000a'), examples, {});
      const id = 'svc-small-00000000000a';
      const step = { stage: 'finetune', done: 3, total: 50, loss: 0.25 };
      expect(await store.getJobProgress(id)).toBeNull();
      // Not running yet: nobody holds it, so nothing is written.
      expect(await store.recordJobProgress(id, { holder: 'replica-1', token: 0 }, step)).toBe(false);
      await store.claimNextJob(1000, { maxRunningJobs: 1, holder: 'replica-1', leaseMs: 100 });
      expect(await store.recordJobProgress(id, { holder: 'replica-2', token: 1 }, step)).toBe(false);
      expect(await store.getJobProgress(id)).toBeNull();
      expect(await store.recordJobProgress(id, { holder: 'replica-1', token: 1 }, step)).toBe(true);
      // Only the four fields are kept, whatever else the object carries.
      const fit = { stage: 'fit', done: 0, total: 1, loss: null, extra: 'dropped' };
      expect(await store.recordJobProgress(id, { holder: 'replica-1', token: 1 }, fit)).toBe(true);
      expect(await store.getJobProgress(id)).toEqual({ stage: 'fit', done: 0, total: 1, loss: null });
      // Its holder died: the next attempt starts with no progress.
      expect(await store.claimNextJob(1101, { maxRunningJobs: 1, holder: 'replica-2', leaseMs: 100 })).toMatchObject({ attempts: 2 });
      expect(await store.getJobProgress(id)).toBeNull();
      expect(await store.recordJobProgress(id, { holder: 'replica-2', token: 2 }, { stage: 'save', done: 1, total: 1, loss: null })).toBe(
        true,
      );
      expect(await store.finishJob(id, { holder: 'replica-2', token: 2 }, 1150, null)).toBe(true);
      expect(await store.getJobProgress(id)).toEqual({ stage: 'save', done: 1, total: 1, loss: null });
      // Once ended, the job takes no more progress from anyone.
      expect(await store.recordJobProgress(id, { holder: 'replica-2', token: 2 }, step)).toBe(false);
      expect(await store.getJobProgress('svc-small-0000000000ff')).toBeNull();
    });

    it('refuses every write of a lapsed claim once the job was claimed again, even by a runner of the same name', async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      await store.createModelWithJob(model('svc-small-00000000000a'), examples, {});
      const id = 'svc-small-00000000000a';
      const same = { maxRunningJobs: 1, holder: 'replica-1', leaseMs: 100 };
      const first = await store.claimNextJob(1000, same);
      // Its heartbeat came too late: the lease ended and the same-named runner (a restart, a second loop) claimed again.
      const second = await store.claimNextJob(1101, same);
      expect([first?.leaseToken, second?.leaseToken]).toEqual([1, 2]);
      const stale = { holder: 'replica-1', token: 1 };
      const live = { holder: 'replica-1', token: 2 };
      const step = { stage: 'embed', done: 1, total: 20, loss: null };
      expect(await store.renewLease(id, stale, 5000)).toBe(false);
      expect(await store.recordJobProgress(id, stale, step)).toBe(false);
      await store.releaseJob(id, stale, 1150);
      expect(await store.finishJob(id, stale, 1160, 'the stale runner failed')).toBe(false);
      expect(await store.getJob(id)).toMatchObject({ state: 'running', attempts: 2, lockedUntil: 1201, leaseToken: 2 });
      expect(await store.getModel(id)).toMatchObject({ status: 'training', error: null });
      expect(await store.getJobProgress(id)).toBeNull();
      // The live claim's writes go through.
      expect(await store.recordJobProgress(id, live, step)).toBe(true);
      expect(await store.renewLease(id, live, 1500)).toBe(true);
      expect(await store.finishJob(id, live, 1400, null)).toBe(true);
      expect(await store.getModel(id)).toMatchObject({ status: 'trained', updatedAt: 1400 });
    });
  });
}
