// The /v2 plugin inside a host app: the host keeps its own validator and error handler, the proxy option mounts
// under the same prefix with the service, and the OpenAPI document covers the routes and the proxy's. (The app:
// routes-app.ts.)
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SvcService } from '../../src/service/service.js';
import { err, openRoutesApp, type RoutesApp } from './routes-app.js';

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
          // An empty text is refused (and one of only whitespace, which JSON Schema cannot say).
          items: { type: 'string', minLength: 1, maxLength: 100000 },
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
            "Texts longer than the encoder reads (256 tokens): 'end' (default) keeps their first tokens, 'start' their last tokens, 'none' refuses them (400) before any inference, 'chunks' reads them whole in overlapping windows whose embeddings are averaged",
        },
        explain: {
          type: 'integer',
          minimum: 1,
          maximum: 20,
          description:
            "Per text, the k training examples nearest to it in the model's embedding space, with their labels and cosine similarity; 1 to 20; " +
            "at most 96 inputs a call, and inputs x the model's examples at most 250000",
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
