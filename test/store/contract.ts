// The store contract: every Store backend runs these same tests (test/store/sqlite.test.ts,
// test/store/postgres.test.ts). Backend-specific behaviour (files, migrations from old versions, query plans)
// stays in each backend's own file.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { type JobClaim, type ModelRecord, type Store, type TrainingExample, usageMonth } from '../../src/store/types.js';

export interface StoreBackend {
  /** A fresh, empty database: a data directory, a URL. */
  create(): Promise<string>;
  /** A store on that database, migrated to the newest schema; call again for a second process's store. */
  open(location: string): Promise<Store>;
  /** The messages of the backend's own constraint errors (the driver's wording). */
  errors: {
    duplicateOrganization: string;
    projectOfUnknownOrganization: string;
    limitsOfUnknownOrganization: string;
  };
}

export const model = (id: string, orgId = 'acme', createdAt = 1000): ModelRecord => ({
  id,
  orgId,
  baseModel: 'svc-small',
  taskType: 'binary-classification',
  labelText: 'positive',
  status: 'training',
  error: null,
  createdAt,
  updatedAt: createdAt,
});
/** A runner's claim: default cap 1, a lease of 1 s. */
export const claim: JobClaim = { maxRunningJobs: 1, holder: 'runner-1', leaseMs: 1000 };
export const examples: TrainingExample[] = [
  { text: 'good', label: true, label_text: 'positive' },
  { text: 'bad', label: false, label_text: 'positive' },
];

