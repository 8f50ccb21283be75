// Predictions first, training fairly, on a real server over a real SQLite file with the real
// library training: the job queue takes turns by organization within each one's caps, the
// queue cap answers 429, predictions finish while jobs train, and a full predict queue
// answers 503 at once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { type RunningServer, type ServerOptions, startServer } from '../../src/server/app.js';
import { kLevelSlowdown } from '../_support/level.js';

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive review',
}));
const texts = imdb.slice(200, 208).map((r) => r.text);
const frozen = { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false };
const finetuned = (iterations: number) => ({ ...frozen, finetune: true, num_iterations: iterations });

interface Reply {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
}

/** One running server with organizations and their keys; `call` speaks plain HTTP to it. */
function serve(options: Pick<ServerOptions, 'pool' | 'predictQueue'>, orgs: readonly string[]) {
  const state = { dir: '', server: undefined as RunningServer | undefined, keys: {} as Record<string, string> };
  beforeAll(async () => {
    state.dir = mkdtempSync(join(tmpdir(), 'svc-fairness-'));
    state.server = await startServer({ dataDir: state.dir, port: 0, ...options });
    for (const org of orgs) {
      await state.server.service.createOrganization(org);
      // The tests poll every 50 ms, far above the default requests per minute: that limit is not what they test.
      await state.server.service.setOrgLimits(org, { requestsPerMinute: 1_000_000 });
      state.keys[org] = (await state.server.service.createApiKey(org)).key;
    }
  });
  afterAll(async () => {
    await state.server?.close();
    rmSync(state.dir, { recursive: true, force: true });
  });
  const call = async (org: string, method: string, path: string, body?: unknown): Promise<Reply> => {
    const response = await fetch(state.server!.url + path, {
      method,
      headers: { authorization: `Bearer ${state.keys[org]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      body: (await response.json()) as Record<string, unknown>,
    };
  };
  const until = async (what: () => Promise<boolean>): Promise<void> => {
    for (let i = 0; i < 3000 * kLevelSlowdown && !(await what()); i += 1) await new Promise((r) => setTimeout(r, 50));
  };
  const status = async (org: string, id: string) => (await call(org, 'GET', `/v2/models/${id}`)).body.status;
  const finetuning = async (org: string, id: string) => {
    const progress = (await call(org, 'GET', `/v2/models/${id}/progress`)).body;
    return progress.stage === 'finetune' && (progress.done as number) >= 1;
  };
  return { state, call, until, status, finetuning };
}

describe('two workers: the queue takes turns, predictions keep a worker', () => {
  const { state, call, until, status, finetuning } = serve({ pool: { workers: 2, engineThreads: 1 } }, ['a', 'b', 'c']);

  it(
    "queues 10 jobs per organization, answers the 11th with 429, and org B's ten queued jobs do not delay org A's first",
    async () => {
      const first = await call('b', 'POST', '/v2/train', finetuned(4));
      expect(first.status).toBe(200);
      await until(() => finetuning('b', first.body.id as string));
      const queued: string[] = [];
      for (let i = 0; i < 10; i += 1) queued.push((await call('b', 'POST', '/v2/train', frozen)).body.id as string);
      const over = await call('b', 'POST', '/v2/train', frozen);
      expect(over).toEqual({
        status: 429,
        retryAfter: '30',
        body: {
          error: {
            message: "The organization 'b' has 10 training jobs queued, the most it may queue (10); retry when one has started",
            type: 'rate_limit_error',
            param: null,
            code: 'rate_limited',
          },
        },
      });
      const mine = await call('a', 'POST', '/v2/train', frozen);
      expect(mine.status).toBe(200);
      await until(async () => (await status('a', mine.body.id as string)) !== 'training');
      expect(await status('a', mine.body.id as string)).toBe('trained');
      // A's job ran beside B's running one (their tasks take turns in the training share): none of B's queued jobs
      // had finished.
      const store = state.server!.service.store;
      const states = await Promise.all(queued.map(async (id) => (await store.getJob(id))?.state));
      expect(states.filter((s) => s === 'done')).toEqual([]);
      for (const id of queued) expect((await call('b', 'DELETE', `/v2/models/${id}`)).status).toBe(200);
    },
    300_000 * kLevelSlowdown,
  );

  it(
    'answers predictions while two fine-tuning jobs train',
    async () => {
      const model = (await call('a', 'GET', '/v2/models')).body.data as { id: string }[];
      await state.server!.service.setOrgLimits('c', { maxRunningJobs: 2 });
      const jobs = [
        (await call('c', 'POST', '/v2/train', finetuned(8))).body.id as string,
        (await call('c', 'POST', '/v2/train', finetuned(2))).body.id as string,
      ];
      const events: string[] = [];
      const watch = Promise.all(
        jobs.map(async (id, i) => {
          await until(async () => (await status('c', id)) !== 'training');
          events.push(`job ${i + 1} ${await status('c', id)}`);
        }),
      );
      await until(() => finetuning('c', jobs[0]));
      const replies = await Promise.all(
        Array.from({ length: 10 }, () => call('a', 'POST', '/v2/predict', { model: model[0].id, inputs: texts })),
      );
      events.push('10 predictions answered');
      expect(replies.map((r) => [r.status, (r.body.predictions as unknown[]).length])).toEqual(Array(10).fill([200, 8]));
      await watch;
      // Job 1 (8 rounds, already fine-tuning when the predictions were sent) was still training when they were all
      // answered. Job 2 (2 rounds) only keeps the second worker busy: on slow kernels it may finish first.
      expect(events.filter((event) => event !== 'job 2 trained')).toEqual(['10 predictions answered', 'job 1 trained']);
      expect(events).toContain('job 2 trained');
    },
    300_000 * kLevelSlowdown,
  );
});

describe('one worker busy training: the predict queue is bounded', () => {
  const { call, until, status, finetuning } = serve(
    { pool: { workers: 1, engineThreads: 1 }, predictQueue: { maxWaitingTexts: 8, deadlineMs: 1500 } },
    ['a'],
  );

  it(
    'answers 503 overloaded with retry-after at once beyond the queue limit, and after the deadline',
    async () => {
      const model = (await call('a', 'POST', '/v2/train', frozen)).body.id as string;
      await until(async () => (await status('a', model)) !== 'training');
      const job = (await call('a', 'POST', '/v2/train', finetuned(8))).body.id as string;
      await until(() => finetuning('a', job));
      const waiting = call('a', 'POST', '/v2/predict', { model, inputs: texts });
      await new Promise((r) => setTimeout(r, 200));
      const refused = await call('a', 'POST', '/v2/predict', { model, inputs: texts });
      const overloaded = (message: string) => ({
        status: 503,
        retryAfter: '2',
        body: { error: { message, type: 'overloaded_error', param: null, code: 'overloaded' } },
      });
      expect(refused).toEqual(
        overloaded('The service is overloaded: 8 texts are waiting for a worker and the queue holds 8; retry in 2 seconds'),
      );
      expect(await waiting).toEqual(
        overloaded('The service is overloaded: the prediction waited 1500 ms for a worker; retry in 2 seconds'),
      );
      // Both answered while the job still trained.
      expect(await status('a', job)).toBe('training');
    },
    300_000 * kLevelSlowdown,
  );
});
