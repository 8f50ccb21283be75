// A replica killed with SIGKILL in the middle of fine-tuning: another replica on the same PostgreSQL database
// takes the job over once the dead one's lease has ended, and the model reaches `trained`, once.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { readManifest } from '../../src/model/directory.js';
import { kDefaultLeaseMs } from '../../src/service/jobs.js';
import { PostgresStore } from '../../src/store/postgres.js';
import type { TrainingJob } from '../../src/store/types.js';
import { exited, serve, svc } from '../_support/cli.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { usePostgres } from '../_support/postgres.js';
import { kLevelSlowdown } from '../_support/level.js';

const pgServer = usePostgres();
const dir = mkdtempSync(join(tmpdir(), 'svc-failover-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function json(url: string, key: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  return JSON.parse((await httpCall(url, method, path, key, body)).text) as Record<string, unknown>;
}

describe('a replica killed while it trains', () => {
  it('leaves its job to another replica after the lease, which trains the model once', { timeout: 300_000 * kLevelSlowdown }, async () => {
    const database = await pgServer.cluster.createDatabase();
    const artifacts = join(dir, 'models');
    expect((await svc(['orgs', 'create', 'acme', '--database', database])).code).toBe(0);
    const key = (await svc(['keys', 'create', '--org', 'acme', '--database', database])).stdout.trim();
    const flags = (name: string) => [
      '--database',
      database,
      '--artifacts',
      artifacts,
      '--data',
      join(dir, name),
      '--workers',
      '1',
      '--engine-threads',
      '1',
    ];
    const store = await PostgresStore.open(database);
    const one = await serve(flags('replica-1'));
    const two = await serve(flags('replica-2')).catch(async (error: unknown) => {
      one.child.kill('SIGKILL');
      throw error;
    });
    try {
      const model = await json(one.url, key, 'POST', '/v2/train', {
        model: 'svc-small',
        task_type: 'binary-classification',
        examples: imdbExamples(20, 10),
        num_iterations: 4,
      });
      const id = model.id as string;
      let progress: Record<string, unknown> = {};
      for (let i = 0; i < 600 && progress.stage == null; i += 1) progress = await json(one.url, key, 'GET', `/v2/models/${id}/progress`);
      // replica-1 holds the job (it was queued there and claimed at once) and is fine-tuning it.
      expect(progress).toMatchObject({ status: 'training', stage: 'finetune' });
      // replica-2 runs nothing, and answers the same stage from the store (written by the holder, at most a second old).
      let elsewhere: Record<string, unknown> = {};
      for (let i = 0; i < 100 && elsewhere.stage !== 'finetune'; i += 1) {
        elsewhere = await json(two.url, key, 'GET', `/v2/models/${id}/progress`);
        if (elsewhere.stage !== 'finetune') await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(elsewhere).toMatchObject({ status: 'training', stage: 'finetune', total: progress.total });
      one.child.kill('SIGKILL');
      expect(await exited(one.child)).toBe('SIGKILL');
      const held = (await store.getJob(id))!;
      expect(held).toMatchObject({ state: 'running', attempts: 1 });
      expect(held.lockedBy?.startsWith(`${hostname()}:${one.child.pid}:`)).toBe(true);
      expect(held.lockedUntil! - Date.now()).toBeLessThanOrEqual(kDefaultLeaseMs);

      // replica-2 leaves the lease alone while it lasts, then claims the job: a second start.
      let taken: TrainingJob | null = held;
      for (let i = 0; i < 600 && taken?.lockedBy === held.lockedBy; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        taken = await store.getJob(id);
      }
      expect(taken?.attempts).toBe(2);
      expect(taken!.updatedAt).toBeGreaterThan(held.lockedUntil!);

      let current = await json(two.url, key, 'GET', `/v2/models/${id}`);
      for (let i = 0; i < 1800 * kLevelSlowdown && current.status === 'training'; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        current = await json(two.url, key, 'GET', `/v2/models/${id}`);
      }
      // The metrics are the ones the manifest replica two wrote holds.
      const { metrics } = await readManifest(join(artifacts, 'acme', id));
      expect(current).toEqual({ ...model, status: 'trained', metrics });
      expect(await store.getJob(id)).toMatchObject({ state: 'done', attempts: 2, lockedBy: null });
      expect(await store.countJobs()).toEqual({ queued: 0, running: 0, done: 1, failed: 0 });
      const predicted = await json(two.url, key, 'POST', '/v2/predict', { model: id, inputs: ['A wonderful, moving film.'] });
      expect((predicted.predictions as unknown[]).length).toBe(1);
      // One model directory in the shared folder, and no publish left half-done beside it.
      expect(readdirSync(join(artifacts, 'acme'))).toEqual([id]);
    } finally {
      if (one.child.exitCode === null && one.child.signalCode === null) one.child.kill('SIGKILL');
      two.child.kill('SIGTERM');
      expect(await exited(two.child)).toBe(0);
      await store.close();
    }
  });
});
