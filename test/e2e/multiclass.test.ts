// Multi-class and multi-label models through the stand-alone service: a real server on 127.0.0.1
// over a temporary data directory, the real library training (frozen encoder) and predicting,
// plain HTTP clients, and the answers compared with the library's for the model in the hub.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSites } from '../../fixtures/corpora.js';
import { splitClasses } from '../../fixtures/draw.js';
import { DirectoryHub } from '../../src/model/hub.js';
import { Classifier } from '../../src/predict/classifier.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';

const sites = uciSites().map((row) => ({ text: row.text, label: row.label as string }));
const { trainSet, testSet } = splitClasses(sites, 1, 8);
const heldOut = [0, 500, 1000, 1500, 2000, 2500].map((i) => testSet[i]);
// Multi-label: 'film' for IMDB sentences, 'food' for Yelp ones; an Amazon sentence has neither.
const tags: Record<string, string[]> = { imdb: ['film'], yelp: ['food'], amazon: [] };

let dir: string;
let server: RunningServer;
let key: string;

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

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-e2e-multi-'));
  server = await startServer({ dataDir: dir, port: 0 });
  await server.service.createOrganization('acme');
  key = (await server.service.createApiKey('acme')).key;
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('svc serve: multi-class and multi-label models', () => {
  it('trains a multi-class model, reports its labels and metrics, and predicts every class score', async () => {
    const body = { model: 'svc-small', task_type: 'multi-class-classification', finetune: false, examples: trainSet, validation: heldOut };
    const started = await call('POST', '/v2/train', body);
    expect(started.status).toBe(200);
    const id = started.body.id as string;
    const model = {
      id,
      object: 'model',
      created_at: started.body.created_at,
      status: 'training',
      owned_by: 'acme',
      task_type: 'multi-class-classification',
      labels: ['amazon', 'imdb', 'yelp'],
      version: 1,
      live_version: 1,
      context_window: 256,
    };
    expect(started.body).toEqual(model);
    const done = await trained(id);
    const loaded = await Classifier.load<'multi-class-classification'>(`acme/${id}`, { hub: new DirectoryHub(join(dir, 'hub')) });
    expect(done).toEqual({ ...model, status: 'trained', metrics: loaded.metrics });
    expect(Object.keys(loaded.metrics).sort()).toEqual([
      'cv_accuracy',
      'cv_encoder',
      'cv_folds',
      'cv_macro_f1',
      'train_accuracy',
      'train_seconds',
      'validation_accuracy',
      'validation_examples',
      'validation_macro_f1',
    ]);

    const texts = heldOut.map((row) => row.text);
    const predicted = await call('POST', '/v2/predict', { model: id, inputs: texts });
    expect(predicted.status).toBe(200);
    expect(Object.keys(predicted.body)).toEqual(['model', 'task_type', 'predictions']);
    const predictions = predicted.body.predictions as {
      label: string;
      probability: number;
      scores: Record<string, number>;
      truncated: boolean;
    }[];
    expect(predictions).toEqual(await loaded.predict(texts));
    for (const p of predictions) {
      expect(Object.keys(p)).toEqual(['label', 'probability', 'scores', 'truncated']);
      expect(Object.values(p.scores).reduce((s, v) => s + v, 0)).toBeCloseTo(1, 6);
    }
    const right = predictions.filter((p, i) => p.label === heldOut[i].label).length;
    expect((done.metrics as Record<string, number>).validation_accuracy).toBe(right / heldOut.length);
    expect(await call('POST', '/v2/predict', { model: id, inputs: texts, threshold: 0.2 })).toEqual({
      status: 400,
      body: {
        error: {
          message: `threshold is only used by multi-label models; ${id} is multi-class-classification`,
          type: 'invalid_request_error',
          param: 'threshold',
          code: 'invalid_request',
        },
      },
    });
    loaded.dispose();
  });

  it('trains a multi-label model and predicts the labels over a threshold, default or sent', async () => {
    const examples = trainSet.map((row) => ({ text: row.text, labels: tags[row.label] }));
    const started = await call('POST', '/v2/train', {
      model: 'svc-small',
      task_type: 'multi-label-classification',
      finetune: false,
      examples,
      class_weight: 'balanced',
    });
    expect(started.status).toBe(200);
    const id = started.body.id as string;
    const done = await trained(id);
    expect([done.status, done.labels]).toEqual(['trained', ['film', 'food']]);
    const loaded = await Classifier.load<'multi-label-classification'>(`acme/${id}`, { hub: new DirectoryHub(join(dir, 'hub')) });
    expect(loaded.manifest.training).toMatchObject({ class_weight: 'balanced', label_examples: { film: 8, food: 8 } });

    const texts = heldOut.map((row) => row.text);
    const predicted = await call('POST', '/v2/predict', { model: id, inputs: texts });
    expect(Object.keys(predicted.body)).toEqual(['model', 'task_type', 'predictions']);
    expect(predicted.body.predictions).toEqual(await loaded.predict(texts));
    const film = await call('POST', '/v2/predict', { model: id, inputs: texts, threshold: { film: 0 } });
    expect(film.body.predictions).toEqual(await loaded.predict(texts, { threshold: { film: 0 } }));
    for (const p of film.body.predictions as { labels: string[] }[]) expect(p.labels[0]).toBe('film');
    expect(await call('POST', '/v2/predict', { model: id, inputs: texts, threshold: { film: 2 } })).toEqual({
      status: 400,
      body: {
        error: {
          message: 'threshold.film must be a number from 0 to 1',
          type: 'invalid_request_error',
          param: 'threshold.film',
          code: 'invalid_request',
        },
      },
    });
    expect(await call('POST', '/v2/predict', { model: id, inputs: texts, threshold: { colour: 0.5 } })).toEqual({
      status: 400,
      body: {
        error: {
          message: "threshold names the label 'colour', which the model does not have (film, food)",
          type: 'invalid_request_error',
          param: 'threshold.colour',
          code: 'invalid_request',
        },
      },
    });
    loaded.dispose();
  });

  it('refuses a class with too few examples, naming it and its count', async () => {
    const examples = [...trainSet.filter((row) => row.label !== 'yelp'), ...trainSet.filter((row) => row.label === 'yelp').slice(0, 5)];
    expect(await call('POST', '/v2/train', { model: 'svc-small', task_type: 'multi-class-classification', examples })).toEqual({
      status: 400,
      body: {
        error: {
          message: "the class 'yelp' has 5 examples; each class needs at least 8",
          type: 'invalid_request_error',
          param: 'examples',
          code: 'invalid_request',
        },
      },
    });
  });
});
