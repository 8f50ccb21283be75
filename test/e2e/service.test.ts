// The stand-alone service end to end: a real server on 127.0.0.1 over a temporary data
// directory, the real library training and predicting, plain HTTP clients (fetch), and
// transformers.js downloading the trained model from the hub routes.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { env, pipeline } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { DirectoryHub } from '../../src/model/hub.js';
import { Classifier } from '../../src/predict/classifier.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';

const imdb = uciSentences('imdb');
const positives = imdb.filter((r) => r.label);
const negatives = imdb.filter((r) => !r.label);
const examples = [...positives.slice(0, 10), ...negatives.slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive review',
}));
const heldOut = [...positives.slice(100, 105), ...negatives.slice(100, 105)].map((r) => r.text);

let dir: string;
let server: RunningServer;
let acmeKey: string;
let globexKey: string;

async function call(method: string, path: string, key: string | null, body?: unknown) {
  const answer = await httpCall(server.url, method, path, key, body);
  return { status: answer.status, body: JSON.parse(answer.text) as Record<string, unknown> };
}

const notVisible = (what: string) => ({
  error: {
    message: `The model '${what}' does not exist or is not visible to this API key`,
    type: 'not_found_error',
    param: 'model',
    code: 'not_found',
  },
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-e2e-'));
  // fp32, not the default 'auto': transformers.js on the exported ONNX model matching the service is an fp32 statement.
  server = await startServer({ dataDir: dir, port: 0, proxyModels: ['provider-a:gpt-4o-mini'], pool: { precision: 'fp32' } });
  await server.service.createOrganization('acme');
  await server.service.createOrganization('globex');
  acmeKey = (await server.service.createApiKey('acme')).key;
  globexKey = (await server.service.createApiKey('globex')).key;
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('svc serve', () => {
  let modelId: string;

  it('trains 20 examples (fine-tuning the encoder), reaches trained, predicts, lists', async () => {
    const body = { model: 'svc-small', task_type: 'binary-classification', examples, num_iterations: 4 };
    const started = await call('POST', '/v2/train', acmeKey, body);
    expect(started.status).toBe(200);
    modelId = started.body.id as string;
    expect(modelId).toMatch(/^svc-small-[0-9a-f]{12}$/);
    const model = {
      id: modelId,
      object: 'model',
      created_at: started.body.created_at,
      status: 'training',
      owned_by: 'acme',
      task_type: 'binary-classification',
      label_text: 'positive review',
      version: 1,
      live_version: 1,
      context_window: 256,
    };
    expect(started.body).toEqual(model);

    let current = started.body;
    for (let i = 0; i < 600 * kLevelSlowdown && current.status === 'training'; i += 1) {
      await new Promise((r) => setTimeout(r, 100));
      current = (await call('GET', `/v2/models/${modelId}`, acmeKey)).body;
    }
    const loaded = await Classifier.load(`acme/${modelId}`, { hub: new DirectoryHub(join(dir, 'hub')) });
    // Trained models report the metrics their manifest holds: cross-validated accuracy and macro-F1 among them.
    expect(current).toEqual({ ...model, status: 'trained', metrics: loaded.metrics });
    expect(Object.keys(loaded.metrics).sort()).toEqual([
      'cv_accuracy',
      'cv_encoder',
      'cv_folds',
      'cv_macro_f1',
      'train_accuracy',
      'train_seconds',
    ]);
    // Fine-tuned: the estimate was measured on the base encoder, which never saw the held-out folds.
    expect(loaded.metrics.cv_encoder).toBe('base');

    const predicted = await call('POST', '/v2/predict', acmeKey, { model: modelId, inputs: heldOut });
    expect(predicted.status).toBe(200);
    const { predictions } = predicted.body as { predictions: { label: boolean; probability: number; truncated: boolean }[] };
    expect(Object.keys(predicted.body)).toEqual(['model', 'label_text', 'predictions']);
    expect(predictions.map((p) => [Object.keys(p), p.truncated])).toEqual(
      heldOut.map(() => [['label', 'probability', 'truncated'], false]),
    );
    expect([predicted.body.model, predicted.body.label_text, predictions.length]).toEqual([modelId, 'positive review', 10]);
    // Exactly what the library gives for the model the service put in its hub.
    expect(predictions).toEqual(await loaded.predict(heldOut));
    loaded.dispose();
    for (const p of predictions) expect(p.label).toBe(p.probability >= 0.5);
    // A text longer than the context window is answered, and says that only its start was read.
    const long = await call('POST', '/v2/predict', acmeKey, { model: modelId, inputs: ['great '.repeat(300), 'great'] });
    const cut = (long.body as { predictions: { truncated: boolean }[] }).predictions.map((p) => p.truncated);
    expect([long.status, cut]).toEqual([200, [true, false]]);

    expect(await call('GET', '/v2/models', acmeKey)).toEqual({ status: 200, body: { object: 'list', data: [current] } });
  });

  it('refuses a second server on the same data directory', async () => {
    await expect(startServer({ dataDir: dir, port: 0 })).rejects.toThrow(
      `another svc serve (pid ${process.pid}) is using the data directory ${dir}`,
    );
  });

  it('keeps the model from another organization: not listed, not found, not predictable, not downloadable', async () => {
    expect(await call('GET', '/v2/models', globexKey)).toEqual({ status: 200, body: { object: 'list', data: [] } });
    expect(await call('GET', `/v2/models/${modelId}`, globexKey)).toEqual({ status: 404, body: notVisible(modelId) });
    expect(await call('POST', '/v2/predict', globexKey, { model: modelId, inputs: ['x'] })).toEqual({
      status: 404,
      body: notVisible(modelId),
    });
    expect(await call('GET', `/hub/acme/${modelId}/resolve/main/config.json`, globexKey)).toEqual({
      status: 404,
      body: notVisible(`acme/${modelId}`),
    });
    expect(await call('GET', `/hub/acme/${modelId}/resolve/main/config.json`, null)).toEqual({
      status: 401,
      body: {
        error: {
          message: "Missing API key: send it as 'Authorization: Bearer <key>'",
          type: 'authentication_error',
          param: null,
          code: 'authentication',
        },
      },
    });
  });

  it('serves the model to transformers.js with the service as remote host and the API key as HF_TOKEN', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'svc-e2e-cache-'));
    const saved = { ...env, fetch: env.fetch };
    process.env.HF_TOKEN = acmeKey;
    try {
      env.allowLocalModels = false;
      env.allowRemoteModels = true;
      env.remoteHost = `${server.url}/hub/`;
      env.cacheDir = cache;
      // transformers.js sends HF_TOKEN only to huggingface.co; its fetch hook sends it to us too.
      env.fetch = (input: string | URL | Request, init?: RequestInit) => {
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${process.env.HF_TOKEN}`);
        return fetch(input, { ...init, headers });
      };
      const classify = await pipeline('text-classification', `acme/${modelId}`, { dtype: 'fp32' });
      const outputs = (await classify(heldOut, { top_k: null })) as { label: string; score: number }[][];
      const ours = (await call('POST', '/v2/predict', acmeKey, { model: modelId, inputs: heldOut })).body.predictions as {
        probability: number;
      }[];
      outputs.forEach((labels, i) => {
        const positive = labels.find((entry) => entry.label === 'positive review');
        expect(Math.abs((positive?.score ?? NaN) - ours[i].probability)).toBeLessThan(1e-3);
      });
      await classify.dispose();
    } finally {
      Object.assign(env, saved);
      delete process.env.HF_TOKEN;
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it('deletes the model and its hub copy', async () => {
    expect(await call('DELETE', `/v2/models/${modelId}`, acmeKey)).toEqual({
      status: 200,
      body: { id: modelId, object: 'model', deleted: true },
    });
    expect(await call('GET', `/v2/models/${modelId}`, acmeKey)).toEqual({ status: 404, body: notVisible(modelId) });
    expect(await call('GET', `/hub/acme/${modelId}/resolve/main/config.json`, acmeKey)).toEqual({
      status: 404,
      body: notVisible(`acme/${modelId}`),
    });
    expect(await call('GET', '/v2/models', acmeKey)).toEqual({ status: 200, body: { object: 'list', data: [] } });
    expect(existsSync(join(dir, 'hub', 'acme', modelId))).toBe(false);
  });
});
