import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { hubRoutes } from '../../src/server/hub-routes.js';
import { svcRoutes } from '../../src/server/routes.js';
import { SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive',
}));

let dir: string;
let app: FastifyInstance;
let service: SvcService;
let runtime: WordCountRuntime;
let key: string;
let otherKey: string;
let revokedKey: string;

const err = (type: string, message: string, param: string | null, code: string) => ({ error: { message, type, param, code } });

async function call(method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, bearer: string | null = key) {
  const response = await app.inject({
    method,
    url,
    ...(body === undefined ? {} : { payload: body as object }),
    headers: bearer === null ? {} : { authorization: `Bearer ${bearer}` },
  });
  return { status: response.statusCode, body: response.json() as unknown };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-routes-'));
  runtime = new WordCountRuntime(join(dir, 'hub'));
  service = new SvcService({ store: SqliteStore.open(dir), runtime, proxyModels: ['provider-a:gpt-4o-mini', 'provider-c:claude-x'] });
  await service.start();
  await service.createOrganization('acme');
  await service.createOrganization('globex');
  key = (await service.createApiKey('acme')).key;
  otherKey = (await service.createApiKey('globex')).key;
  const revoked = await service.createApiKey('acme');
  await service.revokeApiKey(revoked.id);
  revokedKey = revoked.key;

  app = Fastify();
  // The host's own route, validated by Fastify's default (ajv) compiler, with its own error handler.
  app.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) => {
    void reply.code(error.statusCode ?? 500).send({ host: true, message: error.message });
  });
  app.post('/host', { schema: { body: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } } } }, async (request) => ({
    got: request.body,
  }));
  await app.register(svcRoutes, {
    prefix: '/v2',
    service,
    bodyLimit: 64 * 1024,
    proxyOptions: { upstreamTimeoutMs: 1_000 },
    // Stands in for the provider proxy's plugin: mounted inside, with the service and its own options.
    proxy: async (scope, opts) => {
      scope.get('/:project_id/whoami', async (request) => {
        const principal = await opts.service.authenticate(request.headers['x-api-key'] as string | undefined);
        const { project_id: projectId } = request.params as { project_id: string };
        return { principal, project: await opts.service.authorizeProxy(principal, projectId), options: Object.keys(opts) };
      });
    },
  });
  await app.register(hubRoutes, { prefix: '/hub', service });
  await app.ready();
});

