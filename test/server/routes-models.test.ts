// /v2 for a caller's models: train, read, predict, list and delete, and the 409s while a model trains or after
// it failed. Another organization sees none of it. (The app: routes-app.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import type { SvcService } from '../../src/service/service.js';
import { err, examples, openRoutesApp, type RoutesApp } from './routes-app.js';

let routes: RoutesApp;
let service: SvcService;
let runtime: WordCountRuntime;
let otherKey: string;
let call: RoutesApp['call'];

beforeAll(async () => {
  routes = await openRoutesApp();
  ({ service, runtime, otherKey, call } = routes);
});

afterAll(() => routes.close());

describe('/v2', () => {
  it('trains, shows the model, predicts, lists and deletes', async () => {
    const started = await call('POST', '/v2/train', { model: 'svc-small', task_type: 'binary-classification', examples });
    expect(started.status).toBe(200);
    const model = started.body as { id: string; created_at: number };
    expect(model).toEqual({
      id: model.id,
      object: 'model',
      created_at: model.created_at,
      status: 'training',
      owned_by: 'acme',
      task_type: 'binary-classification',
      label_text: 'positive',
      version: 1,
      live_version: 1,
      context_window: 256,
    });
    expect(Math.abs(model.created_at - Date.now() / 1000)).toBeLessThan(5);
    await service.idle();
    expect(await call('GET', `/v2/models/${model.id}`)).toEqual({ status: 200, body: { ...model, status: 'trained' } });
    expect(await call('GET', `/v2/models/${model.id}/progress`)).toEqual({
      status: 200,
      body: { object: 'training.progress', model: model.id, status: 'trained', stage: 'embed', done: 20, total: 20, loss: null },
    });

    const predicted = await call('POST', '/v2/predict', { model: model.id, inputs: [examples[0].text, examples[10].text] });
    const expected = await runtime.predict('acme', model.id, [examples[0].text, examples[10].text]);
    expect(predicted).toEqual({ status: 200, body: { model: model.id, label_text: 'positive', predictions: expected } });
    expect(expected.map((p) => p.label)).toEqual([true, false]);

    expect(await call('GET', '/v2/models')).toEqual({ status: 200, body: { object: 'list', data: [{ ...model, status: 'trained' }] } });
    await service.setProxyAccess('acme', true);
    expect((await call('GET', '/v2/models')).body).toEqual({
      object: 'list',
      data: [
        { ...model, status: 'trained' },
        { id: 'provider-a:gpt-4o-mini', object: 'model', created_at: 0, owned_by: 'provider-a' },
        { id: 'provider-c:claude-x', object: 'model', created_at: 0, owned_by: 'provider-c' },
      ],
    });
    await service.setProxyAccess('acme', false);

    // Another organization sees nothing of it.
    const hidden = err('not_found_error', `The model '${model.id}' does not exist or is not visible to this API key`, 'model', 'not_found');
    expect(await call('GET', `/v2/models/${model.id}`, undefined, otherKey)).toEqual({ status: 404, body: hidden });
    expect(await call('POST', '/v2/predict', { model: model.id, inputs: ['x'] }, otherKey)).toEqual({ status: 404, body: hidden });
    expect(await call('DELETE', `/v2/models/${model.id}`, undefined, otherKey)).toEqual({ status: 404, body: hidden });
    expect(await call('GET', '/v2/models', undefined, otherKey)).toEqual({ status: 200, body: { object: 'list', data: [] } });

    expect(await call('DELETE', `/v2/models/${model.id}`)).toEqual({ status: 200, body: { id: model.id, object: 'model', deleted: true } });
    expect(await call('GET', `/v2/models/${model.id}`)).toEqual({
      status: 404,
      body: err('not_found_error', `The model '${model.id}' does not exist or is not visible to this API key`, 'model', 'not_found'),
    });
  });

  it('answers 409 while a model trains', async () => {
    let open!: () => void;
    runtime.gate = new Promise((resolve) => (open = resolve));
    const { body } = await call('POST', '/v2/train', { model: 'svc-small', task_type: 'binary-classification', examples });
    const id = (body as { id: string }).id;
    expect(await call('POST', '/v2/predict', { model: id, inputs: ['x'] })).toEqual({
      status: 409,
      body: err('conflict', `The model '${id}' is still training; retry when its status is 'trained'`, 'model', 'conflict'),
    });
    // Listed meanwhile, with its status: a model just sent to training has not vanished.
    expect(await call('GET', '/v2/models')).toEqual({ status: 200, body: { object: 'list', data: [body] } });
    runtime.gate = null;
    open();
    await service.idle();
    await call('DELETE', `/v2/models/${id}`);
  });

  it('shows a failed model with its error, and answers 409 to predictions with it', async () => {
    const failing = examples.map((e, i) => (i === 0 ? { ...e, text: 'please fail' } : e));
    const { body } = await call('POST', '/v2/train', { model: 'svc-small', task_type: 'binary-classification', examples: failing });
    await service.idle();
    const id = (body as { id: string }).id;
    expect(await call('GET', `/v2/models/${id}`)).toEqual({
      status: 200,
      body: { ...(body as object), status: 'failed', error: 'the example asked training to fail' },
    });
    expect((await call('GET', '/v2/models')).body).toEqual({
      object: 'list',
      data: [{ ...(body as object), status: 'failed', error: 'the example asked training to fail' }],
    });
    expect(await call('POST', '/v2/predict', { model: id, inputs: ['x'] })).toEqual({
      status: 409,
      body: err('conflict', `The model '${id}' failed to train: the example asked training to fail`, 'model', 'conflict'),
    });
    await call('DELETE', `/v2/models/${id}`);
  });
});
