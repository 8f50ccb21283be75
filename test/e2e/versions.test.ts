// Versions of a classifier through real servers on 127.0.0.1 with the library runtime (frozen encoder, finetune:
// false, so that a version trains in seconds): one server on SQLite, and two replicas on one PostgreSQL database with
// one shared model folder, each call going to the other replica than the one before. Train, add a version, predict
// with each, promote, roll back, delete; every refusal names its problem.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { type RunningServer, type ServerOptions, startServer } from '../../src/server/app.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';
import { usePostgres } from '../_support/postgres.js';

const pgServer = usePostgres();
const dir = mkdtempSync(join(tmpdir(), 'svc-versions-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const options = (name: string, extra: ServerOptions = {}): ServerOptions => ({
  dataDir: join(dir, name),
  port: 0,
  logLevel: 'silent',
  proxy: false,
  pool: { workers: 1, engineThreads: 1 },
  ...extra,
});
const train = (from: number, labelText = 'positive') => ({
  model: 'svc-small',
  task_type: 'binary-classification',
  examples: imdbExamples(from, 10, labelText),
  finetune: false,
});
const texts = ['A wonderful, moving film.', 'Dull and far too long.'];

interface Version {
  id: string;
  version: number;
  live: boolean;
  status: string;
  finished_at: number | null;
  error?: string;
}

