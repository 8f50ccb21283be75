// Training with a teacher through a real server: the fake provider labels texts in each provider's own format, the
// job keeps every answer it bought, and the model reports what was labelled, skipped and spent.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type FakeProvider, kFakeKeys, startFakeProvider } from '../../fixtures/fake-provider.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { proxyRoutes } from '../../src/server/proxy-routes.js';

const kBilling = ['charged twice', 'refund my card', 'invoice is wrong', 'billing address', 'payment failed', 'price on my bill'];
const kOther = ['parcel is late', 'reset my password', 'app crashes', 'change my email', 'delivery address', 'login fails'];
/** 60 texts: half about billing (the true label), each one distinct. */
const kTexts = Array.from({ length: 60 }, (_, i) => {
  const topic = i % 2 === 0 ? kBilling[(i / 2) % kBilling.length] : kOther[((i - 1) / 2) % kOther.length];
  return `Ticket ${i}: my ${topic}, please help`;
});
const isBilling = (text: string) => kBilling.some((topic) => text.includes(topic));

let dir: string;
let fake: FakeProvider;
let server: RunningServer;
let key: string;
let projectId: string;

function providers(f: FakeProvider) {
  return {
    'provider-a': { url: f.urls.a, key: kFakeKeys.a },
    'provider-b': { url: f.urls.b, key: kFakeKeys.b },
    'provider-c': { url: f.urls.c, key: kFakeKeys.c },
  };
}

async function start(): Promise<RunningServer> {
  return startServer({ dataDir: dir, port: 0, proxy: proxyRoutes, proxyOptions: { providers: providers(fake), env: {} } });
}

