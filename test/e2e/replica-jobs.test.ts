// Many queued jobs and two `svc serve` replicas on one PostgreSQL database, model files in the database too: every
// job is trained exactly once, by one replica, counted in the replicas' own logs and in the store. Each frozen job
// writes a whole ONNX graph, so the suite queues a few dozen (the same count with 200 jobs runs against the
// service's job runners in test/service/replicas.test.ts); SVC_REPLICA_JOBS=200 runs this file with 200.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import type { StartedProcess } from '../../fixtures/serve-process.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { exited, serve, svc } from '../_support/cli.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { usePostgres } from '../_support/postgres.js';
import { kLevelSlowdown } from '../_support/level.js';

const kJobs = Number(process.env.SVC_REPLICA_JOBS ?? 24);
const pgServer = usePostgres();
const dir = mkdtempSync(join(tmpdir(), 'svc-replica-jobs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Model ids in the `NODE_DEBUG=svc` lines of one replica's output that match `pattern` (its one group: the id). */
function logged(output: string, pattern: RegExp): string[] {
  return [...output.matchAll(new RegExp(pattern, 'g'))].map((match) => match[1]!);
}

describe('queued jobs on two svc serve replicas', () => {
  it(
    `trains each of ${kJobs} frozen models exactly once, on both replicas`,
    { timeout: (120_000 + 10_000 * kJobs) * kLevelSlowdown },
    async () => {
      const database = await pgServer.cluster.createDatabase();
      expect((await svc(['orgs', 'create', 'acme', '--database', database])).code).toBe(0);
      // Room for every job in the queue, and for both replicas to train at once.
      expect((await svc(['orgs', 'limits', 'acme', '--queued', String(kJobs), '--running', '2', '--database', database])).code).toBe(0);
      const key = (await svc(['keys', 'create', '--org', 'acme', '--database', database])).stdout.trim();
      // Two workers of one engine thread each (the 2 cores): one trains, one predicts.
      const flags = (name: string) => ['--database', database, '--data', join(dir, name), '--workers', '2', '--engine-threads', '1'];
      const starts = await Promise.allSettled([serve(flags('one'), { NODE_DEBUG: 'svc' }), serve(flags('two'), { NODE_DEBUG: 'svc' })]);
      const failed = starts.find((start) => start.status === 'rejected');
      if (failed) {
        for (const start of starts) if (start.status === 'fulfilled') start.value.child.kill('SIGKILL');
        throw failed.reason;
      }
      const [one, two] = starts.map((start) => (start as PromiseFulfilledResult<StartedProcess>).value) as [StartedProcess, StartedProcess];
      const store = await PostgresStore.open(database);
      try {
        const ids: string[] = [];
        for (let n = 0; n < kJobs; n += 1) {
          // Every request through one replica or the other, each with its own examples.
          const { status, text } = await httpCall(n % 2 === 0 ? one.url : two.url, 'POST', '/v2/train', key, {
            model: 'svc-small',
            task_type: 'binary-classification',
            examples: imdbExamples(n, 10),
            finetune: false,
          });
          expect(status, text).toBe(200);
          ids.push((JSON.parse(text) as { id: string }).id);
        }
        // About a second a job, two at a time; 10 s of polling a job leaves room for a busy machine.
        for (let waited = 0; ; waited += 1) {
          const counts = await store.countJobs();
          if (counts.done + counts.failed === kJobs) break;
          expect(waited, JSON.stringify(counts)).toBeLessThan(100 * kJobs * kLevelSlowdown);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(await store.countJobs()).toEqual({ queued: 0, running: 0, done: kJobs, failed: 0 });
        for (const id of ids) {
          expect(await store.getModel(id)).toMatchObject({ status: 'trained' });
          expect(await store.getJob(id)).toMatchObject({ state: 'done', attempts: 1, lockedBy: null });
        }

        // Each replica's log names the jobs it started and finished: together, every id once, on its first attempt.
        const started = [one, two].map((replica) => logged(replica.output(), /training (svc-small-[0-9a-f]{12}) \(attempt 1\)/));
        const finished = [one, two].map((replica) => logged(replica.output(), /trained (svc-small-[0-9a-f]{12})/));
        expect([...started.flat()].sort()).toEqual([...ids].sort());
        expect([...finished.flat()].sort()).toEqual([...ids].sort());
        expect(logged(one.output() + two.output(), /training (svc-small-[0-9a-f]{12}) \(attempt [2-9]\)/)).toEqual([]);
        expect(started[0]!.length).toBeGreaterThan(0);
        expect(started[1]!.length).toBeGreaterThan(0);

        // Either replica answers for any model, whichever trained it.
        const body = { model: ids[kJobs - 1], inputs: ['A wonderful, moving film.'] };
        const [fromOne, fromTwo] = [
          await httpCall(one.url, 'POST', '/v2/predict', key, body),
          await httpCall(two.url, 'POST', '/v2/predict', key, body),
        ];
        expect(fromOne.status).toBe(200);
        expect(fromTwo.text).toBe(fromOne.text);
      } finally {
        await store.close();
        one.child.kill('SIGTERM');
        two.child.kill('SIGTERM');
        expect([await exited(one.child), await exited(two.child)]).toEqual([0, 0]);
      }
    },
  );
});
