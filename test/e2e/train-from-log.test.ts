// Training from the request log end to end: a real server with the proxy routes and the library runtime, chat calls
// made through the official OpenAI SDK (streamed and not) to the fake provider in teacher mode, which answers each
// review 'yes' or 'no' from a known labelling; then POST /v2/train with from_log trains a classifier on those logged
// answers that reaches `trained`, whose evaluation report is its agreement with the chat model on the held-out calls.
// Faults: a query that matches nothing, a label pointer no reply has, another organization's project.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Anthropic from '@anthropic-ai/sdk';
import { Mistral } from '@mistralai/mistralai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type FakeProvider, kFakeKeys, startFakeProvider } from '../../fixtures/fake-provider.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { proxyRoutes } from '../../src/server/proxy-routes.js';
import { callLabel, callText, replyText } from '../../src/teacher/logged-calls.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-train-from-log-'));
const system = 'Is this movie review positive? Answer yes or no.';
// 20 positive and 20 negative IMDB sentences: the chat model's answers are their true labels.
const reviews = imdbExamples(0, 20);
const truth = new Map(reviews.map((r) => [r.text, r.label]));
const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

let fake: FakeProvider;
let server: RunningServer;
let key: string;
let projectId: string;
let globexProject: string;
const logged: number[] = [];

const call = async (method: string, path: string, body?: unknown) => {
  const { status, text } = await httpCall(server.url, method, path, key, body);
  return { status, body: JSON.parse(text) as Record<string, any> };
};

beforeAll(async () => {
  fake = await startFakeProvider({ teacher: { labelOf: (text) => truth.get(text) ?? false } });
  server = await startServer({
    dataDir: dir,
    port: 0,
    logLevel: 'silent',
    pool: { workers: 1, engineThreads: 1 },
    proxy: proxyRoutes,
    proxyOptions: {
      providers: {
        'provider-a': { url: fake.urls.a, key: kFakeKeys.a },
        'provider-b': { url: fake.urls.b, key: kFakeKeys.b },
        'provider-c': { url: fake.urls.c, key: kFakeKeys.c },
      },
      env: {},
    },
  });
  const { service } = server;
  await service.createOrganization('acme');
  await service.setProxyAccess('acme', true);
  key = (await service.createApiKey('acme')).key;
  projectId = (await service.createProject('acme', 'reviews')).id;
  await service.createOrganization('globex');
  globexProject = (await service.createProject('globex', 'theirs')).id;

  const openai = new OpenAI({ baseURL: `${server.url}/v2/${projectId}/`, apiKey: key, maxRetries: 0 });
  // Every other call streamed; one more whose reply is not a label (the fake answers it with broken JSON).
  for (const [i, text] of [...reviews.map((r) => r.text), 'a review [[garbage]]'].entries()) {
    const messages = [
      { role: 'system' as const, content: system },
      { role: 'user' as const, content: text },
    ];
    if (i % 2 === 0) {
      const completion = await openai.chat.completions.create({ model: 'provider-a:gpt-4o-mini', messages });
      if (truth.has(text)) expect(completion.choices[0].message.content).toBe(truth.get(text) ? 'yes' : 'no');
    } else {
      const stream = await openai.chat.completions.create({
        model: 'provider-a:gpt-4o-mini',
        messages,
        stream: true,
        stream_options: { include_usage: true },
      });
      let reply = '';
      for await (const chunk of stream) reply += chunk.choices[0]?.delta.content ?? '';
      if (truth.has(text)) expect(reply).toBe(truth.get(text) ? 'yes' : 'no');
    }
  }
  // The log is written just after each response: wait for all 41 rows.
  for (let i = 0; i < 200 && logged.length < 41; i++) {
    const rows = await service.store.listRequestLog(projectId, { limit: 100 });
    if (rows.length === 41) logged.push(...rows.map((r) => r.id).reverse());
    else await new Promise((resolve) => setTimeout(resolve, 10));
  }
}, 120_000);
afterAll(async () => {
  await server?.close();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

const trainBody = (fromLog: Record<string, unknown>) => ({
  model: 'svc-small',
  task_type: 'binary-classification',
  label_text: 'positive',
  finetune: false,
  holdout: 0.25,
  from_log: { project_id: projectId, model: 'provider-a:gpt-4o-mini', label: { regex: '^(yes|no)$' }, ...fromLog },
});

describe('POST /v2/train with from_log', () => {
  it(
    'trains on the logged answers to trained, and reports its agreement with the chat model on the held-out calls',
    { timeout: 180_000 * kLevelSlowdown },
    async () => {
      expect(logged.length).toBe(41);
      const started = await call('POST', '/v2/train', trainBody({}));
      expect(started.status).toBe(200);
      expect(started.body.status).toBe('training');
      const id = started.body.id as string;
      let model: Record<string, any> = started.body;
      for (let i = 0; i < 1200 * kLevelSlowdown && model.status === 'training'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        model = (await call('GET', `/v2/models/${id}`)).body;
      }
      expect(model.status).toBe('trained');
      // Prompt tokens: the fake counts the words of every message; each answer is one word.
      const tokensIn = reviews.reduce((sum, r) => sum + words(system) + words(r.text), 0);
      expect(model.training_data).toEqual({
        source: 'request_log',
        texts: 41,
        labelled: 40,
        held_out: 10,
        skipped: 1,
        skipped_samples: [
          {
            request_id: logged[40],
            reason:
              'label.regex gives no label of the task in the reply "{\\"labels\\": [{\\"index\\": 0, \\"label\\": ??? the rest is lost"',
          },
        ],
        teacher: {
          model: 'provider-a:gpt-4o-mini',
          project_id: projectId,
          calls: 40,
          tokens_in: tokensIn,
          tokens_out: 40,
          ms_per_text: expect.any(Number),
        },
      });
      expect(model.training_data.teacher.ms_per_text).toBeGreaterThan(0);

      // The report is on the 10 held-out calls, with the chat model's answers as the truth: its accuracy is the
      // share of them the classifier answers as the chat model did.
      const report = (await call('GET', `/v2/models/${id}/evaluation`)).body;
      expect(report).toMatchObject({ object: 'model.evaluation', source: 'validation', examples: 10, labels: ['true', 'false'] });
      const held = (await server.service.store.getJob(id))!.options.validation as { text: string; label: boolean }[];
      expect(held.map((e) => e.label === truth.get(e.text))).toEqual(Array(10).fill(true));
      expect(held.filter((e) => e.label).length).toBe(5);
      const predicted = (await call('POST', '/v2/predict', { model: id, inputs: held.map((e) => e.text) })).body.predictions as {
        label: boolean;
      }[];
      const agreed = predicted.filter((p, i) => p.label === held[i].label).length;
      expect(report.accuracy).toBeCloseTo(agreed / 10, 10);
      expect(report.confusion_matrix.flat().reduce((a: number, b: number) => a + b, 0)).toBe(10);
      expect(report.per_label.map((l: { label: string; support: number }) => [l.label, l.support])).toEqual([
        ['true', 5],
        ['false', 5],
      ]);
    },
  );

  it('refuses a log query that matches nothing, naming what it asked for', async () => {
    const answer = await call('POST', '/v2/train', trainBody({ model: 'provider-a:gpt-4o' }));
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      code: 'invalid_request',
      param: 'from_log',
      message: `No successful call in the request log matched (project '${projectId}', model 'provider-a:gpt-4o')`,
    });
  });

  it('refuses a label pointer that no reply has: every call skipped, and the pointer named', async () => {
    const answer = await call('POST', '/v2/train', trainBody({ label: { pointer: '/label' } }));
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toBe(
      `None of the 41 calls that matched in the request log (project '${projectId}', model 'provider-a:gpt-4o-mini') gave a labelled ` +
        "example; skipped 41: no label of the task at label.pointer '/label'",
    );
  });

  it("answers 404 for another organization's project, as for one that does not exist", async () => {
    const theirs = await call('POST', '/v2/train', trainBody({ project_id: globexProject }));
    const none = await call('POST', '/v2/train', trainBody({ project_id: 'proj_nosuchproject' }));
    expect([theirs.status, none.status]).toEqual([404, 404]);
    expect(theirs.body.error).toMatchObject({ code: 'not_found', message: `The project '${globexProject}' does not exist` });
  });
});

