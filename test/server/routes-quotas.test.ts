// /v2 under an organization's storage quotas: 429 when its models, a model's versions or its stored bytes are full
// (nothing stored, no retry-after), 413 for a train request that alone needs more than the whole byte quota, and the
// operator's override raising each. (The app: routes-app.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { storedBytes } from '../../src/store/quotas.js';
import { err, examples, openRoutesApp, type RoutesApp } from './routes-app.js';

let routes: RoutesApp;
let call: RoutesApp['call'];
const body = { model: 'svc-small', task_type: 'binary-classification', examples };
const trainedId = (answer: { status: number; body: unknown }) => {
  expect(answer.status).toBe(200);
  return (answer.body as { id: string }).id;
};

beforeAll(async () => {
  routes = await openRoutesApp();
  ({ call } = routes);
});

afterAll(() => routes.close());

describe('/v2 storage quotas', () => {
  it('answers 429 naming the models quota once the organization keeps that many, until the operator raises it', async () => {
    const { service } = routes;
    await service.setOrgLimits('acme', { maxModels: 1 });
    trainedId(await call('POST', '/v2/train', body));
    const refused = await routes.app.inject({
      method: 'POST',
      url: '/v2/train',
      payload: body,
      headers: { authorization: `Bearer ${routes.key}` },
    });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBeUndefined();
    expect(refused.json()).toEqual(
      err(
        'rate_limit_error',
        "The organization 'acme' has 1 models, the most it may keep (1); delete a model it no longer needs " +
          '(DELETE /v2/models/{id}) to make room, or ask the operator to raise the quota',
        null,
        'rate_limited',
      ),
    );
    expect((await service.store.listModels('acme')).length).toBe(1);
    // Another organization's quota is its own.
    trainedId(await call('POST', '/v2/train', body, routes.otherKey));
    await service.setOrgLimits('acme', { maxModels: 2 });
    trainedId(await call('POST', '/v2/train', body));
    await service.setOrgLimits('acme', { maxModels: null });
  });

  it('answers 429 naming the versions quota once a model keeps that many, by either route, until the operator raises it', async () => {
    const { service } = routes;
    await service.setOrgLimits('acme', { maxVersionsPerModel: 2 });
    const id = trainedId(await call('POST', '/v2/train', body));
    expect((await call('POST', `/v2/models/${id}/versions`, body)).status).toBe(200);
    const full = err(
      'rate_limit_error',
      `The model '${id}' has 2 versions, the most one model may keep (2); delete a version it no longer needs ` +
        `(DELETE /v2/models/${id}/versions/{n}) to make room, or ask the operator to raise the quota`,
      null,
      'rate_limited',
    );
    expect(await call('POST', `/v2/models/${id}/versions`, body)).toEqual({ status: 429, body: full });
    expect(await call('POST', '/v2/train', { ...body, model_id: id })).toEqual({ status: 429, body: full });
    expect((await service.store.versions.list(id)).length).toBe(2);
    await service.setOrgLimits('acme', { maxVersionsPerModel: 3 });
    expect((await call('POST', `/v2/models/${id}/versions`, body)).status).toBe(200);
  });

  it('answers 429 when the stored bytes are full, 413 for a request larger than the whole quota, and takes it once raised', async () => {
    const { service } = routes;
    await service.createOrganization('initech');
    const key = (await service.createApiKey('initech')).key;
    await service.setOrgLimits('initech', { maxStorageMb: 3 });
    const id = trainedId(await call('POST', '/v2/train', body, key));
    // The charge of that request (the next one is alike): what the store keeps, by the documented rule.
    const charge = storedBytes(await service.store.getJobExamples(id), JSON.stringify((await service.store.getJob(id))!.options));
    const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
    expect(await call('POST', '/v2/train', body, key)).toEqual({
      status: 429,
      body: err(
        'rate_limit_error',
        `The organization 'initech' stores ${mib(charge)} of the 3.00 MiB it may store, and this request needs ${mib(charge)} ` +
          'more; delete versions or models it no longer needs to make room, or ask the operator to raise the quota',
        null,
        'rate_limited',
      ),
    });
    await service.setOrgLimits('initech', { maxStorageMb: 2 });
    expect(await call('POST', '/v2/train', body, key)).toEqual({
      status: 413,
      body: err(
        'request_too_large',
        `This training request needs ${mib(charge)} of storage, more than the 2.00 MiB the organization 'initech' may store ` +
          'in all; send fewer or shorter examples or unlabelled texts, or ask the operator to raise the quota',
        'examples',
        'payload_too_large',
      ),
    });
    expect((await service.store.listModels('initech')).map((m) => m.id)).toEqual([id]);
    await service.setOrgLimits('initech', { maxStorageMb: 5 });
    trainedId(await call('POST', '/v2/train', body, key));
  });
});