afterAll(async () => {
  await app.close();
  await service.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the host app', () => {
  it('keeps its own validator and error handler next to the plugin', async () => {
    expect((await app.inject({ method: 'POST', url: '/host', payload: { n: 3 } })).json()).toEqual({ got: { n: 3 } });
    const bad = await app.inject({ method: 'POST', url: '/host', payload: { n: 'x' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ host: true, message: 'body/n must be integer' });
    const missing = await app.inject({ method: 'GET', url: '/nowhere' });
    expect(missing.json()).toEqual({ message: 'Route GET:/nowhere not found', error: 'Not Found', statusCode: 404 });
  });
});

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
    expect(await call('POST', '/v2/predict', { model: id, inputs: ['x'] })).toEqual({
      status: 409,
      body: err('conflict', `The model '${id}' failed to train: the example asked training to fail`, 'model', 'conflict'),
    });
    await call('DELETE', `/v2/models/${id}`);
  });

  it('rejects calls without a valid key with 401', async () => {
    expect(await call('GET', '/v2/models', undefined, null)).toEqual({
      status: 401,
      body: err('authentication_error', "Missing API key: send it as 'Authorization: Bearer <key>'", null, 'authentication'),
    });
    // `Bearer ` with nothing after it is a missing key as well.
    expect(await call('GET', '/v2/models', undefined, '')).toEqual({
      status: 401,
      body: err('authentication_error', "Missing API key: send it as 'Authorization: Bearer <key>'", null, 'authentication'),
    });
    expect(await call('GET', '/v2/models', undefined, 'svc_unknown')).toEqual({
      status: 401,
      body: err('authentication_error', 'Invalid API key', null, 'authentication'),
    });
    expect(await call('POST', '/v2/predict', { model: 'm', inputs: ['x'] }, revokedKey)).toEqual({
      status: 401,
      body: err('authentication_error', 'This API key has been revoked', null, 'authentication'),
    });
  });

  it('rejects bad requests with 400 naming the field', async () => {
    const predictCases: [unknown, string, string | null][] = [
      [{ model: 'm', inputs: [] }, 'inputs must hold at least one text', 'inputs'],
      [{ model: 'm', inputs: Array(2049).fill('x') }, 'inputs holds more than 2048 texts, the limit per request', 'inputs'],
      [{ model: 'm', inputs: ['a', 7] }, 'inputs[1] must be a string', 'inputs[1]'],
      [{ model: 'm' }, 'inputs is required', 'inputs'],
      [{ model: 'm', inputs: ['a'], temperature: 1 }, "the request has unknown field 'temperature'", 'temperature'],
      [[1, 2], 'the request must be an object', null],
    ];
    for (const [body, message, param] of predictCases) {
      expect(await call('POST', '/v2/predict', body)).toEqual({
        status: 400,
        body: err('invalid_request_error', message, param, 'invalid_request'),
      });
    }
    const trainCases: [unknown, string, string | null][] = [
      [
        { model: 'svc-small', task_type: 'binary-classification', examples: [{ text: 'a', label: 'yes', label_text: 'p' }] },
        'examples[0].label must be a boolean',
        'examples[0].label',
      ],
      [
        { model: 'svc-small', task_type: 'binary-classification', examples: [{ text: 'a', label: true, label_text: 'p', weight: 2 }] },
        "examples[0] has unknown field 'weight'",
        'examples[0].weight',
      ],
      [
        { model: 'svc-small', task_type: 'binary-classification', examples: examples.slice(0, 5) },
        'at least 20 examples are required (got 5)',
        'examples',
      ],
      [{ model: 'svc-large', task_type: 'binary-classification', examples }, "model must be one of svc-small (got 'svc-large')", 'model'],
    ];
    // Valid JSON in a body labelled as text or a form is refused for its content type, not its shape.
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded']) {
      const response = await app.inject({
        method: 'POST',
        url: '/v2/predict',
        payload: JSON.stringify({ model: 'm', inputs: ['x'] }),
        headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
      });
      expect({ status: response.statusCode, body: response.json() }).toEqual({
        status: 415,
        body: err('invalid_request_error', 'Send the request body as application/json', null, 'invalid_request'),
      });
    }
    for (const [body, message, param] of trainCases) {
      expect(await call('POST', '/v2/train', body)).toEqual({
        status: 400,
        body: err('invalid_request_error', message, param, 'invalid_request'),
      });
    }
    const broken = await app.inject({
      method: 'POST',
      url: '/v2/predict',
      payload: '{"model":',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    expect([broken.statusCode, broken.json()]).toEqual([
      400,
      err('invalid_request_error', 'The request body is not valid JSON', null, 'invalid_request'),
    ]);
  });

  it('answers 404 for unknown models and routes, and 413 over the body limit', async () => {
    expect(await call('POST', '/v2/predict', { model: 'svc-small-0123456789ab', inputs: ['x'] })).toEqual({
      status: 404,
      body: err(
        'not_found_error',
        "The model 'svc-small-0123456789ab' does not exist or is not visible to this API key",
        'model',
        'not_found',
      ),
    });
    expect(await call('GET', '/v2/nothing')).toEqual({
      status: 404,
      body: err('not_found_error', 'No route GET /v2/nothing', null, 'not_found'),
    });
    const big = { model: 'm', inputs: ['x'.repeat(70 * 1024)] };
    expect(await call('POST', '/v2/predict', big)).toEqual({
      status: 413,
      body: err('request_too_large', 'The request body is larger than the limit of 65536 bytes', null, 'payload_too_large'),
    });
  });

  it('publishes an OpenAPI document generated from the schemas', async () => {
    const { status, body } = await call('GET', '/v2/openapi.json', undefined, null);
    expect(status).toBe(200);
    const doc = body as {
      openapi: string;
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>;
    };
    expect(doc.openapi).toBe('3.0.3');
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/v2/classify',
      '/v2/models',
      '/v2/models/{model_id}',
      '/v2/models/{model_id}/evaluation',
      '/v2/models/{model_id}/progress',
      '/v2/models/{model_id}/promote',
      '/v2/models/{model_id}/versions',
      '/v2/models/{model_id}/versions/{version}',
      '/v2/openapi.json',
      '/v2/predict',
      '/v2/train',
      '/v2/{project_id}/whoami', // the proxy's routes are documented too
    ]);
    expect(Object.keys(doc.paths['/v2/models/{model_id}']).sort()).toEqual(['delete', 'get']);
    expect(doc.paths['/v2/predict'].post.requestBody?.content['application/json'].schema).toEqual({
      type: 'object',
      properties: {
        model: { type: 'string', description: 'A trained model id, e.g. svc-small-1a2b3c4d5e6f' },
        inputs: {
          type: 'array',
          items: { type: 'string', maxLength: 100000 },
          minItems: 1,
          maxItems: 2048,
          description: '1 to 2048 texts of at most 100000 characters each',
        },
        threshold: {
          anyOf: [
            { type: 'number', minimum: 0, maximum: 1 },
            { type: 'object', additionalProperties: { type: 'number', minimum: 0, maximum: 1 } },
          ],
          description:
            'Multi-label models: the probability a label needs to be predicted, for every label or per label (the others keep 0.5); default 0.5',
        },
        truncate: {
          type: 'string',
          enum: ['end', 'start', 'none', 'chunks'],
          description:
            "Texts longer than the encoder reads (256 tokens): 'end' (default) drops their end, 'start' their start, 'none' refuses them (400), 'chunks' reads them whole in overlapping windows whose embeddings are averaged",
        },
        explain: {
          type: 'integer',
          minimum: 1,
          maximum: 20,
          description:
            "Per text, the k training examples nearest to it in the model's embedding space, with their labels and cosine similarity; 1 to 20",
        },
      },
      required: ['model', 'inputs'],
      additionalProperties: false,
    });
    // Versions: /v2/train takes a classifier's model_id, the model object names its version and the live one, and an
    // evaluation report says where it came from.
    const text = JSON.stringify(doc);
    const schemas = (doc as unknown as { components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> } })
      .components.schemas;
    expect(Object.keys(schemas.Model.properties)).toEqual(expect.arrayContaining(['version', 'live_version']));
    expect(schemas.Model.properties.live_version).toMatchObject({ type: 'integer' });
    expect(schemas.ModelEvaluation.properties.source).toMatchObject({ enum: ['validation', 'cross-validation'] });
    expect(schemas.ModelEvaluation.properties.folds).toMatchObject({ type: 'integer' });
    for (const request of ['BinaryTrainRequest', 'MultiClassTrainRequest', 'MultiLabelTrainRequest']) {
      expect(schemas[request].properties.model_id).toMatchObject({ type: 'string', minLength: 1 });
    }
    expect(text).toContain('as POST /v2/models/{id}/versions does');
  });
});

describe('the proxy option', () => {
  it('mounts the proxy routes under the same prefix with the service, its own auth and the plugin error shape', async () => {
    const project = await service.createProject('acme', 'bot');
    await service.setProxyAccess('acme', true);
    const ok = await app.inject({ method: 'GET', url: `/v2/${project.id}/whoami`, headers: { 'x-api-key': key } });
    const keyId = (await service.authenticate(key)).keyId;
    expect(ok.json()).toEqual({ principal: { orgId: 'acme', keyId }, project: { ...project }, options: ['upstreamTimeoutMs', 'service'] });
    const denied = await app.inject({ method: 'GET', url: `/v2/${project.id}/whoami`, headers: { 'x-api-key': otherKey } });
    expect([denied.statusCode, denied.json()]).toEqual([
      404,
      err('not_found_error', `The project '${project.id}' does not exist`, 'project_id', 'not_found'),
    ]);
    await service.setProxyAccess('acme', false);
  });
});

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
