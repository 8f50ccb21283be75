// truncate and explain on /v2/predict and /v2/train through the stand-alone service: a real server on
// 127.0.0.1 over a temporary data directory, plain fetch clients, a model trained by the service
// (frozen encoder, examples read in chunks), its answers compared with the library's for the model
// in the hub, and bad values refused 400 naming the field.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { DirectoryHub } from '../../src/model/hub.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { batchStats } from '../../src/predict/batcher.js';
import { Classifier } from '../../src/predict/classifier.js';
import { kExampleEmbeddingsFile, kExamplesFile } from '../../src/predict/example-bank.js';
import { kExplainTextChars } from '../../src/contract/long-texts.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';

const imdb = uciSentences('imdb');
// About 400 words of reviews: three windows of 160 words, more than the 256 tokens read.
const long = imdb
  .slice(300, 400)
  .map((row) => row.text)
  .join(' ')
  .split(' ')
  .slice(0, 400)
  .join(' ');
const inputs = ['An absolutely wonderful, moving film.', long];
const tokenizer = Tokenizer.fromPretrained('svc-small');

let dir: string;
let server: RunningServer;
let key: string;
let modelId: string;

async function call(method: string, path: string, body?: unknown) {
  const answer = await httpCall(server.url, method, path, key, body);
  return { status: answer.status, body: JSON.parse(answer.text) as Record<string, unknown> };
}

async function trained(id: string): Promise<Record<string, unknown>> {
  let current = (await call('GET', `/v2/models/${id}`)).body;
  for (let i = 0; i < 600 * kLevelSlowdown && current.status === 'training'; i += 1) {
    await new Promise((r) => setTimeout(r, 100));
    current = (await call('GET', `/v2/models/${id}`)).body;
  }
  return current;
}

const examples = [...imdbExamples(0, 10), { text: long, label: true, label_text: 'positive' }];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-e2e-long-'));
  // The answers are checked here, not the queue's deadline: chunked texts on a loaded machine take time.
  server = await startServer({ dataDir: dir, port: 0, predictQueue: { deadlineMs: 120_000 } });
  await server.service.createOrganization('acme');
  key = (await server.service.createApiKey('acme')).key;
  const started = await call('POST', '/v2/train', {
    model: 'svc-small',
    task_type: 'binary-classification',
    finetune: false,
    truncate: 'chunks',
    examples,
  });
  expect(started.status).toBe(200);
  modelId = started.body.id as string;
  expect((await trained(modelId)).status).toBe('trained');
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('POST /v2/predict: truncate and explain', () => {
  it('reads long inputs in chunks and names the nearest training examples, as the library does for the same model', async () => {
    const answer = await call('POST', '/v2/predict', { model: modelId, inputs, truncate: 'chunks', explain: 2 });
    expect({ status: answer.status, error: answer.body.error }).toEqual({ status: 200, error: undefined });
    const predictions = answer.body.predictions as {
      chunks: number;
      nearest: { text: string; similarity: number; supports: boolean; label: boolean }[];
      label: boolean;
    }[];
    expect(predictions.map((p) => Object.keys(p))).toEqual(inputs.map(() => ['label', 'probability', 'truncated', 'chunks', 'nearest']));
    expect(predictions.map((p) => p.chunks)).toEqual([1, 3]);
    // The long input is a training example, kept as the head saw it (read in chunks): its own nearest, its text cut to
    // what an explanation carries.
    expect(long.length).toBeGreaterThan(kExplainTextChars);
    expect(predictions[1].nearest[0]).toMatchObject({
      text: long.slice(0, kExplainTextChars),
      text_truncated: true,
      label: true,
      supports: predictions[1].label,
    });
    // 1 up to the default precision's rounding: the stored example embeddings are fp32 (training embeds in fp32), the
    // prediction's are 'auto' (bf16 where it measured faster: cosine >= 0.9999 to fp32).
    expect(predictions[1].nearest[0].similarity).toBeGreaterThanOrEqual(0.9999);
    expect(predictions[1].nearest[0].similarity).toBeLessThan(1 + 1e-5);
    const hubDir = join(dir, 'hub', 'acme', modelId);
    expect(readdirSync(hubDir)).toEqual(expect.arrayContaining([kExamplesFile, kExampleEmbeddingsFile]));
    const library = await Classifier.load(`acme/${modelId}`, { hub: new DirectoryHub(join(dir, 'hub')) });
    expect(predictions).toEqual(await library.predict(inputs, { truncate: 'chunks', explain: 2 }));
  });

  it('answers only what was asked for', async () => {
    const answer = await call('POST', '/v2/predict', { model: modelId, inputs });
    expect((answer.body.predictions as object[]).map((p) => Object.keys(p))).toEqual(
      inputs.map(() => ['label', 'probability', 'truncated']),
    );
    const start = await call('POST', '/v2/predict', { model: modelId, inputs, truncate: 'start' });
    expect((start.body.predictions as { truncated: boolean }[]).map((p) => p.truncated)).toEqual([false, true]);
  });

  it("keeps the last tokens of a text without spaces with 'start', and does not flag a text of 200 words that fits", async () => {
    const chinese = '这部电影的结局让我非常感动，演员的表演也十分出色，但开头很无聊。'.repeat(20);
    // 'start' keeps [CLS] + the last 254 tokens + [SEP]: the stretch of the text from the first kept token on.
    const kept = tokenizer.encodeBatch([chinese], { truncate: 'start', offsets: true });
    const tail = chinese.slice(kept.offsets![2]);
    expect([...tokenizer.encode(tail)]).toEqual([...kept.ids]);
    const fits = 'good '.repeat(200);
    const start = await call('POST', '/v2/predict', { model: modelId, inputs: [chinese, fits], truncate: 'start' });
    const read = await call('POST', '/v2/predict', { model: modelId, inputs: [tail, fits] });
    const [cut, whole] = start.body.predictions as { probability: number; truncated: boolean }[];
    const [tailRead, wholeRead] = read.body.predictions as { probability: number; truncated: boolean }[];
    expect(cut).toEqual({ ...tailRead, truncated: true });
    expect(whole).toEqual(wholeRead);
    expect(whole.truncated).toBe(false);
  });

  it("refuses a text that does not fit with 'none' before any inference: no engine batch runs", async () => {
    const before = batchStats();
    const answer = await call('POST', '/v2/predict', { model: modelId, inputs, truncate: 'none' });
    expect(answer.status).toBe(400);
    expect(batchStats()).toEqual(before);
  });

  it.each([
    [{ explain: 1.5 }, 'explain must be an integer', 'explain'],
    [{ explain: 0 }, 'explain must be at least 1', 'explain'],
    [{ explain: 21 }, 'explain must be at most 20', 'explain'],
    [{ truncate: 'middle' }, `truncate must be one of 'end', 'start', 'none', 'chunks' (got "middle")`, 'truncate'],
    [
      { truncate: 'none' },
      "inputs[1] is longer than the 256 tokens svc-small reads (truncate: 'none'); send truncate 'end', 'start' or 'chunks' to classify it",
      'inputs[1]',
    ],
  ])('refuses %j with 400: %s', async (extra, message, param) => {
    const answer = await call('POST', '/v2/predict', { model: modelId, inputs, ...extra });
    expect(answer).toEqual({ status: 400, body: { error: { message, type: 'invalid_request_error', param, code: 'invalid_request' } } });
  });
});

