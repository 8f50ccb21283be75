// What an operator sees of a real server: one JSON log line per request (pino) and GET /metrics behind its
// token, read with a Prometheus text-format parser, its counters moved by real training, predictions and
// proxied calls through the official OpenAI client against the fake provider.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { type FakeProvider, kFakeKeys, startFakeProvider } from '../../fixtures/fake-provider.js';
import { poolOptions } from '../../src/pool/pool.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { rateLimited } from '../../src/telemetry.js';
import { exited, serve } from '../_support/cli.js';
import { httpCall } from '../_support/http.js';
import { type Family, histogram, parseMetrics, value } from '../_support/prometheus.js';

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive review',
}));
const kToken = 'metrics-token-for-tests';
const kUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let dir: string;
let fake: FakeProvider;
let server: RunningServer;
let key: string;
let keyId: string;
let projectId: string;
const lines: string[] = [];

const call = (method: string, path: string, bearer: string | null, body?: unknown) => httpCall(server.url, method, path, bearer, body);

async function scrape(): Promise<{ families: Family[]; text: string }> {
  const response = await call('GET', '/metrics', kToken);
  expect([response.status, response.type]).toEqual([200, 'text/plain; version=0.0.4; charset=utf-8']);
  return { families: parseMetrics(response.text), text: response.text };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-observe-'));
  fake = await startFakeProvider();
  server = await startServer({
    dataDir: dir,
    port: 0,
    logLevel: 'info',
    logStream: { write: (line) => void lines.push(line) },
    metricsToken: kToken,
    providers: { 'provider-a': { url: fake.urls.a, key: kFakeKeys.a } },
  });
  await server.service.createOrganization('acme');
  await server.service.setProxyAccess('acme', true);
  ({ key, id: keyId } = await server.service.createApiKey('acme'));
  projectId = (await server.service.createProject('acme', 'bot')).id;
});

