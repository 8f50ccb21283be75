// POST /v2/classify through the stand-alone service: a real server on 127.0.0.1 over a temporary data
// directory, plain fetch clients, the library's frozen encoder. The answer's structure is asserted
// exactly and compared with the library's classify() for the same examples.
import { describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { classify } from '../../src/train/classify.js';
import { useAcmeService } from '../_support/classify-service.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';

const acme = useAcmeService('svc-e2e-classify-');

async function call(body: unknown, bearer = acme.key) {
  const answer = await httpCall(acme.server.url, 'POST', '/v2/classify', bearer, body);
  return { status: answer.status, body: JSON.parse(answer.text) as Record<string, unknown> };
}

const examples = imdbExamples(0, 10);
const imdb = uciSentences('imdb');
const inputs = [
  'An absolutely wonderful, moving film. I loved every minute.',
  'Terrible, boring and a complete waste of time.',
  ...imdb
    .filter((r) => r.label)
    .slice(200, 203)
    .map((r) => r.text),
  ...imdb
    .filter((r) => !r.label)
    .slice(200, 203)
    .map((r) => r.text),
];

describe('POST /v2/classify', () => {
  it("labels texts by the request's examples in predict's shape, the same as the library", async () => {
    const body = { model: 'svc-small', task_type: 'binary-classification', inputs, examples };
    const answer = await call(body);
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body)).toEqual(['model', 'label_text', 'zero_shot', 'predictions']);
    expect(answer.body).toMatchObject({ model: 'svc-small', label_text: 'positive', zero_shot: false });
    const predictions = answer.body.predictions as { label: boolean; probability: number; truncated: boolean }[];
    expect(predictions.map((p) => Object.keys(p))).toEqual(inputs.map(() => ['label', 'probability', 'truncated']));
    expect(predictions.slice(0, 2).map((p) => p.label)).toEqual([true, false]);
    const library = await classify(inputs, examples);
    expect(predictions).toEqual(library.predictions);
    // The second call uses the head cached by the first, and answers the same.
    expect((await call(body)).body).toEqual(answer.body);
  });

  it('answers multi-class zero-shot from class names, saying so', async () => {
    const answer = await call({
      model: 'svc-small',
      task_type: 'multi-class-classification',
      examples: [],
      labels: ['sports', 'economy'],
      inputs: ['The striker scored twice in the final.', 'The central bank raised interest rates.'],
    });
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body)).toEqual(['model', 'task_type', 'zero_shot', 'predictions']);
    expect(answer.body.zero_shot).toBe(true);
    const predictions = answer.body.predictions as { label: string; scores: Record<string, number> }[];
    expect(predictions.map((p) => p.label)).toEqual(['sports', 'economy']);
    expect(predictions.map((p) => Object.keys(p.scores))).toEqual([
      ['economy', 'sports'],
      ['economy', 'sports'],
    ]);
  });

  it('reads task_type from the examples when the body has none, and names the first example of another kind', async () => {
    const inferred = await call({ model: 'svc-small', inputs: ['Great film'], examples });
    expect(inferred.status).toBe(200);
    expect(inferred.body).toMatchObject({ label_text: 'positive', zero_shot: false });
    const mixed = await call({ model: 'svc-small', inputs: ['Great film'], examples: [...examples, { text: 'Fine', label: 'ok' }] });
    expect(mixed).toEqual({
      status: 400,
      body: {
        error: {
          message: `examples[${examples.length}] has a string label (multi-class) but examples[0] has a boolean label (binary): send examples of one kind, or task_type`,
          type: 'invalid_request_error',
          param: `examples[${examples.length}]`,
          code: 'invalid_request',
        },
      },
    });
  });

  it('answers binary zero-shot true for a billing question and false for a late parcel', async () => {
    const answer = await call({
      model: 'svc-small',
      task_type: 'binary-classification',
      examples: [],
      label_text: 'billing question',
      inputs: ['Why was I charged twice?', 'My parcel is late'],
    });
    expect(answer.status).toBe(200);
    expect((answer.body.predictions as { label: boolean }[]).map((p) => p.label)).toEqual([true, false]);
  });

  it('explains answers with the nearest examples and reads long texts in chunks when asked', async () => {
    const long = `${Array(40).fill('The story follows a family through a year in a small town.').join(' ')} A wonderful film.`;
    const answer = await call({
      model: 'svc-small',
      task_type: 'binary-classification',
      inputs: [long],
      examples,
      explain: 2,
      truncate: 'chunks',
    });
    expect({ status: answer.status, error: answer.body.error }).toEqual({ status: 200, error: undefined });
    const [p] = answer.body.predictions as Record<string, unknown>[];
    expect(Object.keys(p)).toEqual(['label', 'probability', 'truncated', 'chunks', 'nearest']);
    expect(p).toMatchObject({ truncated: false, chunks: 4 });
    const nearest = p.nearest as Record<string, unknown>[];
    expect(nearest.map((n) => Object.keys(n))).toEqual([
      ['text', 'label', 'similarity', 'supports'],
      ['text', 'label', 'similarity', 'supports'],
    ]);
    expect((await call({ model: 'svc-small', task_type: 'binary-classification', inputs: ['x'], examples, explain: 1.5 })).body).toEqual({
      error: { message: 'explain must be an integer', type: 'invalid_request_error', param: 'explain', code: 'invalid_request' },
    });
  });

  it('refuses bad bodies with a 400 that names the field, and unknown keys with a 401', async () => {
    const base = { model: 'svc-small', task_type: 'binary-classification', inputs: ['x'], examples };
    const error = (message: string, param: string) => ({
      error: { message, type: 'invalid_request_error', param, code: 'invalid_request' },
    });
    expect(await call({ ...base, inputs: Array(97).fill('x') })).toEqual({
      status: 400,
      body: error('inputs holds more than 96 texts, the limit per classify request', 'inputs'),
    });
    expect(await call({ ...base, examples: examples.slice(9, 20) })).toEqual({
      status: 400,
      body: error("the label 'true' has 1 example; each needs at least 2", 'examples'),
    });
    expect(await call({ ...base, truncate: 'middle' })).toEqual({
      status: 400,
      body: error(`truncate must be one of 'end', 'start', 'none', 'chunks' (got "middle")`, 'truncate'),
    });
    expect(await call({ ...base, examples: [], label_text: undefined })).toEqual({
      status: 400,
      body: error('with no examples (zero-shot), label_text is required: the classes are told apart by their names', 'label_text'),
    });
    expect((await call(base, 'svc_unknown')).status).toBe(401);
  });

  it("counts against the organization's request limit, as predict does", async () => {
    await acme.server.service.createOrganization('slow');
    await acme.server.service.setOrgLimits('slow', { requestsPerMinute: 1 });
    const slowKey = (await acme.server.service.createApiKey('slow')).key;
    const body = { model: 'svc-small', task_type: 'binary-classification', inputs: ['Great film'], examples };
    expect((await call(body, slowKey)).status).toBe(200);
    const refused = await call(body, slowKey);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
  });

  it('is documented in the OpenAPI document', async () => {
    const answer = await httpCall(acme.server.url, 'GET', '/v2/openapi.json', null);
    const document = JSON.parse(answer.text) as { paths: Record<string, Record<string, { requestBody?: unknown; summary?: string }>> };
    expect(document.paths['/v2/classify'].post.summary).toBe(
      'Classify texts by examples sent with them (or label names), with no stored model',
    );
    expect(document.paths['/v2/classify'].post.requestBody).toBeDefined();
  });
});