async function api(path: string, init: { method?: string; body?: unknown; as?: string } = {}) {
  const response = await fetch(`${server.url}/v2${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { authorization: `Bearer ${init.as ?? key}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function settled(id: string): Promise<Record<string, any>> {
  for (let i = 0; i < 600; i++) {
    const { body } = await api(`/models/${id}`);
    if (body.status !== 'training') return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${id} still training`);
}

function teacherBody(teacher: Record<string, unknown>, texts: string[] = kTexts, extra: Record<string, unknown> = {}) {
  return {
    model: 'svc-small',
    task_type: 'binary-classification',
    label_text: 'billing question',
    texts,
    teacher: { project_id: projectId, texts_per_call: 10, ...teacher },
    finetune: false,
    ...extra,
  };
}

/** How many labelling calls the fake got for a model name, and how often each text was asked. */
function labellingCalls(model: string): { calls: number; asked: Map<string, number> } {
  const asked = new Map<string, number>();
  let calls = 0;
  for (const request of fake.requests) {
    if (request.body.model !== model) continue;
    calls += 1;
    const messages = request.body.messages as { role: string; content: string }[];
    const user = messages.find((m) => m.role === 'user')!.content;
    for (const { text } of (JSON.parse(user) as { texts: { text: string }[] }).texts) asked.set(text, (asked.get(text) ?? 0) + 1);
  }
  return { calls, asked };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-teacher-'));
  fake = await startFakeProvider({ teacher: { labelOf: isBilling, errorRate: 0.1, seed: 7 } });
  server = await start();
  await server.service.createOrganization('acme');
  await server.service.setProxyAccess('acme', true);
  key = (await server.service.createApiKey('acme')).key;
  projectId = (await server.service.createProject('acme', 'support')).id;
}, 60_000);

afterAll(async () => {
  await server?.close();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('POST /v2/train with a teacher', () => {
  it.each([
    ['provider-a', 'gpt-teach-a'],
    ['provider-b', 'mistral-teach-b'],
    ['provider-c', 'claude-teach-c'],
  ])(
    'labels every text through %s, logs each call, and reports agreement',
    async (provider, name) => {
      const created = await api('/train', { body: teacherBody({ model: `${provider}:${name}` }) });
      expect(created.status).toBe(200);
      expect(created.body.status).toBe('training');
      expect(created.body.training_data).toMatchObject({ source: 'teacher', texts: 60, labelled: 0 });
      const model = await settled(created.body.id);
      expect(model.status).toBe('trained');
      expect(model.training_data).toMatchObject({
        source: 'teacher',
        texts: 60,
        labelled: 60,
        held_out: 12,
        skipped: 0,
        teacher: { model: `${provider}:${name}`, project_id: projectId, calls: 6 },
      });
      expect(model.training_data.teacher.tokens_in).toBeGreaterThan(0);
      expect(model.training_data.teacher.tokens_out).toBeGreaterThan(0);
      // Six calls of ten texts: each text asked once.
      const { calls, asked } = labellingCalls(name);
      expect(calls).toBe(6);
      expect([...asked.values()].every((n) => n === 1)).toBe(true);
      expect(asked.size).toBe(60);
      // Each call is on the project's log, as a client's call would be.
      const log = await api(`/${projectId}/requests?limit=100`);
      expect(log.body.data.filter((row: { model: string }) => row.model === `${provider}:${name}`)).toHaveLength(6);
      // Agreement with the teacher on the held-out share is the evaluation report.
      const evaluation = await api(`/models/${created.body.id}/evaluation`);
      expect(evaluation.status).toBe(200);
      expect(evaluation.body).toMatchObject({ object: 'model.evaluation', source: 'validation', examples: 12 });
      expect(evaluation.body.confusion_matrix).toHaveLength(2);
      // What a text costs the classifier, beside the teacher's ms_per_text.
      expect(evaluation.body.ms_per_text).toBeGreaterThan(0);
    },
    120_000,
  );

  it('records refused and out-of-schema texts, never guesses them, and retries a 429', async () => {
    const texts = kTexts.map((text, i) =>
      i === 3 ? `${text} [[refuse]]` : i === 17 ? `${text} [[outside]]` : i === 25 ? `${text} [[fail-429x2]]` : text,
    );
    const created = await api('/train', { body: teacherBody({ model: 'provider-a:gpt-faults', texts_per_call: 5 }, texts) });
    const model = await settled(created.body.id);
    expect(model.status).toBe('trained');
    // The refusal takes its whole call (5 texts); the label outside the set only its own text.
    expect(model.training_data).toMatchObject({ labelled: 54, skipped: 6 });
    const reasons = model.training_data.skipped_samples.map((s: { index: number; reason: string }) => [s.index, s.reason.split(':')[0]]);
    expect(reasons).toEqual([
      [0, 'refused'],
      [1, 'refused'],
      [2, 'refused'],
      [3, 'refused'],
      [4, 'refused'],
      [17, 'invalid'],
    ]);
    // Twelve calls answered; the 429s were retried (two more calls) and are not counted as answers.
    expect(model.training_data.teacher.calls).toBe(12);
    expect(labellingCalls('gpt-faults').calls).toBe(14);
  }, 120_000);

  it.each(['uncertain', 'random'])(
    'labels only the budget of texts with select %s',
    async (strategy) => {
      const name = `gpt-select-${strategy}`;
      const created = await api('/train', {
        body: teacherBody({ model: `provider-a:${name}` }, kTexts, { select: { budget: 24, strategy } }),
      });
      const model = await settled(created.body.id);
      expect(model.status).toBe('trained');
      expect(model.training_data).toMatchObject({ texts: 60, labelled: 24, skipped: 0 });
      const { asked } = labellingCalls(name);
      expect(asked.size).toBe(24);
      expect([...asked.values()].every((n) => n === 1)).toBe(true);
    },
    120_000,
  );

  it("refuses a teacher without proxy access (403) and another organization's project (404)", async () => {
    await server.service.createOrganization('globex');
    const globexKey = (await server.service.createApiKey('globex')).key;
    const globexProject = (await server.service.createProject('globex', 'x')).id;
    const noAccess = await api('/train', {
      as: globexKey,
      body: { ...teacherBody({ model: 'provider-a:gpt-x' }), teacher: { model: 'provider-a:gpt-x', project_id: globexProject } },
    });
    expect(noAccess.status).toBe(403);
    expect(noAccess.body.error.message).toBe("The organization 'globex' has no proxy access; request access from the operator");
    const elsewhere = await api('/train', {
      body: { ...teacherBody({ model: 'provider-a:gpt-x' }), teacher: { model: 'provider-a:gpt-x', project_id: globexProject } },
    });
    expect(elsewhere.status).toBe(404);
    const badTeacher = await api('/train', { body: teacherBody({ model: 'gpt-x' }) });
    expect(badTeacher.status).toBe(400);
    expect(badTeacher.body.error.param).toBe('teacher.model');
  });

  it('stops labelling when the project budget runs out, and says so', async () => {
    const project = await server.service.createProject('acme', 'small budget');
    await server.service.setProjectBudget(project.id, 3_000);
    const created = await api('/train', {
      body: {
        ...teacherBody({ model: 'provider-a:gpt-budget' }),
        teacher: { model: 'provider-a:gpt-budget', project_id: project.id, texts_per_call: 10, concurrency: 1 },
      },
    });
    const model = await settled(created.body.id);
    expect(model.training_data.teacher.stopped).toMatch(/^The project '.*' has used \d+ of its 3000 proxy tokens/);
    expect(model.training_data.labelled).toBeLessThan(60);
    if (model.status === 'failed') expect(model.error).toMatch(/^the teacher labelled \d+ texts .*too few to train/);
  }, 120_000);

  it('keeps what it bought across a restart: a rerun asks only for texts never answered', async () => {
    const created = await api('/train', {
      body: {
        ...teacherBody({ model: 'provider-a:slow-150' }),
        teacher: { model: 'provider-a:slow-150', project_id: projectId, texts_per_call: 5, concurrency: 1 },
      },
    });
    // Wait for a few calls to land, then stop the service mid-labelling and start it again on the same data.
    for (let i = 0; i < 100; i++) {
      const { body } = await api(`/models/${created.body.id}`);
      if (body.training_data.labelled >= 15) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await server.close();
    server = await start();
    const model = await settled(created.body.id);
    expect(model.status).toBe('trained');
    expect(model.training_data.labelled).toBe(60);
    const { asked } = labellingCalls('slow-150');
    expect(asked.size).toBe(60);
    // Only the call cut by the shutdown (at most its 5 texts) was asked again.
    expect([...asked.values()].filter((n) => n > 1).length).toBeLessThanOrEqual(5);
  }, 120_000);
});