afterAll(async () => {
  await server?.close();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /metrics', () => {
  it('answers 401 without the operator token, and never to an API key', async () => {
    for (const bearer of [null, 'wrong', key]) {
      const response = await call('GET', '/metrics', bearer);
      expect([response.status, JSON.parse(response.text)]).toEqual([
        401,
        {
          error: {
            message: "Send the metrics token as 'Authorization: Bearer <token>'",
            type: 'authentication_error',
            param: null,
            code: 'authentication',
          },
        },
      ]);
    }
  });

  it('parses as Prometheus text, and its counters move with real training, predictions and proxied calls', async () => {
    const before = await scrape();
    const body = { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false };
    const modelId = (JSON.parse((await call('POST', '/v2/train', key, body)).text) as { id: string }).id;
    await server.service.idle();
    for (let i = 0; i < 2; i += 1) {
      expect((await call('POST', '/v2/predict', key, { model: modelId, inputs: ['A moving story.', 'Dull.', 'Fine.'] })).status).toBe(200);
    }
    expect((await call('GET', '/v2/models/svc-small-000000000000', key)).status).toBe(404);
    expect((await call('GET', '/v2/models', null)).status).toBe(401);
    const openai = new OpenAI({ baseURL: `${server.url}/v2/${projectId}/`, apiKey: key, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: 'provider-a:gpt-fake',
      messages: [{ role: 'user', content: 'hello there' }],
    });
    await openai.chat.completions.create({ model: 'provider-a:fail-500', messages: [{ role: 'user', content: 'x' }] }).catch(() => {});
    // A stream is counted when its last event has gone out.
    const stream = await openai.chat.completions.create({
      model: 'provider-a:gpt-fake',
      messages: [{ role: 'user', content: 'go on' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamed = { prompt_tokens: 0, completion_tokens: 0 };
    for await (const chunk of stream) if (chunk.usage) streamed = chunk.usage;
    rateLimited('requests');
    const after = await scrape();

    const moved = (name: string, labels: Record<string, string> = {}) =>
      value(after.families, name, labels) - value(before.families, name, labels);
    const observed = (name: string, labels: Record<string, string> = {}) => {
      const [a, b] = [histogram(after.text, name, labels), histogram(before.text, name, labels)];
      return { count: a.count - b.count, sum: a.sum - b.sum };
    };
    expect(moved('svc_http_requests_total', { method: 'POST', route: '/v2/predict', status: '200' })).toBe(2);
    expect(moved('svc_http_requests_total', { method: 'POST', route: '/v2/train', status: '200' })).toBe(1);
    expect(moved('svc_http_requests_total', { method: 'GET', route: '/v2/models/:model_id', status: '404' })).toBe(1);
    expect(moved('svc_http_requests_total', { method: 'GET', route: '/v2/models', status: '401' })).toBe(1);
    expect(moved('svc_http_requests_total', { method: 'POST', route: '/v2/:project_id/chat/completions', status: '200' })).toBe(2);
    expect(moved('svc_http_requests_total', { method: 'POST', route: '/v2/:project_id/chat/completions', status: '500' })).toBe(1);
    expect(observed('svc_http_request_duration_seconds', { method: 'POST', route: '/v2/predict', status: '200' }).count).toBe(2);

    expect(value(after.families, 'svc_training_jobs', { state: 'done' })).toBe(1);
    expect(value(after.families, 'svc_training_jobs', { state: 'queued' })).toBe(0);
    expect(value(after.families, 'svc_training_jobs', { state: 'running' })).toBe(0);
    expect(observed('svc_training_job_duration_seconds', { outcome: 'done' }).count).toBe(1);
    // Two predict calls one after the other: two engine batches of three texts.
    expect(observed('svc_predict_batch_texts')).toEqual({ count: 2, sum: 6 });
    expect(value(after.families, 'svc_pool_workers')).toBe(poolOptions().workers);
    expect(value(after.families, 'svc_pool_busy_workers')).toBe(0);
    expect(value(after.families, 'svc_pool_queue_depth')).toBe(0);

    expect(moved('svc_proxy_requests_total', { provider: 'provider-a', status: '200' })).toBe(2);
    expect(moved('svc_proxy_requests_total', { provider: 'provider-a', status: '500' })).toBe(1);
    expect(moved('svc_proxy_errors_total', { provider: 'provider-a' })).toBe(1);
    expect(streamed.completion_tokens).toBeGreaterThan(0);
    const input = completion.usage!.prompt_tokens + streamed.prompt_tokens;
    expect(moved('svc_proxy_tokens_total', { provider: 'provider-a', direction: 'input' })).toBe(input);
    expect(moved('svc_proxy_tokens_total', { provider: 'provider-a', direction: 'output' })).toBe(
      completion.usage!.completion_tokens + streamed.completion_tokens,
    );
    expect(observed('svc_proxy_upstream_duration_seconds', { provider: 'provider-a' }).count).toBe(3);
    expect(moved('svc_rate_limited_total', { kind: 'requests' })).toBe(1);
    // svc serve adds the process's own: memory, CPU, event-loop delay.
    expect(value(after.families, 'process_resident_memory_bytes')).toBeGreaterThan(50 * 1024 * 1024);
    expect(value(after.families, 'process_cpu_seconds_total')).toBeGreaterThan(value(before.families, 'process_cpu_seconds_total'));
    expect(after.families.find((f) => f.name === 'nodejs_eventloop_lag_seconds')?.type).toBe('GAUGE');
  });
});

describe('request logs', () => {
  it('write one JSON line per request: request id, organization, key id, route pattern, status, time; never the key', async () => {
    lines.length = 0;
    await call('GET', '/v2/models', key);
    await call('GET', '/v2/models/svc-small-000000000000', `${key}x`);
    await call('GET', `/v2/${projectId}/requests?limit=1`, key);
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(
      logged.map(({ level, reqId, time, hostname, pid, ms, ...rest }) => {
        expect([level, typeof time, typeof hostname, typeof pid, typeof ms]).toEqual([30, 'number', 'string', 'number', 'number']);
        expect(reqId).toMatch(kUuid);
        return rest;
      }),
    ).toEqual([
      { org: 'acme', keyId, method: 'GET', route: '/v2/models', status: 200, msg: 'request' },
      { org: null, keyId: null, method: 'GET', route: '/v2/models/:model_id', status: 401, msg: 'request' },
      { org: 'acme', keyId, method: 'GET', route: '/v2/:project_id/requests', status: 200, msg: 'request' },
    ]);
    expect(new Set(logged.map((line) => line.reqId)).size).toBe(3);
    expect(lines.join('')).not.toContain(key.slice(4, 12));
    expect(lines.join('')).not.toContain(projectId);
  });
});

describe('svc serve', () => {
  it('--log-level and --metrics-token: JSON request lines on stdout, /metrics for the token only', async () => {
    const data = mkdtempSync(join(tmpdir(), 'svc-observe-cli-'));
    try {
      const { child, url, output } = await serve(['--data', data, '--log-level', 'info', '--metrics-token', kToken]);
      const unauthorized = await fetch(`${url}/v2/models`);
      const metrics = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${kToken}` } });
      expect([unauthorized.status, metrics.status]).toEqual([401, 200]);
      const families = parseMetrics(await metrics.text());
      expect(value(families, 'svc_http_requests_total', { method: 'GET', route: '/v2/models', status: '401' })).toBe(1);
      child.kill('SIGTERM');
      await exited(child);
      const requestLine = output()
        .split('\n')
        .find((line) => line.includes('"msg":"request"'));
      expect(JSON.parse(requestLine!)).toMatchObject({ level: 30, org: null, keyId: null, route: '/v2/models', status: 401 });
      expect(output()).not.toContain('GET /metrics is off');

      // No token: /metrics is not served, and the start-up lines say how to turn it on.
      const off = await serve(['--data', data, '--log-level', 'warn'], { SVC_METRICS_TOKEN: '' });
      expect((await fetch(`${off.url}/metrics`)).status).toBe(404);
      await fetch(`${off.url}/v2/models`);
      off.child.kill('SIGTERM');
      await exited(off.child);
      expect(off.output()).toContain(
        'svc: GET /metrics is off; set SVC_METRICS_TOKEN (or --metrics-token) to serve it to scrapers that send that token',
      );
      expect(off.output()).not.toContain('"msg":"request"');
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });
});
