// The store contract's job-queue part: jobs queued in order and under the queue cap, claimed round robin by
// organization within each running cap, each job by exactly one of many concurrent claimers. contract.ts runs it for
// every backend.
import { describe, expect, it } from 'vitest';

import type { Store } from '../../src/store/types.js';
import { claim, examples, freshStore, model, type StoreBackend } from './contract-fixtures.js';

export function jobQueueContract(backend: StoreBackend): void {
  describe('the training job queue', () => {
    const fresh = freshStore(backend);

    it('queues jobs in order, requeues interrupted ones in their place, and deletes a model with its job and examples', async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      await store.createModelWithJob(model('svc-small-00000000000a', 'acme', 1), examples, { finetune: false });
      await store.createModelWithJob(model('svc-small-00000000000b', 'acme', 2), examples, {});
      expect(await store.getJobExamples('svc-small-00000000000a')).toEqual(examples);

      const first = await store.claimNextJob(100, claim);
      expect(first).toEqual({
        modelId: 'svc-small-00000000000a',
        state: 'running',
        attempts: 1,
        options: { finetune: false },
        createdAt: 1,
        updatedAt: 100,
        lockedBy: 'runner-1',
        lockedUntil: 1100,
        leaseToken: 1,
      });
      expect(await store.getJob('svc-small-00000000000a')).toEqual(first);
      // A live lease is left alone; once it has ended (the runner died) the job goes back ahead of the newer one.
      expect(await store.requeueInterruptedJobs(1100)).toBe(0);
      expect(await store.requeueInterruptedJobs(1101)).toBe(1);
      expect(await store.getJob('svc-small-00000000000a')).toMatchObject({ state: 'queued', lockedBy: null, lockedUntil: null });
      expect((await store.claimNextJob(1200, claim))?.modelId).toBe('svc-small-00000000000a');
      expect((await store.getJob('svc-small-00000000000a'))?.attempts).toBe(2);
      await store.setJobState('svc-small-00000000000a', 'done', 1300);
      await store.setModelStatus('svc-small-00000000000a', 'trained', null, 1300);
      expect((await store.getModel('svc-small-00000000000a'))?.status).toBe('trained');
      expect(await store.getJob('svc-small-00000000000a')).toMatchObject({ state: 'done', lockedBy: null, lockedUntil: null });

      expect((await store.claimNextJob(1500, claim))?.modelId).toBe('svc-small-00000000000b');
      expect(await store.claimNextJob(1600, claim)).toBeNull();
      // Only the holder releases its job: another runner's call changes nothing.
      await store.releaseJob('svc-small-00000000000b', { holder: 'runner-2', token: 1 }, 1640);
      expect(await store.getJob('svc-small-00000000000b')).toMatchObject({ state: 'running', lockedBy: 'runner-1' });
      await store.releaseJob('svc-small-00000000000b', { holder: 'runner-1', token: 1 }, 1650);
      expect(await store.getJob('svc-small-00000000000b')).toMatchObject({
        state: 'queued',
        attempts: 0,
        updatedAt: 1650,
        lockedBy: null,
        lockedUntil: null,
      });
      // A release does not count the start, but the next claim's token is a new one.
      expect(await store.claimNextJob(1700, claim)).toMatchObject({ attempts: 1, leaseToken: 2 });

      expect(await store.deleteModel('svc-small-00000000000b')).toBe(true);
      expect(await store.deleteModel('svc-small-00000000000b')).toBe(false);
      expect(await store.getJob('svc-small-00000000000b')).toBeNull();
      expect(await store.getJobExamples('svc-small-00000000000b')).toEqual([]);
      expect((await store.listModels('acme')).map((m) => m.id)).toEqual(['svc-small-00000000000a']);
    });

    it('claims jobs round robin by organization, oldest first within one, within each running cap', async () => {
      const { store } = fresh;
      for (const org of ['acme', 'globex', 'initech']) await store.createOrganization(org);
      const id = (n: number) => `svc-small-${n.toString(16).padStart(12, '0')}`;
      // acme queues three jobs first, then globex two, then initech one.
      const queue: [number, string][] = [
        [1, 'acme'],
        [2, 'acme'],
        [3, 'acme'],
        [4, 'globex'],
        [5, 'globex'],
        [6, 'initech'],
      ];
      for (const [n, org] of queue) await store.createModelWithJob(model(id(n), org, n), examples, {});
      await store.setOrgLimits('acme', { maxRunningJobs: 2 });
      const next = async (at: number) => (await store.claimNextJob(at, claim))?.modelId ?? null;
      // Each organization's first job, in queue order; then acme's second (its cap is 2); the others are at theirs.
      expect([await next(10), await next(11), await next(12), await next(13), await next(14)]).toEqual([id(1), id(4), id(6), id(2), null]);
      // globex's job ends: globex (served at 11) is due before acme (served at 13), but acme's slot is free too.
      await store.setJobState(id(4), 'done', 20);
      await store.setJobState(id(1), 'done', 21);
      expect([await next(22), await next(23), await next(24)]).toEqual([id(5), id(3), null]);
    });

    it('refuses to queue beyond the cap in the same transaction, counting only queued jobs', async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      await store.createOrganization('globex');
      const id = (n: number) => `svc-small-${n.toString(16).padStart(12, '0')}`;
      expect(await store.createModelWithJob(model(id(1)), examples, {}, { maxQueuedJobs: 2 })).toEqual({ created: true, queued: 1 });
      expect(await store.createModelWithJob(model(id(2)), examples, {}, { maxQueuedJobs: 2 })).toEqual({ created: true, queued: 2 });
      expect(await store.createModelWithJob(model(id(3)), examples, {}, { maxQueuedJobs: 2 })).toEqual({ created: false, queued: 2 });
      expect(await store.getModel(id(3))).toBeNull();
      // Another organization's queue is its own.
      expect(await store.createModelWithJob(model(id(4), 'globex'), examples, {}, { maxQueuedJobs: 2 })).toEqual({
        created: true,
        queued: 1,
      });
      // A job that started no longer counts.
      await store.claimNextJob(10, claim);
      expect(await store.createModelWithJob(model(id(5)), examples, {}, { maxQueuedJobs: 2 })).toEqual({ created: true, queued: 2 });
    });

    it('gives each of 200 queued jobs to exactly one of 4 concurrent claimers on 2 stores', async () => {
      const { store, location } = fresh;
      const orgs = Array.from({ length: 10 }, (_, i) => `org-${i}`);
      for (const org of orgs) await store.createOrganization(org);
      const ids = Array.from({ length: 200 }, (_, n) => `svc-small-${n.toString(16).padStart(12, '0')}`);
      for (const [n, id] of ids.entries()) await store.createModelWithJob(model(id, orgs[n % orgs.length], n), examples, {});
      const second = await backend.open(location);
      const claimed = new Map<string, string[]>();
      const claimer = async (on: Store, holder: string): Promise<void> => {
        const mine: string[] = [];
        claimed.set(holder, mine);
        for (;;) {
          const job = await on.claimNextJob(Date.now(), { maxRunningJobs: 200, holder, leaseMs: 60_000 });
          if (job === null) {
            // SKIP LOCKED passes over jobs another claimer is taking: done only when none is left queued.
            if ((await on.countJobs()).queued === 0) return;
            continue;
          }
          mine.push(job.modelId);
          await on.setJobState(job.modelId, 'done', Date.now());
        }
      };
      try {
        await Promise.all([claimer(store, 'a1'), claimer(store, 'a2'), claimer(second, 'b1'), claimer(second, 'b2')]);
      } finally {
        await second.close();
      }
      const all = [...claimed.values()].flat();
      expect(all.length).toBe(200);
      expect([...new Set(all)].sort()).toEqual(ids);
      expect(await store.countJobs()).toEqual({ queued: 0, running: 0, done: 200, failed: 0 });
      for (const id of ids) expect((await store.getJob(id))?.attempts).toBe(1);
    });

    it("keeps an organization's running cap when 4 claimers on 2 stores race for its jobs", async () => {
      const { store, location } = fresh;
      await store.createOrganization('acme');
      await store.setOrgLimits('acme', { maxRunningJobs: 2 });
      for (let n = 0; n < 10; n += 1)
        await store.createModelWithJob(model(`svc-small-${n.toString(16).padStart(12, '0')}`, 'acme', n), examples, {});
      const second = await backend.open(location);
      try {
        const at = Date.now();
        // Each claimer tries three times; only two jobs may run at once, whoever claims them.
        const claimer = async (on: Store, holder: string) => {
          const got = [];
          for (let i = 0; i < 3; i += 1) got.push(await on.claimNextJob(at + i, { maxRunningJobs: 1, holder, leaseMs: 60_000 }));
          return got.filter((job) => job !== null).length;
        };
        const counts = await Promise.all([claimer(store, 'a1'), claimer(store, 'a2'), claimer(second, 'b1'), claimer(second, 'b2')]);
        expect(counts.reduce((a, b) => a + b, 0)).toBe(2);
        expect(await store.countJobs()).toEqual({ queued: 8, running: 2, done: 0, failed: 0 });
      } finally {
        await second.close();
      }
    });
  });
}
