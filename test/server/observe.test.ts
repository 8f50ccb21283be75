// The /v2 plugin in someone else's Fastify app: it logs through the host's own logger (request.log) and forces
// none on it, and it serves and counts metrics only when given them; training jobs counted by state and outcome.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Fastify from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { metricsRoutes, SvcMetrics } from '../../src/server/metrics.js';
import { publishAdapterCache } from '../../src/telemetry.js';
import { svcRoutes } from '../../src/server/routes.js';
import { SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { histogram, parseMetrics, value } from '../_support/prometheus.js';

let dir: string;
let service: SvcService;
let key: string;
let keyId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-observe-plugin-'));
  service = new SvcService({ store: SqliteStore.open(dir), runtime: new WordCountRuntime(join(dir, 'hub')), retention: false });
  await service.createOrganization('acme');
  ({ key, id: keyId } = await service.createApiKey('acme'));
});
afterAll(async () => {
  await service.close();
  rmSync(dir, { recursive: true, force: true });
});

it("logs one line per request through the host app's logger, at the host's level", async () => {
  const lines: string[] = [];
  const app = Fastify({ logger: { level: 'info', stream: { write: (line: string) => void lines.push(line) } } });
  await app.register(svcRoutes, { prefix: '/v2', service });
  const response = await app.inject({ method: 'GET', url: '/v2/models', headers: { authorization: `Bearer ${key}` } });
  expect(response.statusCode).toBe(200);
  const ours = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === 'request');
  expect(ours).toEqual([
    {
      level: 30,
      time: ours[0].time,
      pid: process.pid,
      hostname: ours[0].hostname,
      reqId: 'req-1',
      org: 'acme',
      keyId,
      method: 'GET',
      route: '/v2/models',
      status: 200,
      ms: ours[0].ms,
      msg: 'request',
    },
  ]);
  // Fastify's own request lines are the host's choice, and stay.
  expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['incoming request', 'request', 'request completed']);
  expect(lines.join('')).not.toContain(key);
  await app.close();
});

it('forces no logger on a host app that has none, and serves no /metrics unless asked', async () => {
  const app = Fastify();
  await app.register(svcRoutes, { prefix: '/v2', service });
  expect((await app.inject({ method: 'GET', url: '/v2/models', headers: { authorization: `Bearer ${key}` } })).statusCode).toBe(200);
  // Still Fastify's no-op logger, as the host left it (a pino logger would have a level).
  expect(app.log.level).toBeUndefined();
  expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
  expect((await app.inject({ method: 'GET', url: '/v2/metrics', headers: { authorization: `Bearer ${key}` } })).statusCode).toBe(404);
  await app.close();
});

it("with metrics: counts the plugin's requests, served where the host mounts metricsRoutes (here unguarded)", async () => {
  const metrics = new SvcMetrics({ service });
  const app = Fastify();
  await app.register(svcRoutes, { prefix: '/v2', service, metrics });
  await app.register(metricsRoutes, { prefix: '/internal', metrics });
  await app.inject({ method: 'GET', url: '/v2/models', headers: { authorization: `Bearer ${key}` } });
  await app.inject({ method: 'GET', url: '/v2/nowhere', headers: { authorization: `Bearer ${key}` } });
  const scraped = await app.inject({ method: 'GET', url: '/internal/metrics' });
  expect(scraped.statusCode).toBe(200);
  const families = parseMetrics(scraped.body);
  expect(value(families, 'svc_http_requests_total', { method: 'GET', route: '/v2/models', status: '200' })).toBe(1);
  // A path no route matched is one series, not one per URL.
  expect(value(families, 'svc_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
  expect(scraped.body).not.toContain('/v2/nowhere');
  // Process metrics are the host's business unless asked for.
  expect(families.some((family) => family.name.startsWith('process_') || family.name.startsWith('nodejs_'))).toBe(false);
  await app.close();
  metrics.close();
});

it('counts training jobs by state and times each run by how it ended', async () => {
  const imdb = uciSentences('imdb');
  const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
    text: r.text,
    label: r.label,
    label_text: 'positive',
  }));
  const jobsDir = mkdtempSync(join(tmpdir(), 'svc-observe-jobs-'));
  const trainer = new SvcService({
    store: SqliteStore.open(jobsDir),
    runtime: new WordCountRuntime(join(jobsDir, 'hub')),
    retention: false,
  });
  const metrics = new SvcMetrics({ service: trainer });
  try {
    await trainer.start();
    await trainer.createOrganization('acme');
    const acme = await trainer.authenticate((await trainer.createApiKey('acme')).key);
    const request = { model: 'svc-small', task_type: 'binary-classification', examples };
    await trainer.train(acme, request);
    await trainer.train(acme, { ...request, examples: [...examples.slice(1), { ...examples[0], text: 'please fail' }] });
    await trainer.idle();
    const text = await metrics.text();
    const families = parseMetrics(text);
    expect(['queued', 'running', 'done', 'failed'].map((state) => value(families, 'svc_training_jobs', { state }))).toEqual([0, 0, 1, 1]);
    expect(histogram(text, 'svc_training_job_duration_seconds', { outcome: 'done' }).count).toBe(1);
    expect(histogram(text, 'svc_training_job_duration_seconds', { outcome: 'failed' }).count).toBe(1);
  } finally {
    metrics.close();
    await trainer.close();
    rmSync(jobsDir, { recursive: true, force: true });
  }
});

it("counts the workers' adapter caches: hits, misses and evictions as they grow, bytes held by all workers", async () => {
  const metrics = new SvcMetrics({ service });
  const app = Fastify();
  await app.register(metricsRoutes, { metrics });
  // Each worker reports its counters since it started, after every batch that went through adapters.
  publishAdapterCache({ worker: 1, hits: 3, misses: 2, evictions: 0, bytes: 2_000_000 });
  publishAdapterCache({ worker: 2, hits: 1, misses: 1, evictions: 0, bytes: 1_000_000 });
  publishAdapterCache({ worker: 1, hits: 7, misses: 4, evictions: 1, bytes: 3_000_000 });
  const families = parseMetrics((await app.inject({ method: 'GET', url: '/metrics' })).body);
  expect(value(families, 'svc_adapter_cache_hits_total')).toBe(8);
  expect(value(families, 'svc_adapter_cache_misses_total')).toBe(5);
  expect(value(families, 'svc_adapter_cache_evictions_total')).toBe(1);
  expect(value(families, 'svc_adapter_cache_bytes')).toBe(4_000_000);
  await app.close();
  metrics.close();
});
