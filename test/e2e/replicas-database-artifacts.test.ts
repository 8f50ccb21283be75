// Two `svc serve` processes on one PostgreSQL database and no shared folder: the model files live in the database,
// and each replica fetches a model into its own --data cache before it loads it. Train through one, poll, predict
// and pull the hub copy through the other.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

import { exited, serve, svc } from '../_support/cli.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { usePostgres } from '../_support/postgres.js';
import { kLevelSlowdown } from '../_support/level.js';

const examples = imdbExamples(0, 10);
const pgServer = usePostgres();
const dir = mkdtempSync(join(tmpdir(), 'svc-replicas-db-artifacts-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A hub file's status, length and SHA-256, fetched as bytes. */
async function hubFile(url: string, key: string, path: string): Promise<{ status: number; length: number; sha256: string }> {
  const response = await fetch(url + path, { headers: { authorization: `Bearer ${key}` } });
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, length: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

async function rowCounts(url: string): Promise<{ files: number; blobs: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ files: number; blobs: number }>(
      'SELECT (SELECT COUNT(*)::int FROM artifact_files) AS files, (SELECT COUNT(*)::int FROM artifact_blobs) AS blobs',
    );
    return rows[0];
  } finally {
    await client.end();
  }
}

describe('two svc serve replicas on one database, model files in the database', () => {
  it(
    'train through one; the other fetches the model from the database to predict and to serve the hub',
    async () => {
      const database = await pgServer.cluster.createDatabase();
      expect((await svc(['orgs', 'create', 'acme', '--database', database])).code).toBe(0);
      const key = (await svc(['keys', 'create', '--org', 'acme', '--database', database])).stdout.trim();
      const flags = (data: string) => ['--database', database, '--data', join(dir, data), '--workers', '1', '--engine-threads', '1'];
      const [one, two] = await Promise.all([serve(flags('one')), serve([...flags('two'), '--model-cache-mb', '512'])]);
      try {
        const train = { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false };
        const models: { id: string; status: string }[] = [];
        for (const texts of [examples, imdbExamples(10, 10)]) {
          const trained = await httpCall(one.url, 'POST', '/v2/train', key, { ...train, examples: texts });
          expect(trained.status).toBe(200);
          models.push(JSON.parse(trained.text) as { id: string; status: string });
        }
        for (const model of models) {
          let seen = model;
          for (let i = 0; i < 1200 * kLevelSlowdown && seen.status === 'training'; i += 1) {
            await new Promise((resolve) => setTimeout(resolve, 100));
            seen = JSON.parse((await httpCall(two.url, 'GET', `/v2/models/${model.id}`, key)).text) as typeof model;
          }
          // Both replicas report the metrics of the one manifest the database holds.
          const fromOne = JSON.parse((await httpCall(one.url, 'GET', `/v2/models/${model.id}`, key)).text) as {
            metrics: Record<string, number>;
          };
          expect(Object.keys(fromOne.metrics).sort()).toEqual([
            'cv_accuracy',
            'cv_encoder',
            'cv_folds',
            'cv_macro_f1',
            'train_accuracy',
            'train_seconds',
          ]);
          expect(seen).toEqual({ ...model, status: 'trained', metrics: fromOne.metrics });
        }
        const [model] = models;

        const body = { model: model.id, inputs: ['A wonderful, moving film.', 'Dull and far too long.'] };
        const fromTwo = await httpCall(two.url, 'POST', '/v2/predict', key, body);
        const fromOne = await httpCall(one.url, 'POST', '/v2/predict', key, body);
        expect(fromTwo.status).toBe(200);
        expect(fromTwo.text).toBe(fromOne.text);
        const labels = (JSON.parse(fromTwo.text) as { predictions: { label: boolean }[] }).predictions.map((p) => p.label);
        expect(labels).toEqual([true, false]);

        const info = JSON.parse((await httpCall(two.url, 'GET', `/hub/api/models/acme/${model.id}`, key)).text) as {
          siblings: { rfilename: string }[];
        };
        const names = info.siblings.map((s) => s.rfilename);
        expect(names).toEqual([
          'config.json',
          'example_embeddings.safetensors',
          'examples.json',
          'head.json',
          'manifest.json',
          'onnx/model.onnx',
          'tokenizer.json',
          'tokenizer_config.json',
        ]);
        for (const name of names) {
          const path = `/hub/acme/${model.id}/resolve/main/${name}`;
          const [a, b] = [await hubFile(one.url, key, path), await hubFile(two.url, key, path)];
          expect(a.status).toBe(200);
          expect(b).toEqual(a);
        }

        // Two models of eight files each: config.json, tokenizer.json and tokenizer_config.json are equal across them
        // and stored once; the head, the manifest, the ONNX graph (which holds the head) and the kept examples with
        // their embeddings (what `explain` reads) are each model's own.
        expect(await rowCounts(database)).toEqual({ files: 16, blobs: 13 });
        // No hub folder anywhere: replica two holds only its cache of the model it ran.
        expect(readdirSync(dir).sort()).toEqual(['one', 'two']);
        expect(readdirSync(join(dir, 'two', 'model-cache', 'acme'))).toEqual([model.id]);

        expect((await httpCall(two.url, 'DELETE', `/v2/models/${model.id}`, key)).status).toBe(200);
        expect(await rowCounts(database)).toEqual({ files: 8, blobs: 8 });
        expect((await hubFile(one.url, key, `/hub/acme/${model.id}/resolve/main/config.json`)).status).toBe(404);
      } finally {
        one.child.kill('SIGTERM');
        two.child.kill('SIGTERM');
        expect([await exited(one.child), await exited(two.child)]).toEqual([0, 0]);
      }
      // Two trainings on one worker each, on a machine whose cores other test files share.
    },
    240_000 * kLevelSlowdown,
  );
});
