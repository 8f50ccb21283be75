// Two `svc serve` processes on one PostgreSQL database and one shared model folder, each with its own local
// data directory: train through one, poll and predict through the other, the hub copy from either.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { exited, serve, svc } from '../_support/cli.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { usePostgres } from '../_support/postgres.js';
import { kLevelSlowdown } from '../_support/level.js';

const examples = imdbExamples(0, 10);
const pgServer = usePostgres();
const dir = mkdtempSync(join(tmpdir(), 'svc-replicas-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const call = async (url: string, key: string, method: string, path: string, body?: unknown) => {
  const { status, text } = await httpCall(url, method, path, key, body);
  return { status, text };
};

describe('two svc serve replicas on one database', () => {
  // Two servers starting, a training run and its polling: minutes on 2 cores busy with the rest of the suite.
  it(
    'train through one, predict through the other with equal answers, and serve the hub copy from both',
    { timeout: 240_000 * kLevelSlowdown },
    async () => {
      const database = await pgServer.cluster.createDatabase();
      const artifacts = join(dir, 'models');
      expect((await svc(['orgs', 'create', 'acme', '--database', database])).code).toBe(0);
      const key = (await svc(['keys', 'create', '--org', 'acme', '--database', database])).stdout.trim();
      // One worker and one engine thread each: two replicas share this machine's cores. Even one --data directory
      // for both: with a database it is only a local cache, and no lock keeps the second replica out.
      const flags = [
        '--database',
        database,
        '--artifacts',
        artifacts,
        '--data',
        join(dir, 'cache'),
        '--workers',
        '1',
        '--engine-threads',
        '1',
      ];
      // Both start at once: the second waits for the first one's migrations instead of failing.
      const [one, two] = await Promise.all([serve(flags), serve(flags)]);
      try {
        expect(one.output()).toContain(`(data: ${join(dir, 'cache')}, database: ${database}, artifacts: ${artifacts})`);
        const trained = await call(one.url, key, 'POST', '/v2/train', {
          model: 'svc-small',
          task_type: 'binary-classification',
          examples,
          finetune: false,
        });
        expect(trained.status).toBe(200);
        const model = JSON.parse(trained.text) as { id: string; status: string };
        let seen = model;
        for (let i = 0; i < 1200 * kLevelSlowdown && seen.status === 'training'; i += 1) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          seen = JSON.parse((await call(two.url, key, 'GET', `/v2/models/${model.id}`)).text) as typeof model;
        }
        // Both replicas report the metrics of the one manifest the model's files hold.
        const fromReplicaOne = JSON.parse((await call(one.url, key, 'GET', `/v2/models/${model.id}`)).text) as {
          metrics: Record<string, number>;
        };
        expect(Object.keys(fromReplicaOne.metrics).sort()).toEqual([
          'cv_accuracy',
          'cv_encoder',
          'cv_folds',
          'cv_macro_f1',
          'train_accuracy',
          'train_seconds',
        ]);
        expect(seen).toEqual({ ...model, status: 'trained', metrics: fromReplicaOne.metrics });
        // Whichever replica ran the job, both tell the stage it ended in: the holder's last progress is in the store.
        const progress = `/v2/models/${model.id}/progress`;
        const [progressOne, progressTwo] = [await call(one.url, key, 'GET', progress), await call(two.url, key, 'GET', progress)];
        expect(JSON.parse(progressOne.text)).toEqual({
          object: 'training.progress',
          model: model.id,
          status: 'trained',
          stage: 'save',
          done: 1,
          total: 1,
          loss: null,
        });
        expect(progressTwo.text).toBe(progressOne.text);

        const body = { model: model.id, inputs: ['A wonderful, moving film.', 'Dull and far too long.'] };
        const [fromOne, fromTwo] = [
          await call(one.url, key, 'POST', '/v2/predict', body),
          await call(two.url, key, 'POST', '/v2/predict', body),
        ];
        expect(fromTwo.status).toBe(200);
        expect(fromTwo.text).toBe(fromOne.text);
        const labels = (JSON.parse(fromTwo.text) as { predictions: { label: boolean }[] }).predictions.map((p) => p.label);
        expect(labels).toEqual([true, false]);

        const config = `/hub/acme/${model.id}/resolve/main/config.json`;
        const [hubOne, hubTwo] = [await call(one.url, key, 'GET', config), await call(two.url, key, 'GET', config)];
        expect(hubOne.status).toBe(200);
        expect(hubTwo).toEqual(hubOne);
        // The model lives in the shared folder only; neither replica wrote a database or a hub of its own.
        expect(readdirSync(join(artifacts, 'acme'))).toEqual([model.id]);
        expect(readdirSync(dir)).toEqual(['models']);
      } finally {
        one.child.kill('SIGTERM');
        two.child.kill('SIGTERM');
        expect([await exited(one.child), await exited(two.child)]).toEqual([0, 0]);
      }
    },
  );

  it(
    "count a key's requests together: with the operator's 3 a minute, the 4th is 429 whichever replica gets it",
    { timeout: 120_000 },
    async () => {
      const database = await pgServer.cluster.createDatabase();
      expect((await svc(['orgs', 'create', 'acme', '--database', database])).code).toBe(0);
      expect((await svc(['orgs', 'limits', 'acme', '--rpm', '3', '--database', database])).code).toBe(0);
      const key = (await svc(['keys', 'create', '--org', 'acme', '--database', database])).stdout.trim();
      const flags = ['--database', database, '--data', join(dir, 'counts'), '--workers', '1', '--engine-threads', '1'];
      const [one, two] = await Promise.all([serve(flags), serve(flags)]);
      try {
        const answers = [];
        for (const url of [one.url, two.url, one.url, two.url]) answers.push((await call(url, key, 'GET', '/v2/models')).status);
        expect(answers).toEqual([200, 200, 200, 429]);
      } finally {
        one.child.kill('SIGTERM');
        two.child.kill('SIGTERM');
        expect([await exited(one.child), await exited(two.child)]).toEqual([0, 0]);
      }
    },
  );
});
