// Adapter models in transformers.js through the service's hub: the model directory holds only the adapter, the head
// and the manifest, and the hub serves transformers.js config.json, the tokenizer files and onnx/model.onnx of base +
// adapter merged, built on the first download and kept in the artifact store under its content address. For each
// task type, transformers.js' scores must match POST /v2/predict within 1e-3.
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { env, pipeline } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences, uciSites } from '../../fixtures/corpora.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { kAdapterFolderFiles } from '../_support/adapter-files.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';

let dir: string;
let server: RunningServer;
let key: string;

async function call(method: string, path: string, body?: unknown) {
  const answer = await httpCall(server.url, method, path, key, body);
  return { status: answer.status, body: JSON.parse(answer.text) as Record<string, unknown> };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-transformers-adapter-'));
  // fp32, not the default 'auto': the exported ONNX model matching our predictions is an fp32 statement.
  server = await startServer({ dataDir: dir, port: 0, pool: { precision: 'fp32' } });
  await server.service.createOrganization('acme');
  key = (await server.service.createApiKey('acme')).key;
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const imdb = uciSentences('imdb');
const sites = uciSites();
const bySite = (site: string, n: number, from = 0) => sites.filter((r) => r.label === site).slice(from, from + n);
const tags: Record<string, string[]> = { imdb: ['film'], yelp: ['review-site'], amazon: [] };
const texts = [...imdb.slice(300, 306), ...bySite('yelp', 3, 50), ...bySite('amazon', 3, 50)].map((r) => r.text);
const adapter = { method: 'adapter', rank: 4 };

const cases = [
  {
    name: 'binary',
    request: {
      task_type: 'binary-classification',
      examples: [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
        text: r.text,
        label: r.label,
        label_text: 'positive',
      })),
    },
    scores: (p: Record<string, unknown>) => ({ positive: p.probability as number }),
  },
  {
    name: 'multi-class',
    request: {
      task_type: 'multi-class-classification',
      examples: ['amazon', 'imdb', 'yelp'].flatMap((site) => bySite(site, 8).map((r) => ({ text: r.text, label: site }))),
    },
    scores: (p: Record<string, unknown>) => p.scores as Record<string, number>,
  },
  {
    name: 'multi-label',
    request: {
      task_type: 'multi-label-classification',
      examples: ['amazon', 'imdb', 'yelp'].flatMap((site) => bySite(site, 8).map((r) => ({ text: r.text, labels: tags[site] }))),
    },
    scores: (p: Record<string, unknown>) => p.scores as Record<string, number>,
  },
];

async function trained(request: Record<string, unknown>): Promise<string> {
  const started = await call('POST', '/v2/train', { model: 'svc-small', finetune: adapter, num_iterations: 2, ...request });
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

async function transformersScores(id: string, inputs: string[]): Promise<Record<string, number>[]> {
  const cache = mkdtempSync(join(tmpdir(), 'svc-adapter-cache-'));
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
    return outputs.map((labels) => Object.fromEntries(labels.map((l) => [l.label, l.score])));
  } finally {
    Object.assign(env, saved);
    rmSync(cache, { recursive: true, force: true });
  }
}

describe('an adapter model in transformers.js from the hub', () => {
  it.each(cases)(
    'gives /v2/predict scores within 1e-3 ($name)',
    async ({ request, scores }) => {
      const id = await trained(request);
      const modelDir = join(dir, 'hub', 'acme', id);
      // The model's own files: no encoder, no ONNX graph.
      expect(readdirSync(modelDir).sort()).toEqual([...kAdapterFolderFiles]);
      const info = await call('GET', `/hub/api/models/acme/${id}`);
      expect((info.body.siblings as { rfilename: string }[]).map((s) => s.rfilename)).toEqual([
        'adapter_config.json',
        'adapter_model.safetensors',
        'config.json',
        'example_embeddings.safetensors',
        'examples.json',
        'head.json',
        'manifest.json',
        'onnx/model.onnx',
        'tokenizer.json',
        'tokenizer_config.json',
      ]);

      const theirs = await transformersScores(id, texts);
      const ours = ((await call('POST', '/v2/predict', { model: id, inputs: texts })).body.predictions as Record<string, unknown>[]).map(
        scores,
      );
      let largest = 0;
      ours.forEach((expected, i) => {
        for (const [label, score] of Object.entries(expected)) largest = Math.max(largest, Math.abs(theirs[i][label] - score));
      });
      expect(largest).toBeLessThan(1e-3);
      // Training, the first download's ONNX build and transformers.js' load: seconds each on two busy cores.
    },
    240_000 * kLevelSlowdown,
  );

  it('builds the merged export once, keeps it under its content address, and drops it with the model', async () => {
    const merged = join(dir, 'hub', '_merged');
    const before = readdirSync(merged);
    expect(before).toHaveLength(3);
    // A rebuild would put a new folder (another inode) in place of the stored one.
    const inodes = () => before.map((name) => statSync(join(merged, name)).ino);
    const stored = inodes();
    const id = readdirSync(join(dir, 'hub', 'acme'))[0];
    const first = await httpCall(server.url, 'GET', `/hub/acme/${id}/resolve/main/onnx/model.onnx`, key);
    expect(first.status).toBe(200);
    expect(readdirSync(merged)).toEqual(before);
    expect(inodes()).toEqual(stored);
    expect(await call('DELETE', `/v2/models/${id}`)).toMatchObject({ status: 200 });
    expect(readdirSync(merged)).toHaveLength(2);
    expect(existsSync(join(dir, 'hub', 'acme', id))).toBe(false);
  });
});