async function lifecycle(servers: RunningServer[], hubFolder: string): Promise<void> {
  const { service } = servers[0];
  await service.createOrganization('acme');
  await service.createOrganization('other');
  const key = (await service.createApiKey('acme')).key;
  const otherKey = (await service.createApiKey('other')).key;
  let turn = 0;
  // Each call goes to the next server: on PostgreSQL, no replica answers two calls in a row.
  const call = async (method: string, path: string, body?: unknown, bearer = key) => {
    const { status, text } = await httpCall(servers[turn++ % servers.length].url, method, path, bearer, body);
    return { status, body: JSON.parse(text) as Record<string, unknown> & { error?: { message: string; param: string | null } } };
  };
  const settled = async (name: string) => {
    for (let i = 0; i < 1200 * kLevelSlowdown; i += 1) {
      const { body } = await call('GET', `/v2/models/${name}`);
      if (body.status !== 'training') return body;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`${name} still training`);
  };

  const first = await call('POST', '/v2/train', train(0));
  expect(first.status).toBe(200);
  const id = first.body.id as string;
  expect((await settled(id)).status).toBe('trained');

  const added = await call('POST', `/v2/models/${id}/versions`, train(10));
  expect(added.status).toBe(200);
  expect(added.body).toMatchObject({
    id: `${id}@2`,
    object: 'model.version',
    model: id,
    version: 2,
    live: false,
    status: 'training',
    finished_at: null,
  });
  // (A version in training, refused by predict and promote, is test/service/versions.test.ts's: here training may end first.)
  await settled(`${id}@2`);

  // Both versions answer by name; the classifier's id is the live one (still 1).
  const answers = async (name: string) => {
    const { status, body } = await call('POST', '/v2/predict', { model: name, inputs: texts });
    expect(status).toBe(200);
    expect(body.model).toBe(name);
    return (body.predictions as { probability: number }[]).map((p) => p.probability);
  };
  const [one, two, live] = [await answers(`${id}@1`), await answers(`${id}@2`), await answers(id)];
  expect(live).toEqual(one);
  expect(two).not.toEqual(one);

  const listed = await call('GET', `/v2/models/${id}/versions`);
  expect(listed.body.live_version).toBe(1);
  expect((listed.body.data as Version[]).map((v) => [v.id, v.version, v.live, v.status])).toEqual([
    [`${id}@1`, 1, true, 'trained'],
    [`${id}@2`, 2, false, 'trained'],
  ]);
  expect((listed.body.data as Version[]).every((v) => typeof v.finished_at === 'number')).toBe(true);

  // Promote, then roll back: the live answers follow.
  expect((await call('POST', `/v2/models/${id}/promote`, { version: 2 })).body).toMatchObject({ id: `${id}@2`, live: true });
  expect(await answers(id)).toEqual(two);
  expect((await call('GET', `/v2/models/${id}`)).body.id).toBe(id);
  expect((await call('POST', `/v2/models/${id}/promote`, { version: 1 })).body).toMatchObject({ version: 1, live: true });
  expect(await answers(id)).toEqual(one);

  // The hub: 'main' is the live version's files, 'v2' version 2's.
  const hub = async (revision: string) =>
    (await httpCall(servers[0].url, 'GET', `/hub/acme/${id}/resolve/${revision}/config.json`, key)).status;
  expect([await hub('main'), await hub('v1'), await hub('v2'), await hub('v9'), await hub('latest')]).toEqual([200, 200, 200, 404, 404]);

  // Bad input: each a 4xx naming the problem.
  const refused = async (method: string, path: string, body: unknown, status: number, message: string, bearer = key) => {
    const answer = await call(method, path, body, bearer);
    expect({ status: answer.status, message: answer.body.error?.message }).toEqual({ status, message });
  };
  await refused('POST', '/v2/predict', { model: `${id}@7`, inputs: texts }, 404, `The model '${id}' has no version 7 (its versions: 1, 2)`);
  await refused(
    'POST',
    '/v2/predict',
    { model: `${id}@x`, inputs: texts },
    400,
    `'${id}@x' names no version: use <model_id>, or <model_id>@<n> with n a version number from 1`,
  );
  await refused('POST', `/v2/models/${id}/promote`, { version: 7 }, 404, `The model '${id}' has no version 7 (its versions: 1, 2)`);
  await refused('POST', `/v2/models/${id}/promote`, { version: 0 }, 400, 'version must be at least 1');
  await refused(
    'POST',
    `/v2/models/${id}/versions`,
    train(0, 'negative'),
    400,
    `A new version of '${id}' must have its label_text ('positive'); got 'negative'`,
  );
  await refused(
    'POST',
    `/v2/models/${id}/versions`,
    {
      model: 'svc-small',
      task_type: 'multi-class-classification',
      finetune: false,
      examples: imdbExamples(0, 10).map((e) => ({ text: e.text, label: e.label ? 'good' : 'bad' })),
    },
    400,
    `A new version of '${id}' must have its task type (binary-classification); got multi-class-classification`,
  );
  await refused(
    'GET',
    `/v2/models/${id}/versions`,
    undefined,
    404,
    `The model '${id}' does not exist or is not visible to this API key`,
    otherKey,
  );
  await refused(
    'POST',
    `/v2/models/${id}/promote`,
    { version: 2 },
    404,
    `The model '${id}' does not exist or is not visible to this API key`,
    otherKey,
  );
  await refused(
    'DELETE',
    `/v2/models/${id}/versions/1`,
    undefined,
    409,
    `Version 1 of '${id}' is live; promote another version before deleting it`,
  );

  // Deleting: version 2 goes with its hub copy; version 1 holds the classifier.
  expect((await call('DELETE', `/v2/models/${id}/versions/2`)).body).toEqual({ id: `${id}@2`, object: 'model.version', deleted: true });
  expect(await hub('v2')).toBe(404);
  expect(readdirSync(join(hubFolder, 'acme'))).toEqual([id]);
  await refused('DELETE', `/v2/models/${id}/versions/2`, undefined, 404, `The model '${id}' has no version 2 (its versions: 1)`);
  // Version 3 through /v2/train with model_id: its model object names it and the live version.
  const third = await call('POST', '/v2/train', { ...train(20), model_id: id });
  expect(third.body).toMatchObject({ id: `${id}@3`, object: 'model', status: 'training', version: 3, live_version: 1 });
  const { metrics } = (await settled(`${id}@3`)) as { metrics: { cv_folds: number; cv_accuracy: number } };
  // Trained without a validation set: its report is its examples' cross-validation, read from the manifest through
  // the artifact store (on the other replica with PostgreSQL).
  expect((await call('GET', `/v2/models/${id}/evaluation?version=3`)).body).toMatchObject({
    model: `${id}@3`,
    source: 'cross-validation',
    folds: metrics.cv_folds,
    examples: 20,
    accuracy: metrics.cv_accuracy,
  });
  await call('POST', `/v2/models/${id}/promote`, { version: 3 });
  expect((await call('GET', `/v2/models/${id}`)).body).toMatchObject({ id, version: 3, live_version: 3 });
  expect((await call('GET', '/v2/models')).body.data).toEqual([expect.objectContaining({ id, version: 3, live_version: 3 })]);
  await refused(
    'POST',
    '/v2/train',
    { ...train(0), model_id: 'svc-small-000000000000' },
    404,
    "The model 'svc-small-000000000000' does not exist or is not visible to this API key",
  );
  await refused(
    'POST',
    '/v2/train',
    { ...train(0), model_id: id },
    404,
    `The model '${id}' does not exist or is not visible to this API key`,
    otherKey,
  );
  await refused(
    'POST',
    '/v2/train',
    { ...train(0, 'negative'), model_id: id },
    400,
    `A new version of '${id}' must have its label_text ('positive'); got 'negative'`,
  );
  await refused(
    'DELETE',
    `/v2/models/${id}/versions/1`,
    undefined,
    409,
    `Version 1 holds the model '${id}' itself; delete the model (DELETE /v2/models/${id}) to remove all its versions`,
  );
  // The classifier goes with every version and every hub copy.
  expect((await call('DELETE', `/v2/models/${id}`)).status).toBe(200);
  expect(readdirSync(join(hubFolder, 'acme'))).toEqual([]);
  await refused('GET', `/v2/models/${id}/versions`, undefined, 404, `The model '${id}' does not exist or is not visible to this API key`);
}

describe('versions through real servers', () => {
  it('on SQLite: train, add a version, predict each, promote, roll back, delete', { timeout: 180_000 * kLevelSlowdown }, async () => {
    const server = await startServer(options('sqlite'));
    try {
      await lifecycle([server], join(dir, 'sqlite', 'hub'));
    } finally {
      await server.close();
    }
  });

  it(
    'on two PostgreSQL replicas sharing a model folder, each call on the other replica',
    { timeout: 240_000 * kLevelSlowdown },
    async () => {
      const database = await pgServer.cluster.createDatabase();
      const artifactsDir = join(dir, 'shared-models');
      const one = await startServer(options('pg-one', { database, artifactsDir }));
      const two = await startServer(options('pg-two', { database, artifactsDir }));
      try {
        await lifecycle([one, two], artifactsDir);
      } finally {
        await Promise.all([one.close(), two.close()]);
      }
    },
  );
});
