// A version while it trains, through the service with the word-count runtime, whose gate holds training where the
// test wants it: never live by itself, refused by predict and promote with the reason, and its own progress.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, expect, it } from 'vitest';

import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { SvcError } from '../../src/errors.js';
import { type Principal, SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { imdbExamples } from '../_support/examples.js';

const request = (from: number) => ({ model: 'svc-small', task_type: 'binary-classification', examples: imdbExamples(from, 10) });

let dir: string;
let runtime: WordCountRuntime;
let service: SvcService;
let acme: Principal;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-versions-service-'));
  runtime = new WordCountRuntime(join(dir, 'hub'));
  service = new SvcService({ store: SqliteStore.open(dir), runtime, retention: false });
  await service.start();
  await service.createOrganization('acme');
  acme = await service.authenticate((await service.createApiKey('acme')).key);
});
afterEach(async () => {
  await service.close();
  rmSync(dir, { recursive: true, force: true });
});

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (error: unknown) => (error instanceof SvcError ? { status: error.status, message: error.message, param: error.param } : error),
  );

it('keeps a version in training out of predict and promote, never live by itself, and reports its own progress', async () => {
  const model = await service.train(acme, request(0));
  await service.idle();
  let open!: () => void;
  runtime.gate = new Promise((resolve) => (open = resolve));
  const added = await service.versions.add(acme, model.id, request(10));
  expect(added).toMatchObject({ id: `${model.id}@2`, version: 2, live: false, status: 'training', finished_at: null });

  expect(await refusal(service.predict(acme, { model: `${model.id}@2`, inputs: ['fine'] }))).toEqual({
    status: 409,
    message: `The model '${model.id}@2' is still training; retry when its status is 'trained'`,
    param: 'model',
  });
  expect(await refusal(service.versions.promote(acme, model.id, { version: 2 }))).toEqual({
    status: 409,
    message: `Version 2 of '${model.id}' is training; only a trained version can be promoted`,
    param: 'version',
  });
  expect(await service.getProgress(acme, `${model.id}@2`)).toMatchObject({ model: `${model.id}@2`, status: 'training' });
  // The live version answers meanwhile.
  expect((await service.predict(acme, { model: model.id, inputs: ['fine'] })).model).toBe(model.id);

  open();
  await service.idle();
  const versions = await service.versions.list(acme, model.id);
  expect(versions.data.map((v) => [v.version, v.status, v.live])).toEqual([
    [1, 'trained', true],
    [2, 'trained', false],
  ]);
  expect(versions.live_version).toBe(1);
  // The classifier is listed once, as its live version.
  expect((await service.listModels(acme)).data.map((m) => m.id)).toEqual([model.id]);
  expect(runtime.trained).toEqual([model.id, `${model.id}.v2`]);
});

it('rolls back by promoting the version before, and refuses a version that is not a number', async () => {
  const model = await service.train(acme, request(0));
  await service.idle();
  await service.versions.add(acme, model.id, request(10));
  await service.idle();
  await service.versions.promote(acme, model.id, { version: 2 });
  expect((await service.getModel(acme, model.id)).status).toBe('trained');
  expect((await service.versions.promote(acme, model.id, { version: 1 })).live).toBe(true);
  expect((await service.versions.list(acme, model.id)).live_version).toBe(1);
  expect(await refusal(service.versions.promote(acme, model.id, { version: '2' }))).toEqual({
    status: 400,
    message: 'version must be a whole number',
    param: 'version',
  });
});

it("takes a binary validation set with the examples' label_text only, and reports no version before it is trained", async () => {
  const validation = imdbExamples(40, 2);
  expect(
    await refusal(service.train(acme, { ...request(0), validation: [...validation, { text: 'x', label: true, label_text: 'negative' }] })),
  ).toEqual({
    status: 400,
    message: "validation[4].label_text must be the examples' 'positive'",
    param: 'validation[4]',
  });
  runtime.gate = new Promise(() => {});
  const model = await service.train(acme, { ...request(0), validation });
  expect(await service.store.getJob(model.id).then((job) => job?.options.validation)).toEqual(validation);
  expect(await refusal(service.evaluations.report(acme, model.id))).toEqual({
    status: 409,
    message: `Version 1 of '${model.id}' is training; only a trained version has a report`,
    param: 'version',
  });
});

it('trains the next version through train() with model_id, under the rules and errors of the versions route', async () => {
  const model = await service.train(acme, request(0));
  expect(model).toMatchObject({ version: 1, live_version: 1, status: 'training' });
  await service.idle();
  const added = await service.train(acme, { ...request(10), model_id: model.id });
  expect(added).toMatchObject({ id: `${model.id}@2`, object: 'model', status: 'training', version: 2, live_version: 1 });
  await service.idle();
  expect(runtime.trained).toEqual([model.id, `${model.id}.v2`]);

  // The model object names its version and the live one, whichever way it is asked for.
  expect(await service.getModel(acme, model.id)).toMatchObject({ id: model.id, version: 1, live_version: 1 });
  await service.versions.promote(acme, model.id, { version: 2 });
  expect(await service.getModel(acme, model.id)).toMatchObject({ id: model.id, version: 2, live_version: 2 });
  expect(await service.getModel(acme, `${model.id}@1`)).toMatchObject({ id: `${model.id}@1`, version: 1, live_version: 2 });
  expect((await service.listModels(acme)).data).toEqual([expect.objectContaining({ id: model.id, version: 2, live_version: 2 })]);

  const unknown = 'svc-small-000000000000';
  expect(await refusal(service.train(acme, { ...request(0), model_id: unknown }))).toEqual({
    status: 404,
    message: `The model '${unknown}' does not exist or is not visible to this API key`,
    param: 'model_id',
  });
  // Another organization's classifier reads as an unknown one.
  await service.createOrganization('other');
  const other = await service.authenticate((await service.createApiKey('other')).key);
  expect(await refusal(service.train(other, { ...request(0), model_id: model.id }))).toEqual({
    status: 404,
    message: `The model '${model.id}' does not exist or is not visible to this API key`,
    param: 'model_id',
  });
  const negative = { ...request(0), examples: request(0).examples.map((e) => ({ ...e, label_text: 'negative' })) };
  expect(await refusal(service.train(acme, { ...negative, model_id: model.id }))).toEqual({
    status: 400,
    message: `A new version of '${model.id}' must have its label_text ('positive'); got 'negative'`,
    param: 'examples',
  });
  expect(await refusal(service.train(acme, { ...request(0), model_id: `${model.id}@2` }))).toEqual({
    status: 400,
    message: `model_id names a classifier, not a version: use '${model.id}'`,
    param: 'model_id',
  });
  expect(await refusal(service.versions.add(acme, model.id, { ...request(0), model_id: unknown }))).toEqual({
    status: 400,
    message: `model_id '${unknown}' is not the model '${model.id}' this request adds a version to`,
    param: 'model_id',
  });
  // Nothing was queued by the refusals.
  expect((await service.versions.list(acme, model.id)).data.map((v) => v.version)).toEqual([1, 2]);
  // This runtime keeps no manifest, so no cross-validation report either: 404 saying why.
  expect(await refusal(service.evaluations.report(acme, model.id))).toEqual({
    status: 404,
    message:
      `Version 2 of '${model.id}' was trained without a validation set, before training kept a cross-validation report: ` +
      "train a new version (with 'validation' for a report on held-out texts)",
    param: 'version',
  });
});
