// The shadow classifier end to end: a real server (library runtime, SQLite) with the proxy pointed at the fake
// provider in teacher mode, a classifier trained from 20 examples (finetune: false), a shadow set for a proxied model,
// calls through the official OpenAI SDK (streaming and not), and the agreement the service recorded, checked call by
// call against the chat model's labels and the classifier's own predictions. Faults: another organization's
// classifier or project (404), no proxy access (403), a reply whose label cannot be read (agreed null), the
// classifier deleted later (the calls still succeed; the results say why there is no label). Then the dashboard's
// shadow view in Chromium, under the page's strict policy.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { type FakeProvider, kFakeKeys, startFakeProvider } from '../../fixtures/fake-provider.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import type { ShadowResult } from '../../src/store/shadow-types.js';
import { launchChromium } from '../_support/browser.js';
import { svc } from '../_support/cli.js';
import { imdbExamples } from '../_support/examples.js';
import { kLevelSlowdown } from '../_support/level.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-shadow-'));
const truth = new Map(uciSentences('imdb').map((r) => [r.text, r.label]));
const kModel = 'provider-a:gpt-4o-mini';
const kRule = { words: { true: ['yes'], false: ['no'] } };
let fake: FakeProvider;
let server: RunningServer;
let browser: Browser;
let acmeKey: string;
let globexKey: string;
let projectId: string;
let globexProjectId: string;
let classifier: string;
let globexClassifier: string;