describe('logged calls of the other providers', () => {
  it('reads the text and label of every Mistral and Anthropic SDK call as the proxy logged it, streamed and not', async () => {
    const project = (await server.service.createProject('acme', 'other-providers')).id;
    const base = `${server.url}/v2/${project}/`;
    const mistral = new Mistral({ serverURL: base, apiKey: key, retryConfig: { strategy: 'none' } });
    const anthropic = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
    const texts = reviews.slice(18, 22).map((r) => r.text);
    const user = (text: string) => [{ role: 'user' as const, content: text }];
    await mistral.chat.complete({ model: 'provider-b:mistral-small', messages: [{ role: 'system', content: system }, ...user(texts[0])] });
    for await (const event of await mistral.chat.stream({ model: 'provider-b:mistral-small', messages: user(texts[1]) })) void event;
    await anthropic.messages.create({ model: 'provider-c:claude-haiku', max_tokens: 5, system, messages: user(texts[2]) });
    const stream = await anthropic.messages.create({
      model: 'provider-c:claude-haiku',
      max_tokens: 5,
      system,
      messages: user(texts[3]),
      stream: true,
    });
    for await (const event of stream) void event;
    let rows = await server.service.store.readRequestLogRange(project, { limit: 10 });
    for (let i = 0; i < 200 && rows.length < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      rows = await server.service.store.readRequestLogRange(project, { limit: 10 });
    }
    const task = { taskType: 'binary-classification' as const, labels: ['positive'] };
    const read = rows.map((row) => {
      const reply = replyText(row.provider, row.responseBody);
      return [row.provider, row.stream, callText(row.requestBody), reply, callLabel(reply!, { regex: '^(yes|no)$' }, task)];
    });
    const answer = (text: string) => (truth.get(text) ? 'yes' : 'no');
    expect(read).toEqual([
      ['provider-b', false, texts[0], answer(texts[0]), truth.get(texts[0])],
      ['provider-b', true, texts[1], answer(texts[1]), truth.get(texts[1])],
      ['provider-c', false, texts[2], answer(texts[2]), truth.get(texts[2])],
      ['provider-c', true, texts[3], answer(texts[3]), truth.get(texts[3])],
    ]);
    // Both labels are among them, so the check reads a 'yes' and a 'no'.
    expect(new Set(texts.map((text) => truth.get(text)))).toEqual(new Set([true, false]));
  });
});
