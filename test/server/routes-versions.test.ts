// Version numbers in paths and query strings, and label names in train bodies, over HTTP (the app: routes-app.ts).
// A version number is plain digits from 1 everywhere (`<id>@<n>`, `/versions/<n>`, `?version=<n>`, the hub's
// `v<n>`): `0x2`, `1e3`, `+2`, ` 2`, `02` or `2.0000000000000001` is a 400 that names it, and nothing is deleted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { err, examples, openRoutesApp, type RoutesApp } from './routes-app.js';

let routes: RoutesApp;
let call: RoutesApp['call'];
let id: string;

const kRule = '1 to 999999999 in plain digits (no sign, leading zero, point, exponent or space)';
const badVersion = (got: string) =>
  err('invalid_request_error', `version must be a version number, ${kRule}; got '${got}'`, 'version', 'invalid_request');

beforeAll(async () => {
  routes = await openRoutesApp();
  call = routes.call;
  const trained = await call('POST', '/v2/train', { model: 'svc-small', task_type: 'binary-classification', examples });
  id = (trained.body as { id: string }).id;
  await routes.service.idle();
  expect(
    (await call('POST', `/v2/models/${id}/versions`, { model: 'svc-small', task_type: 'binary-classification', examples })).status,
  ).toBe(200);
  await call('POST', `/v2/models/${id}/versions`, { model: 'svc-small', task_type: 'binary-classification', examples });
  await routes.service.idle();
});

afterAll(() => routes.close());

// As a client would send each: encoded where a URL needs it.
const kLoose: [string, string][] = [
  ['0x2', '0x2'],
  ['1e3', '1e3'],
  ['2.0000000000000001', '2.0000000000000001'],
  ['2.0', '2.0'],
  ['%2B2', '+2'],
  ['%202', ' 2'],
  ['2%20', '2 '],
  ['02', '02'],
  ['0', '0'],
  ['-2', '-2'],
  ['1000000000', '1000000000'],
];

describe('version numbers', () => {
  it.each(kLoose)('DELETE /versions/%s is a 400 naming it, and deletes nothing', async (sent, got) => {
    expect(await call('DELETE', `/v2/models/${id}/versions/${sent}`)).toEqual({ status: 400, body: badVersion(got) });
    const listed = (await call('GET', `/v2/models/${id}/versions`)).body as { data: { version: number }[] };
    expect(listed.data.map((v) => v.version)).toEqual([1, 2, 3]);
  });

  it.each(kLoose)('GET /evaluation?version=%s is a 400 naming it', async (sent, got) => {
    expect(await call('GET', `/v2/models/${id}/evaluation?version=${sent}`)).toEqual({ status: 400, body: badVersion(got) });
  });

  it("takes plain digits, and the hub's revision and a model name follow the same rule", async () => {
    expect(await call('DELETE', `/v2/models/${id}/versions/3`)).toEqual({
      status: 200,
      body: { id: `${id}@3`, object: 'model.version', deleted: true },
    });
    const hub = async (revision: string) => (await call('GET', `/hub/acme/${id}/resolve/${revision}/config.json`)).status;
    expect([await hub('v2'), await hub('v02'), await hub('v0x2'), await hub('v+2'), await hub('v1e0')]).toEqual([200, 404, 404, 404, 404]);
    expect(await call('POST', '/v2/predict', { model: `${id}@02`, inputs: ['fine'] })).toEqual({
      status: 400,
      body: err(
        'invalid_request_error',
        `'${id}@02' names no version: use <model_id>, or <model_id>@<n> with n a version number from 1`,
        'model',
        'invalid_request',
      ),
    });
  });
});

describe('label names', () => {
  it('refuses two classes that differ only in letter case, and a label_text with NUL or over the cap', async () => {
    const classes = ['Billing', 'billing'].flatMap((label) => examples.slice(0, 10).map((e) => ({ text: e.text, label })));
    expect(await call('POST', '/v2/train', { model: 'svc-small', task_type: 'multi-class-classification', examples: classes })).toEqual({
      status: 400,
      body: err(
        'invalid_request_error',
        "'Billing' and 'billing' are one class name written two ways (they differ only in letter case); use one spelling",
        'examples',
        'invalid_request',
      ),
    });
    const binary = (labelText: string) => ({
      model: 'svc-small',
      task_type: 'binary-classification',
      examples: examples.map((e) => ({ ...e, label_text: labelText })),
    });
    expect(await call('POST', '/v2/train', binary('positive\u0000'))).toEqual({
      status: 400,
      body: err(
        'invalid_request_error',
        'examples[0].label_text must not contain control characters (U+0000 at character 8)',
        'examples[0].label_text',
        'invalid_request',
      ),
    });
    expect(await call('POST', '/v2/train', binary('p'.repeat(300)))).toEqual({
      status: 400,
      body: err(
        'invalid_request_error',
        'examples[0].label_text must be at most 200 characters (got 300)',
        'examples[0].label_text',
        'invalid_request',
      ),
    });
    // Decomposed in, composed out: the model's label_text is the NFC form.
    const trained = await call('POST', '/v2/train', binary('re\u0301sume\u0301'));
    await routes.service.idle();
    const predicted = await call('POST', '/v2/predict', { model: (trained.body as { id: string }).id, inputs: ['fine'] });
    expect((predicted.body as { label_text: string }).label_text).toBe('r\u00e9sum\u00e9');
  });
});