const api = async (key: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${server.url}/v2${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
};

/** Waits until the project has `count` shadow results; returns them oldest first. */
async function results(count: number): Promise<ShadowResult[]> {
  for (let i = 0; i < 600; i++) {
    const rows = await server.service.store.shadows.listResults(projectId, { limit: 1000 });
    if (rows.length >= count) return rows.reverse();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`expected ${count} shadow results`);
}

beforeAll(async () => {
  // The chat model answers "is this review positive?" with the corpus's own label, in words (yes / no).
  fake = await startFakeProvider({ teacher: { labelOf: (text) => truth.get(text.replace(' [[garbage]]', '')) ?? false } });
  server = await startServer({
    dataDir: dir,
    port: 0,
    logLevel: 'silent',
    pool: { workers: 1, engineThreads: 1 },
    providers: { 'provider-a': { url: fake.urls.a, key: kFakeKeys.a } },
  });
  const service = server.service;
  for (const org of ['acme', 'globex']) await service.createOrganization(org);
  await service.setProxyAccess('acme', true);
  acmeKey = (await service.createApiKey('acme')).key;
  globexKey = (await service.createApiKey('globex')).key;
  projectId = (await service.createProject('acme', 'reviews')).id;
  globexProjectId = (await service.createProject('globex', 'reviews')).id;
  const body = { model: 'svc-small', task_type: 'binary-classification', finetune: false, examples: imdbExamples(0, 10) };
  classifier = (await service.train(await service.authenticate(acmeKey), body)).id;
  globexClassifier = (await service.train(await service.authenticate(globexKey), body)).id;
  await service.idle();
  browser = await launchChromium();
}, 240_000 * kLevelSlowdown);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("refuses shadows the caller may not set: another organization's classifier or project, no proxy access, a bad rule", async () => {
  const shadow = { model: kModel, classifier, label: kRule };
  expect(await api(acmeKey, 'PUT', `/${projectId}/shadow`, { ...shadow, classifier: globexClassifier })).toEqual({
    status: 404,
    body: {
      error: { message: `The model '${globexClassifier}' does not exist`, type: 'not_found_error', code: 'not_found', param: 'classifier' },
    },
  });
  const foreignProject = await api(globexKey, 'PUT', `/${projectId}/shadow`, shadow);
  expect([foreignProject.status, foreignProject.body.error.message]).toEqual([404, `The project '${projectId}' does not exist`]);
  const noProxy = await api(globexKey, 'PUT', `/${globexProjectId}/shadow`, { ...shadow, classifier: globexClassifier });
  expect([noProxy.status, noProxy.body.error.code]).toEqual([403, 'permission']);
  const badRegex = await api(acmeKey, 'PUT', `/${projectId}/shadow`, { ...shadow, label: { regex: '(' } });
  expect([badRegex.status, badRegex.body.error.param]).toEqual([400, 'label.regex']);
  const unknownField = await api(acmeKey, 'PUT', `/${projectId}/shadow`, { ...shadow, labels: kRule });
  expect(unknownField.status).toBe(400);
  expect((await api(acmeKey, 'GET', `/${projectId}/shadow`)).body).toEqual({ object: 'list', data: [] });
});

it(
  'records agreement call by call, streaming and not, with agreed null for an unreadable reply, and sums it in stats',
  { timeout: 120_000 * kLevelSlowdown },
  async () => {
    const set = await api(acmeKey, 'PUT', `/${projectId}/shadow`, { model: kModel, classifier, label: kRule });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      object: 'shadow',
      project_id: projectId,
      model: kModel,
      classifier,
      text_pointer: null,
      label: kRule,
    });
    expect((await api(acmeKey, 'GET', `/${projectId}/shadow`)).body.data).toEqual([set.body]);

    const openai = new OpenAI({ baseURL: `${server.url}/v2/${projectId}/`, apiKey: acmeKey, maxRetries: 0 });
    const texts = imdbExamples(20, 4).map((e) => e.text); // 4 positive, 4 negative reviews the classifier never saw
    const messages = (text: string) => [
      { role: 'system' as const, content: 'Is this movie review positive? Answer yes or no.' },
      { role: 'user' as const, content: text },
    ];
    const replies: string[] = [];
    for (const [i, text] of texts.entries()) {
      if (i % 2 === 0) {
        const reply = await openai.chat.completions.create({ model: kModel, messages: messages(text) });
        replies.push(reply.choices[0].message.content!);
      } else {
        const stream = await openai.chat.completions.create({ model: kModel, messages: messages(text), stream: true });
        let content = '';
        for await (const chunk of stream) content += chunk.choices[0]?.delta?.content ?? '';
        replies.push(content);
      }
    }
    expect(replies).toEqual(texts.map((t) => (truth.get(t) ? 'yes' : 'no')));
    // A reply the rule cannot read: the classifier still answers, nothing is compared.
    const garbled = `${texts[0]} [[garbage]]`;
    await openai.chat.completions.create({ model: kModel, messages: messages(garbled) });
    // Another model of the project has no shadow: no result.
    await openai.chat.completions.create({ model: 'provider-a:other', messages: messages(texts[1]) });

    const rows = await results(9);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await server.service.store.shadows.listResults(projectId, { limit: 100 })).toHaveLength(9);
    // What the classifier says of each text, asked directly.
    const principal = await server.service.authenticate(acmeKey);
    const predicted = (await server.service.predict(principal, { model: classifier, inputs: [...texts, garbled] })).predictions.map(
      (p) => (p as { label: boolean }).label,
    );
    const log = (await server.service.store.listRequestLog(projectId, { limit: 100 })).reverse();
    expect(rows.map((r) => [r.requestId, r.model, r.chatLabel, r.classifierLabel, r.agreed, r.error])).toEqual([
      ...texts.map((t, i) => [log[i].id, kModel, truth.get(t), predicted[i], truth.get(t) === predicted[i], null]),
      [log[8].id, kModel, null, predicted[8], null, null],
    ]);
    expect(rows.map((r) => [r.tokensIn, r.tokensOut, r.chatMs])).toEqual(log.slice(0, 9).map((l) => [l.tokensIn, l.tokensOut, l.totalMs]));
    for (const r of rows) expect(r.classifierMs).toBeGreaterThan(0);

    const agreed = texts.filter((t, i) => truth.get(t) === predicted[i]).length;
    const stats = await api(acmeKey, 'GET', `/${projectId}/shadow/stats?window=24h`);
    expect(stats.status).toBe(200);
    const sorted = rows.map((r) => r.classifierMs!).sort((a, b) => a - b);
    expect(stats.body).toMatchObject({
      object: 'shadow_stats',
      project_id: projectId,
      window: '24h',
      bucket: 'hour',
      calls: 9,
      compared: 8,
      agreed,
      agreement: agreed / 8,
      errors: 0,
      classifier_p50_ms: sorted[4],
      saved: {
        calls: 9,
        tokens_in: log.slice(0, 9).reduce((sum, l) => sum + l.tokensIn!, 0),
        tokens_out: log.slice(0, 9).reduce((sum, l) => sum + l.tokensOut!, 0),
      },
    });
    expect(stats.body.saved.chat_ms).toBeCloseTo(
      log.slice(0, 9).reduce((sum, l) => sum + l.totalMs, 0),
      6,
    );
    expect(stats.body.buckets.reduce((sum: number, b: { calls: number }) => sum + b.calls, 0)).toBe(9);
    const bad = await api(acmeKey, 'GET', `/${projectId}/shadow/stats?window=2d`);
    expect([bad.status, bad.body.error.param]).toEqual([400, 'window']);
    const foreign = await api(globexKey, 'GET', `/${projectId}/shadow/stats`);
    expect(foreign.status).toBe(404);
  },
);