export function storeContract(name: string, backend: StoreBackend): void {
  describe(`${name}: the Store contract`, () => {
    let location: string;
    let store: Store;
    beforeEach(async () => {
      location = await backend.create();
      store = await backend.open(location);
    });
    afterEach(async () => {
      await store.close();
    });

    it('keeps organizations, proxy grants, keys by hash and their revocation', async () => {
      const org = await store.createOrganization('acme');
      expect(org).toEqual({ id: 'acme', createdAt: org.createdAt, proxyAccess: false });
      await expect(store.createOrganization('acme')).rejects.toThrow(backend.errors.duplicateOrganization);
      await store.setProxyAccess('acme', true);
      expect(await store.getOrganization('acme')).toEqual({ ...org, proxyAccess: true });
      expect(await store.getOrganization('nope')).toBeNull();

      const key = { id: 'key_000000000001', orgId: 'acme', hash: 'ab'.repeat(32), prefix: 'svc_AbCd', createdAt: 5, revokedAt: null };
      await store.insertApiKey(key);
      expect(await store.findApiKeyByHash('ab'.repeat(32))).toEqual(key);
      expect(await store.findApiKeyByHash('cd'.repeat(32))).toBeNull();
      expect(await store.revokeApiKey('key_000000000001', 9)).toBe(true);
      expect(await store.revokeApiKey('key_000000000001', 12)).toBe(true);
      expect(await store.revokeApiKey('key_missing', 9)).toBe(false);
      expect(await store.listApiKeys('acme')).toEqual([{ ...key, revokedAt: 9 }]);
    });

    it('keeps projects per organization', async () => {
      await store.createOrganization('acme');
      const project = { id: 'proj_0123456789ab', orgId: 'acme', name: 'chatbot', createdAt: 7, monthlyTokenBudget: null };
      await store.createProject(project);
      expect(await store.getProject('proj_0123456789ab')).toEqual(project);
      expect(await store.listProjects('acme')).toHaveLength(1);
      expect(await store.listProjects('other')).toEqual([]);
      await expect(store.createProject({ ...project, id: 'proj_x', orgId: 'ghost' })).rejects.toThrow(
        backend.errors.projectOfUnknownOrganization,
      );
      await store.setProjectBudget('proj_0123456789ab', 5000);
      expect((await store.getProject('proj_0123456789ab'))?.monthlyTokenBudget).toBe(5000);
      await store.setProjectBudget('proj_0123456789ab', null);
      expect((await store.getProject('proj_0123456789ab'))?.monthlyTokenBudget).toBeNull();
    });

    it('keeps the limits an operator set per organization, null for the ones left at the default', async () => {
      await store.createOrganization('acme');
      const unset = { maxRunningJobs: null, maxQueuedJobs: null, requestsPerMinute: null, orgRequestsPerMinute: null };
      expect(await store.getOrgLimits('acme')).toEqual(unset);
      await store.setOrgLimits('acme', { maxRunningJobs: 2, requestsPerMinute: 60 });
      await store.setOrgLimits('acme', { maxQueuedJobs: 5, orgRequestsPerMinute: 150 });
      expect(await store.getOrgLimits('acme')).toEqual({
        maxRunningJobs: 2,
        maxQueuedJobs: 5,
        requestsPerMinute: 60,
        orgRequestsPerMinute: 150,
      });
      await store.setOrgLimits('acme', { requestsPerMinute: null });
      expect(await store.getOrgLimits('acme')).toEqual({
        maxRunningJobs: 2,
        maxQueuedJobs: 5,
        requestsPerMinute: null,
        orgRequestsPerMinute: 150,
      });
      expect(await store.getOrgLimits('ghost')).toEqual(unset);
      await expect(store.setOrgLimits('ghost', { maxRunningJobs: 1 })).rejects.toThrow(backend.errors.limitsOfUnknownOrganization);
    });

    it('queues jobs in order, requeues interrupted ones in their place, and deletes a model with its job and examples', async () => {
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

    it('lists the request log newest first with a cursor', async () => {
      const row = {
        projectId: 'proj_1',
        keyId: 'key_1',
        provider: 'provider-a' as const,
        model: 'provider-a:m',
        stream: true,
        status: 200,
        ttfbMs: 1.5,
        totalMs: 3,
        tokensIn: 4,
        tokensOut: 5,
        error: null,
        requestBody: '{}',
        responseBody: '{}',
        createdAt: 1,
      };
      const ids = [];
      for (let i = 0; i < 3; i += 1) ids.push(await store.insertRequestLog({ ...row, createdAt: i }));
      await store.insertRequestLog({ ...row, projectId: 'proj_2' });
      expect((await store.listRequestLog('proj_1', { limit: 2 })).map((r) => r.id)).toEqual([ids[2], ids[1]]);
      const older = await store.listRequestLog('proj_1', { limit: 2, before: ids[1] });
      expect(older).toEqual([{ ...row, id: ids[0], createdAt: 0 }]);
    });

    it("lists the request log with each body's start and its whole size, a page bounded by bodies read, and reads one row whole", async () => {
      // The cut counts characters and the sizes bytes alike on both stores, with two-byte characters too.
      const requestBody = `{"q":"${'é'.repeat(5000)}"}`;
      const row = {
        projectId: 'proj_1',
        keyId: 'key_1',
        provider: 'provider-a' as const,
        model: 'provider-a:m',
        stream: false,
        status: 200,
        ttfbMs: 1,
        totalMs: 2,
        tokensIn: null,
        tokensOut: null,
        error: null,
        requestBody,
        responseBody: 'ok',
        createdAt: 7,
      };
      const first = await store.insertRequestLog(row);
      const second = await store.insertRequestLog({ ...row, createdAt: 8 });
      const other = await store.insertRequestLog({ ...row, projectId: 'proj_2' });
      const previews = await store.listRequestLogPreviews('proj_1', { limit: 5, previewChars: 10, maxBodyBytes: 1 << 20 });
      expect(previews).toEqual({
        rows: [second, first].map((id, i) => ({
          ...row,
          id,
          createdAt: 8 - i,
          requestBody: `{"q":"${'é'.repeat(4)}`,
          requestBodyBytes: 10_008,
          responseBodyBytes: 2,
        })),
        more: false,
      });
      // Ended by the limit, or before the row whose bodies would pass the bytes read (the first row always comes).
      const ids = async (options: { limit: number; before?: number; maxBodyBytes: number }) => {
        const page = await store.listRequestLogPreviews('proj_1', { ...options, previewChars: 10 });
        return { ids: page.rows.map((r) => r.id), more: page.more };
      };
      expect(await ids({ limit: 1, maxBodyBytes: 1 << 20 })).toEqual({ ids: [second], more: true });
      // The newest row's bodies are 10,010 bytes: the next row is read only while that is under the bound.
      expect(await ids({ limit: 5, maxBodyBytes: 10_010 })).toEqual({ ids: [second], more: true });
      expect(await ids({ limit: 5, maxBodyBytes: 10_011 })).toEqual({ ids: [second, first], more: false });
      expect(await ids({ limit: 5, maxBodyBytes: 1 })).toEqual({ ids: [second], more: true });
      expect(await ids({ limit: 5, before: second, maxBodyBytes: 1 })).toEqual({ ids: [first], more: false });
      expect(await store.getRequestLog('proj_1', first)).toEqual({ ...row, id: first });
      // Another project's row is not this project's to read.
      expect(await store.getRequestLog('proj_1', other)).toBeNull();
      expect(await store.getRequestLog('proj_2', other)).toEqual({ ...row, id: other, projectId: 'proj_2' });
    });

    it("counts each project's tokens per UTC month with every log insert, and keeps the count when log rows go", async () => {
      const row = {
        projectId: 'proj_1',
        keyId: 'key_1',
        provider: 'provider-a' as const,
        model: 'provider-a:m',
        stream: false,
        status: 200,
        ttfbMs: 1,
        totalMs: 2,
        tokensIn: 4,
        tokensOut: 5,
        error: null,
        requestBody: '{}',
        responseBody: '{}',
        createdAt: Date.UTC(2026, 10, 30, 23, 59, 59, 999),
      };
      await store.insertRequestLog(row);
      await store.insertRequestLog({ ...row, tokensIn: 10, tokensOut: null });
      await store.insertRequestLog({ ...row, tokensIn: null, tokensOut: null, status: 502 });
      await store.insertRequestLog({ ...row, createdAt: Date.UTC(2026, 11, 1, 0, 0, 0, 0), tokensIn: 1, tokensOut: 2 });
      await store.insertRequestLog({ ...row, projectId: 'proj_2', tokensIn: 100, tokensOut: 1 });
      expect(await store.getProjectUsage('proj_1', '2026-11')).toBe(19);
      expect(await store.getProjectUsage('proj_1', '2026-12')).toBe(3);
      expect(await store.getProjectUsage('proj_2', '2026-11')).toBe(101);
      expect(await store.getProjectUsage('proj_1', '2026-10')).toBe(0);
      expect(usageMonth(Date.UTC(2026, 10, 30, 23, 59, 59, 999))).toBe('2026-11');

      // Pruning the log (retention) leaves the month's count.
      expect(await store.pruneRequestLog('proj_1', { olderThan: Number.MAX_SAFE_INTEGER, keepNewest: 100, limit: 100 })).toBe(4);
      expect(await store.getProjectUsage('proj_1', '2026-11')).toBe(19);
    });

    it("prunes a project's request log by age and by count, a batch at a time", async () => {
      const row = {
        projectId: 'proj_1',
        keyId: 'key_1',
        provider: 'provider-a' as const,
        model: 'provider-a:m',
        stream: false,
        status: 200,
        ttfbMs: 1,
        totalMs: 2,
        tokensIn: 1,
        tokensOut: 1,
        error: null,
        requestBody: '{}',
        responseBody: '{}',
        createdAt: 0,
      };
      // proj_1: ten rows created at 100, 200, ..., 1000; proj_2: two old rows that must survive proj_1's pruning.
      const ids = [];
      for (let i = 1; i <= 10; i += 1) ids.push(await store.insertRequestLog({ ...row, createdAt: i * 100 }));
      await store.insertRequestLog({ ...row, projectId: 'proj_2', createdAt: 1 });
      await store.insertRequestLog({ ...row, projectId: 'proj_2', createdAt: 2 });
      expect(await store.listRequestLogProjects()).toEqual(['proj_1', 'proj_2']);

      const left = async (projectId: string) => (await store.listRequestLog(projectId, { limit: 100 })).map((r) => r.id).reverse();
      // Older than 350: three rows, at most two per call.
      expect(await store.pruneRequestLog('proj_1', { olderThan: 350, keepNewest: 100, limit: 2 })).toBe(2);
      expect(await store.pruneRequestLog('proj_1', { olderThan: 350, keepNewest: 100, limit: 2 })).toBe(1);
      expect(await store.pruneRequestLog('proj_1', { olderThan: 350, keepNewest: 100, limit: 2 })).toBe(0);
      expect(await left('proj_1')).toEqual(ids.slice(3));
      // Keep the newest four; a row both too old and beyond the count is deleted (and counted) once.
      expect(await store.pruneRequestLog('proj_1', { olderThan: 450, keepNewest: 4, limit: 100 })).toBe(3);
      expect(await left('proj_1')).toEqual(ids.slice(6));
      expect((await store.listRequestLog('proj_2', { limit: 100 })).length).toBe(2);
    });

    it('leases a running job: the holder renews it, and once it ends any runner takes the job over', async () => {
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

    it('gives each of 200 queued jobs to exactly one of 4 concurrent claimers on 2 stores', async () => {
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

    it('ends a job and its model together, trained or failed with the reason', async () => {
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
