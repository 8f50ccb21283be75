// Several replicas' services on one PostgreSQL database, each with its own store (its own connections) and job
// runner, sharing one hub folder: the job queue, leases and heartbeats between them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { type Principal, SvcService } from '../../src/service/service.js';
import { PostgresStore } from '../../src/store/postgres.js';
import type { TrainingExample } from '../../src/store/types.js';
import { imdbExamples } from '../_support/examples.js';
import { usePostgres } from '../_support/postgres.js';

const examples: TrainingExample[] = imdbExamples(0, 10);
const request = { model: 'svc-small', task_type: 'binary-classification', examples };
// Short leases and quick looks at the queue, so that a take-over happens within the test.
const kLeaseMs = 400;

const server = usePostgres();
let url: string;
let hub: string;
const opened: SvcService[] = [];

async function replica(holder: string, slots = 1): Promise<{ service: SvcService; runtime: WordCountRuntime }> {
  const runtime = new WordCountRuntime(hub, slots);
  const service = new SvcService({
    store: await PostgresStore.open(url),
    runtime,
    retention: false,
    jobs: { leaseMs: kLeaseMs, pollMs: 50, holder },
  });
  opened.push(service);
  return { service, runtime };
}

async function until<T>(look: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  // Up to 30 s: the machine may be busy with other work.
  for (let i = 0; i < 1200; i += 1) {
    const value = await look();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('gave up waiting');
}

let acme: Principal;
beforeEach(async () => {
  url = await server.cluster.createDatabase();
  hub = mkdtempSync(join(tmpdir(), 'svc-replicas-'));
  const { service } = await replica('setup');
  await service.createOrganization('acme');
  acme = await service.authenticate(`Bearer ${(await service.createApiKey('acme')).key}`);
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((service) => service.close()));
  rmSync(hub, { recursive: true, force: true });
});

describe('replicas on one PostgreSQL database', () => {
  it('trains on a free replica a job queued through a busy one, and both predict with it', async () => {
    await opened[0].store.setOrgLimits('acme', { maxRunningJobs: 2 });
    const one = await replica('replica-1');
    one.runtime.gate = new Promise(() => {}); // replica-1's one training slot stays busy
    const busy = await one.service.train(acme, request);
    await until(
      () => one.service.store.getJob(busy.id),
      (j) => j?.lockedBy === 'replica-1',
    );
    const two = await replica('replica-2');
    await two.service.start();
    const model = await one.service.train(acme, request);
    expect(
      await until(
        () => one.service.getModel(acme, model.id),
        (m) => m.status !== 'training',
      ),
    ).toEqual({ ...model, status: 'trained' });
    expect([one.runtime.trained, two.runtime.trained]).toEqual([[], [model.id]]);
    const body = { model: model.id, inputs: ['A wonderful, moving film.'] };
    expect(await one.service.predict(acme, body)).toEqual(await two.service.predict(acme, body));
  });

  it("leaves a live replica's job alone at start-up and takes it over once its lease ends", async () => {
    const store = opened[0].store;
    const id = 'svc-small-00000000000a';
    const now = Date.now();
    await store.createModelWithJob(
      {
        id,
        orgId: 'acme',
        baseModel: 'svc-small',
        taskType: 'binary-classification',
        labelText: 'positive',
        status: 'training',
        error: null,
        createdAt: now,
        updatedAt: now,
      },
      examples,
      {},
    );
    // replica-1 claims the job, then dies without a heartbeat.
    const claimedAt = Date.now();
    await store.claimNextJob(claimedAt, { maxRunningJobs: 1, holder: 'replica-1', leaseMs: kLeaseMs });
    const two = await replica('replica-2');
    await two.service.start();
    expect(await store.getJob(id)).toMatchObject({ state: 'running', attempts: 1, lockedBy: 'replica-1' });
    const job = await until(
      () => store.getJob(id),
      (j) => j?.state === 'done',
    );
    expect(job).toMatchObject({ state: 'done', attempts: 2, lockedBy: null, lockedUntil: null });
    expect(job!.updatedAt).toBeGreaterThan(claimedAt + kLeaseMs);
    expect(two.runtime.trained).toEqual([id]);
    expect((await two.service.getModel(acme, id)).status).toBe('trained');
  });

  it('fails a job that three replicas died running, instead of starting it a fourth time', async () => {
    const store = opened[0].store;
    const id = 'svc-small-00000000000b';
    const past = Date.now() - 60_000;
    await store.createModelWithJob(
      {
        id,
        orgId: 'acme',
        baseModel: 'svc-small',
        taskType: 'binary-classification',
        labelText: 'positive',
        status: 'training',
        error: null,
        createdAt: past,
        updatedAt: past,
      },
      examples,
      {},
    );
    // Three replicas claimed it in turn, each dying within its 1 ms lease.
    for (let i = 0; i < 3; i += 1) {
      expect(await store.claimNextJob(past + i * 10, { maxRunningJobs: 1, holder: `dead-${i}`, leaseMs: 1 })).toMatchObject({
        attempts: i + 1,
      });
    }
    const two = await replica('replica-2');
    await two.service.start();
    const job = await until(
      () => store.getJob(id),
      (j) => j?.state === 'failed',
    );
    expect(job).toMatchObject({ state: 'failed', attempts: 4, lockedBy: null });
    expect(await two.service.getModel(acme, id)).toMatchObject({
      status: 'failed',
      error: 'training was interrupted 3 times (the service stopped while it ran)',
    });
    expect(two.runtime.trained).toEqual([]);
  });

  it('stops a job on the replica running it when another replica deletes its model', async () => {
    const one = await replica('replica-1');
    const two = await replica('replica-2');
    two.runtime.gate = new Promise(() => {}); // training that would never end by itself
    await two.service.start();
    const model = await two.service.train(acme, request);
    await until(
      () => one.service.store.getJob(model.id),
      (j) => j?.lockedBy === 'replica-2',
    );
    await one.service.deleteModel(acme, model.id);
    // replica-2 sees it at its next heartbeat and stops: nothing runs there any more.
    await two.service.idle();
    expect(two.runtime.trained).toEqual([]);
    expect(await two.service.store.countJobs()).toEqual({ queued: 0, running: 0, done: 0, failed: 0 });
  });

  it('runs each of 200 queued jobs exactly once on 2 replicas with 2 training slots each', async () => {
    const store = opened[0].store;
    await store.setOrgLimits('acme', { maxRunningJobs: 4 });
    const now = Date.now();
    const ids = Array.from({ length: 200 }, (_, n) => `svc-small-${n.toString(16).padStart(12, '0')}`);
    for (const id of ids) {
      await store.createModelWithJob(
        {
          id,
          orgId: 'acme',
          baseModel: 'svc-small',
          taskType: 'binary-classification',
          labelText: 'positive',
          status: 'training',
          error: null,
          createdAt: now,
          updatedAt: now,
        },
        examples,
        {},
      );
    }
    const one = await replica('replica-1', 2);
    const two = await replica('replica-2', 2);
    await Promise.all([one.service.start(), two.service.start()]);
    await until(
      () => store.countJobs(),
      (counts) => counts.done === 200,
    );
    const ran = [...one.runtime.trained, ...two.runtime.trained];
    expect(ran.length).toBe(200);
    expect([...new Set(ran)].sort()).toEqual(ids);
    // Both replicas did some of the work.
    expect(one.runtime.trained.length).toBeGreaterThan(0);
    expect(two.runtime.trained.length).toBeGreaterThan(0);
    expect(await store.countJobs()).toEqual({ queued: 0, running: 0, done: 200, failed: 0 });
  });
});