it('shows agreement over time, the classifier latency and the savings on the project dashboard', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  await page.goto(`${server.url}/v2/${projectId}/dashboard`);
  await page.fill('#api-key', acmeKey);
  await page.click('button[type=submit]');
  await page.waitForSelector('#shadow-card:not([hidden])');
  const stats = (await api(acmeKey, 'GET', `/${projectId}/shadow/stats?window=24h`)).body;
  expect(await page.textContent('#shadow-agreement')).toBe(`${(stats.agreement * 100).toFixed(1)}% agreement`);
  expect(await page.textContent('#shadow-agreement-note')).toBe(`${stats.agreed} of 8 calls compared agreed (9 shadowed, 0 unanswered)`);
  expect(await page.textContent('#shadow-latency')).toBe(`${stats.classifier_p50_ms.toFixed(1)} ms`);
  expect(await page.textContent('#shadow-saved')).toBe(`${stats.saved.tokens_in + stats.saved.tokens_out} tokens`);
  expect(await page.$$eval('#chart-agreement circle', (c) => c.length)).toBe(stats.buckets.length);
  expect(await page.textContent('#chart-agreement .y-title')).toBe('agreement (%) per hour');
  // A share: the axis runs from 0 to 100 whatever the agreement.
  expect(await page.$$eval('#chart-agreement .y-tick', (ticks) => ticks.map((t) => t.textContent))).toEqual(['0', '50', '100']);
  await page.selectOption('#shadow-window', '7d');
  await expect.poll(() => page.textContent('#chart-agreement .y-title')).toBe('agreement (%) per day');
  expect(await page.$$eval('#chart-agreement circle', (c) => c.length)).toBe(1);
  expect(violations).toEqual([]);
  const shots = join(process.cwd(), 'tmp');
  mkdirSync(shots, { recursive: true });
  await page.locator('#shadow-card').screenshot({ path: join(shots, 'dashboard-shadow.png') });
  await page.close();
});

it(
  'svc shadow sets, lists and sums through the same routes, and refuses a wrong command line',
  { timeout: 60_000 * kLevelSlowdown },
  async () => {
    const env = { SVC_URL: server.url, SVC_KEY: acmeKey };
    const listed = await svc(['shadow', 'list', '--project', projectId], env);
    expect([listed.code, JSON.parse(listed.stdout).data.map((s: { classifier: string }) => s.classifier)]).toEqual([0, [classifier]]);
    const stats = await svc(['shadow', 'stats', '--project', projectId, '--window', '24h'], env);
    expect([stats.code, JSON.parse(stats.stdout).calls, JSON.parse(stats.stdout).bucket]).toEqual([0, 9, 'hour']);
    const twoRules = await svc(
      [
        'shadow',
        'set',
        '--project',
        projectId,
        '--model',
        kModel,
        '--classifier',
        classifier,
        '--label-pointer',
        '/label',
        '--label-regex',
        'yes',
      ],
      env,
    );
    expect([twoRules.code, twoRules.stderr.split('\n')[0]]).toEqual([
      2,
      'svc shadow: give exactly one of --label-pointer, --label-regex, --label-words (got 2)',
    ]);
    const set = await svc(
      [
        'shadow',
        'set',
        '--project',
        projectId,
        '--model',
        kModel,
        '--classifier',
        classifier,
        '--label-regex',
        '^(yes|no)',
        '--label-flags',
        'i',
      ],
      env,
    );
    expect([set.code, JSON.parse(set.stdout).label]).toEqual([0, { regex: '^(yes|no)', flags: 'i' }]);
  },
);

it('keeps answering calls once the classifier is deleted, and records why it could not compare', async () => {
  const principal = await server.service.authenticate(acmeKey);
  await server.service.deleteModel(principal, classifier);
  const openai = new OpenAI({ baseURL: `${server.url}/v2/${projectId}/`, apiKey: acmeKey, maxRetries: 0 });
  const reply = await openai.chat.completions.create({ model: kModel, messages: [{ role: 'user', content: imdbExamples(30, 1)[0].text }] });
  expect(reply.choices[0].message.content).toBe('yes');
  const rows = await results(10);
  expect([rows[9].classifierLabel, rows[9].agreed, rows[9].error]).toEqual([null, null, `The model '${classifier}' does not exist`]);
  const stats = (await api(acmeKey, 'GET', `/${projectId}/shadow/stats?window=1h`)).body;
  expect([stats.calls, stats.errors, stats.saved.calls]).toEqual([10, 1, 9]);
  const removed = await api(acmeKey, 'DELETE', `/${projectId}/shadow?model=${encodeURIComponent(kModel)}`);
  expect(removed).toEqual({ status: 200, body: { object: 'shadow', model: kModel, deleted: true } });
  expect((await api(acmeKey, 'DELETE', `/${projectId}/shadow?model=${encodeURIComponent(kModel)}`)).status).toBe(404);
});
