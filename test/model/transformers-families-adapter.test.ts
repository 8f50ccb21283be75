// Adapter classifiers on registered base models (the tiny CLS BERT without Normalize and the tiny XLM-RoBERTa with the
// Unigram tokenizer and e5's prompt, see _families.ts; not yet MPNet) in transformers.js through the service's hub: the model folder
// holds the adapter, and the hub serves base + adapter merged, exported as the base's family, on the first download.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { env, pipeline } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { registerBaseModel } from '../../src/model/base-models.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { kAdapterFolderFiles } from '../_support/adapter-files.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';
import { kFamilyCases, writeFamilyBase } from './_families.js';

// MPNet adapters are trained under PEFT's MPNet module names, which the adapter reader does not take yet.
const kAdapterCases = kFamilyCases.filter((c) => c.modelType !== 'mpnet');

let dir: string;
let server: RunningServer;
let key: string;

async function call(method: string, path: string, body?: unknown) {
  const answer = await httpCall(server.url, method, path, key, body);
  return { status: answer.status, body: JSON.parse(answer.text) as Record<string, unknown> };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-transformers-families-adapter-'));
  for (const c of kAdapterCases) {
    const folder = join(dir, 'bases', c.name);
    writeFamilyBase(folder, c);
    registerBaseModel(c.name, folder);
  }
  // fp32, not the default 'auto': the exported ONNX model matching our predictions is an fp32 statement.
  server = await startServer({ dataDir: join(dir, 'data'), port: 0, pool: { precision: 'fp32' } });
  await server.service.createOrganization('acme');
  key = (await server.service.createApiKey('acme')).key;
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const examples = imdbExamples(0, 12, 'positive');
const texts = uciSentences('imdb')
  .slice(300, 330)
  .map((row) => row.text);

async function trained(model: string): Promise<string> {
  const started = await call('POST', '/v2/train', {
    model,
    task_type: 'binary-classification',
    examples,
    finetune: { method: 'adapter', rank: 4 },
    num_iterations: 2,
  });
  expect(started.status).toBe(200);
  const id = started.body.id as string;
  let status = started.body.status;
  for (let i = 0; i < 2000 * kLevelSlowdown && status === 'training'; i += 1) {
    await new Promise((r) => setTimeout(r, 100));
    status = (await call('GET', `/v2/models/${id}`)).body.status;
  }
  expect(status).toBe('trained');
  return id;
}

async function transformersScores(id: string, inputs: string[]): Promise<number[]> {
  const cache = mkdtempSync(join(tmpdir(), 'svc-families-adapter-cache-'));
  const saved = { ...env, fetch: env.fetch };
  try {
    env.allowLocalModels = false;
    env.allowRemoteModels = true;
    env.remoteHost = `${server.url}/hub/`;
    env.cacheDir = cache;
    env.fetch = (input: string | URL | Request, init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${key}`);
      return fetch(input, { ...init, headers });
    };
    const classify = await pipeline('text-classification', `acme/${id}`, { dtype: 'fp32' });
    const outputs = (await classify(inputs, { top_k: null })) as { label: string; score: number }[][];
    await classify.dispose();
    return outputs.map((labels) => labels.find((entry) => entry.label === 'positive')?.score ?? NaN);
  } finally {
    Object.assign(env, saved);
    rmSync(cache, { recursive: true, force: true });
  }
}

describe.each(kAdapterCases.map((c) => [c.name, c] as const))('an adapter model on the registered base %s', (name, c) => {
  it(
    'loads from the hub in transformers.js with /v2/predict probabilities within 1e-3',
    async () => {
      const id = await trained(name);
      expect(id.startsWith(`${name}-`)).toBe(true);
      // The model's own files: the adapter, no encoder and no ONNX graph until transformers.js asks.
      expect(readdirSync(join(dir, 'data', 'hub', 'acme', id)).sort()).toEqual([...kAdapterFolderFiles]);
      const ours = ((await call('POST', '/v2/predict', { model: id, inputs: texts })).body.predictions as { probability: number }[]).map(
        (p) => p.probability,
      );
      // The pipeline puts no prompt before a text: the base's, as /v2/predict does.
      const theirs = await transformersScores(
        id,
        texts.map((text) => c.prompt + text),
      );
      const largest = Math.max(...ours.map((p, i) => Math.abs(theirs[i]! - p)));
      expect(largest).toBeLessThan(1e-3);
    },
    // Training, the first download's merged ONNX build and transformers.js' load: seconds each on two busy cores.
    240_000 * kLevelSlowdown,
  );
});
