// What /v2 turns away, with the plugin's error shape: calls without a valid key (401), bad bodies and content types
// (400, 415, naming the field), unknown models and routes (404), bodies over the limit (413). (The app: routes-app.ts.)
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { err, examples, openRoutesApp, type RoutesApp } from './routes-app.js';

let routes: RoutesApp;
let app: FastifyInstance;
let key: string;
let revokedKey: string;
let call: RoutesApp['call'];

beforeAll(async () => {
  routes = await openRoutesApp();
  ({ app, key, revokedKey, call } = routes);
});

afterAll(() => routes.close());

describe('/v2', () => {
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

  it('tells a key id sent as the key from a wrong key, the same for an id that exists and one that does not', async () => {
    const [created] = await routes.service.store.listApiKeys('acme');
    const keyId = {
      status: 401,
      body: err(
        'authentication_error',
        'This looks like a key id (key_…), not the API key: send the key itself (svc_…), which was shown once, when it was ' +
          'created (svc keys create); if it is lost, create a new key and revoke the old one',
        null,
        'authentication',
      ),
    };
    expect(created.id).toMatch(/^key_[0-9a-f]{12}$/);
    for (const id of [created.id, 'key_000000000000', created.id.toUpperCase().replace('KEY_', 'key_')]) {
      expect(await call('GET', '/v2/models', undefined, id)).toEqual(keyId);
    }
    // Not id-shaped: a wrong key, said as before.
    expect(await call('GET', '/v2/models', undefined, 'key_0000')).toEqual({
      status: 401,
      body: err('authentication_error', 'Invalid API key', null, 'authentication'),
    });
  });

  it('rejects bad requests with 400 naming the field', async () => {
    const predictCases: [unknown, string, string | null][] = [
      [{ model: 'm', inputs: [] }, 'inputs must hold at least one text', 'inputs'],
      [{ model: 'm', inputs: Array(2049).fill('x') }, 'inputs holds more than 2048 texts, the limit per request', 'inputs'],
      [{ model: 'm', inputs: ['a', 7] }, 'inputs[1] must be a string', 'inputs[1]'],
      [{ model: 'm' }, 'inputs is required', 'inputs'],
      [{ model: 'm', input: ['a'] }, "inputs is required; the request has unknown field 'input' (did you mean 'inputs'?)", 'inputs'],
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
        'examples[0].label must be a boolean (got "yes"): write label: true or false, or for named classes send ' +
          'task_type: "multi-class-classification" with the class as label',
        'examples[0].label',
      ],
      [
        { model: 'svc-small', task_type: 'binary-classification', exmaples: examples },
        "examples is required; the request has unknown field 'exmaples' (did you mean 'examples'?)",
        'examples',
      ],
      [
        { model: 'svc-small', task_type: 'binary-classification', examples: [{ text: 'a', label: true, label_text: 'p', weight: 2 }] },
        "examples[0] has unknown field 'weight'",
        'examples[0].weight',
      ],
      [
        { model: 'svc-small', task_type: 'binary-classification', examples: examples.slice(0, 5) },
        'at least 20 examples are required (got 5); to label texts from fewer without training a model, classify needs only ' +
          '2 examples per label (POST /v2/classify, svc classify, or classify() in the library)',
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

  it('refuses empty and whitespace-only texts wherever a text enters, naming the index', async () => {
    const empty = 'must not be empty';
    const blank = 'must not be empty (it holds only whitespace)';
    const blankExamples = (at: number, text: string) => examples.map((example, i) => (i === at ? { ...example, text } : example));
    const cases: [string, unknown, string, string][] = [
      ['/v2/predict', { model: 'm', inputs: ['ok', ''] }, `inputs[1] ${empty}`, 'inputs[1]'],
      ['/v2/predict', { model: 'm', inputs: ['ok', 'fine', ' \t\n\u00a0'] }, `inputs[2] ${blank}`, 'inputs[2]'],
      [
        '/v2/classify',
        { model: 'svc-small', task_type: 'multi-class-classification', inputs: ['   '], labels: ['billing', 'login'] },
        `inputs[0] ${blank}`,
        'inputs[0]',
      ],
      [
        '/v2/classify',
        { model: 'svc-small', task_type: 'binary-classification', inputs: ['ok'], examples: blankExamples(3, '  ') },
        `examples[3].text ${blank}`,
        'examples[3].text',
      ],
      [
        '/v2/train',
        { model: 'svc-small', task_type: 'binary-classification', examples: blankExamples(5, '\u3000') },
        `examples[5].text ${blank}`,
        'examples[5].text',
      ],
      [
        '/v2/train',
        {
          model: 'svc-small',
          task_type: 'binary-classification',
          label_text: 'billing question',
          texts: ['Why was I charged twice?', ' '],
          teacher: { model: 'provider-a:gpt-4o-mini', project_id: 'proj_0123456789ab' },
        },
        `texts[1] ${blank}`,
        'texts[1]',
      ],
    ];
    for (const [url, body, message, param] of cases) {
      expect(await call('POST', url, body)).toEqual({ status: 400, body: err('invalid_request_error', message, param, 'invalid_request') });
    }
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
});