describe('POST /v2/train: truncate', () => {
  it.each([
    [
      { truncate: 'none' },
      "examples[20].text is longer than the 256 tokens svc-small reads (truncate: 'none'); send truncate 'end', 'start' or 'chunks' to train on it",
      'examples[20].text',
    ],
    [{ truncate: 'middle' }, `truncate must be one of 'end', 'start', 'none', 'chunks' (got "middle")`, 'truncate'],
  ])('refuses %j with 400 before any job: %s', async (extra, message, param) => {
    const before = ((await call('GET', '/v2/models')).body.data as object[]).length;
    const answer = await call('POST', '/v2/train', {
      model: 'svc-small',
      task_type: 'binary-classification',
      finetune: false,
      examples,
      ...extra,
    });
    expect(answer).toEqual({ status: 400, body: { error: { message, type: 'invalid_request_error', param, code: 'invalid_request' } } });
    expect(((await call('GET', '/v2/models')).body.data as object[]).length).toBe(before);
  });

  it('documents truncate and explain on both routes in the OpenAPI document', async () => {
    const doc = JSON.parse((await httpCall(server.url, 'GET', '/v2/openapi.json', null)).text) as {
      paths: Record<
        string,
        { post: { requestBody: { content: { 'application/json': { schema: { properties: Record<string, unknown> } } } } } }
      >;
      components: { schemas: Record<string, { properties: Record<string, { enum?: string[]; minimum?: number; maximum?: number }> }> };
    };
    const predict = doc.paths['/v2/predict'].post.requestBody.content['application/json'].schema.properties;
    expect(predict.truncate).toMatchObject({ enum: ['end', 'start', 'none', 'chunks'] });
    expect(predict.explain).toMatchObject({ minimum: 1, maximum: 20 });
    // The train request is one schema per task type, each taking truncate.
    for (const name of ['BinaryTrainRequest', 'MultiClassTrainRequest', 'MultiLabelTrainRequest']) {
      expect(doc.components.schemas[name].properties.truncate).toMatchObject({ enum: ['end', 'start', 'none', 'chunks'] });
    }
  });
});
