// /hub: an organization's own trained model files in the Hugging Face resolve layout, and nothing of anyone else's.
// (The app: routes-app.ts.)
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SvcService } from '../../src/service/service.js';
import { err, examples, openRoutesApp, type RoutesApp } from './routes-app.js';

let routes: RoutesApp;
let app: FastifyInstance;
let service: SvcService;
let key: string;
let otherKey: string;
let call: RoutesApp['call'];

beforeAll(async () => {
  routes = await openRoutesApp();
  ({ app, service, key, otherKey, call } = routes);
});

afterAll(() => routes.close());

describe('/hub', () => {
  it('serves an organization its own trained model files, in the resolve layout, and nothing else', async () => {
    const { body } = await call('POST', '/v2/train', { model: 'svc-small', task_type: 'binary-classification', examples });
    const id = (body as { id: string }).id;
    await service.idle();
    const get = (url: string, bearer: string | null = key) =>
      app.inject({ method: 'GET', url, headers: bearer === null ? {} : { authorization: `Bearer ${bearer}` } });

    const config = await get(`/hub/acme/${id}/resolve/main/config.json`);
    expect(config.statusCode).toBe(200);
    expect(config.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(config.json()).toEqual({ id2label: { 0: 'false', 1: 'positive' } });
    const onnx = await get(`/hub/acme/${id}/resolve/main/onnx/model.onnx`);
    expect([...onnx.rawPayload]).toEqual([1, 2, 3, 4]);
    expect(onnx.headers['content-type']).toBe('application/octet-stream');
    expect((await get(`/hub/api/models/acme/${id}`)).json()).toEqual({
      id: `acme/${id}`,
      modelId: `acme/${id}`,
      siblings: [{ rfilename: 'config.json' }, { rfilename: 'head.json' }, { rfilename: 'onnx/model.onnx' }],
    });

    const hidden = err('not_found_error', `The model 'acme/${id}' does not exist or is not visible to this API key`, 'model', 'not_found');
    const other = await get(`/hub/acme/${id}/resolve/main/config.json`, otherKey);
    expect([other.statusCode, other.json()]).toEqual([404, hidden]);
    const otherInOwnName = await get(`/hub/globex/${id}/resolve/main/config.json`, otherKey);
    expect(otherInOwnName.json()).toEqual(
      err('not_found_error', `The model 'globex/${id}' does not exist or is not visible to this API key`, 'model', 'not_found'),
    );
    const anonymous = await get(`/hub/acme/${id}/resolve/main/config.json`, null);
    expect([anonymous.statusCode, anonymous.headers['www-authenticate']]).toEqual([401, 'Bearer']);
    const escape = await get(`/hub/acme/${id}/resolve/main/..%2F..%2F..%2Fsvc.sqlite`);
    expect(escape.statusCode).toBe(404);
    const missing = await get(`/hub/acme/${id}/resolve/main/nope.json`);
    expect(missing.json()).toEqual(err('not_found_error', `The file 'nope.json' does not exist in acme/${id}`, 'file', 'not_found'));
    expect((await get(`/hub/acme/${id}/resolve/v2/config.json`)).statusCode).toBe(404);
  });
});
