// Lease fencing, step by step on a clock of our own: runner 1 claims a job, its lease lapses (its heartbeat would
// have come too late), runner 2 claims the job and trains it; then runner 1 wakes up and finishes its training. Its
// late writes (the model, progress, the job's end) are refused, and the model is written once. Both runners carry
// the same name, as a replica that claims its own lapsed job again does: the claim's token, not the name, fences.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { JobRunner } from '../../src/service/jobs.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/types.js';
import { imdbExamples } from '../_support/examples.js';
import { usePostgres } from '../_support/postgres.js';

const server = usePostgres();
const id = 'svc-small-0000000000f1';
// Long enough that no real-time heartbeat (every lease / 3) fires during a test: the clocks alone decide.
const kLeaseMs = 60_000;
const kClaimedAt = 1_000_000;

const backends: [string, (dir: string) => Promise<Store>][] = [
  ['SQLite', async (dir) => SqliteStore.open(dir)],
  ['PostgreSQL', async () => PostgresStore.open(await server.cluster.createDatabase())],
];

describe.each(backends)('a runner whose lease lapsed, on %s', (_name, open) => {
  let dir: string;
  let store: Store;
  const runners: JobRunner[] = [];
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-fencing-'));
    store = await open(dir);
    await store.createOrganization('acme');
    await store.createModelWithJob(
      {
        id,
        orgId: 'acme',
        baseModel: 'svc-small',
        taskType: 'binary-classification',
        labelText: 'positive',
        status: 'training',
        error: null,
        createdAt: kClaimedAt,
        updatedAt: kClaimedAt,
      },
      imdbExamples(0, 10),
      {},
    );
  });
  afterEach(async () => {
    await Promise.all(runners.splice(0).map((runner) => runner.close()));
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const runner = (runtime: WordCountRuntime, at: number) => {
    const made = new JobRunner(store, runtime, { now: () => at, leaseMs: kLeaseMs, pollMs: 3_600_000, holder: 'replica-1' });
    runners.push(made);
    return made;
  };

  it('is refused every late write, and the model is written once, by the runner holding the job', async () => {
    const hub = join(dir, 'hub');
    const late = new WordCountRuntime(hub);
    let wake!: () => void;
    late.gate = new Promise((resolve) => (wake = resolve));
    const first = runner(late, kClaimedAt);
    await first.start();
    await expect.poll(() => store.getJob(id)).toMatchObject({ state: 'running', leaseToken: 1, lockedUntil: kClaimedAt + kLeaseMs });

    // Past runner 1's lease: runner 2 claims the job (its start puts the lapsed job back in the queue first) and trains.
    const prompt = new WordCountRuntime(hub);
    const second = runner(prompt, kClaimedAt + kLeaseMs + 1);
    await second.start();
    await second.idle();
    expect(prompt.trained).toEqual([id]);
    const done = await store.getJob(id);
    expect(done).toMatchObject({ state: 'done', attempts: 2, leaseToken: 2, lockedBy: null });
    expect(await store.getModel(id)).toMatchObject({ status: 'trained', error: null, updatedAt: kClaimedAt + kLeaseMs + 1 });
    const progress = await store.getJobProgress(id);

    // Runner 1 wakes up with its training done: the fence refuses its model, and nothing of its job's end goes in.
    wake();
    await first.idle();
    expect(late.trained).toEqual([]);
    expect(await store.getJob(id)).toEqual(done);
    expect(await store.getModel(id)).toMatchObject({ status: 'trained', error: null, updatedAt: kClaimedAt + kLeaseMs + 1 });
    expect(await store.getJobProgress(id)).toEqual(progress);
    expect(await store.finishJob(id, { holder: 'replica-1', token: 1 }, kClaimedAt + 5, 'late')).toBe(false);
  });

  it('keeps its job when no one claimed it again: the fence renews the lease and the model is written', async () => {
    const runtime = new WordCountRuntime(join(dir, 'hub'));
    let wake!: () => void;
    runtime.gate = new Promise((resolve) => (wake = resolve));
    let now = kClaimedAt;
    const only = new JobRunner(store, runtime, { now: () => now, leaseMs: kLeaseMs, pollMs: 3_600_000, holder: 'replica-1' });
    runners.push(only);
    await only.start();
    await expect.poll(() => store.getJob(id)).toMatchObject({ state: 'running', leaseToken: 1 });
    now = kClaimedAt + kLeaseMs + 500; // lapsed, but nobody took the job
    wake();
    await only.idle();
    expect(runtime.trained).toEqual([id]);
    expect(await store.getJob(id)).toMatchObject({ state: 'done', attempts: 1, leaseToken: 1 });
  });
});
