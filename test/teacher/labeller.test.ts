// The labeller over real HTTP to the fake provider (the library's direct transport): calls of a few texts, a bounded
// number in flight, retries of 429 / 5xx with backoff until the tries run out, and a stop on what no retry can fix.
import { afterAll, beforeAll, expect, it } from 'vitest';

import { type FakeProvider, kFakeKeys, startFakeProvider } from '../../fixtures/fake-provider.js';
import { directTeacherTransport } from '../../src/teacher/direct-transport.js';
import { type TeacherAnswer, labelTexts, type TeacherTransport } from '../../src/teacher/labeller.js';

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider({ teacher: { labelOf: (text) => text.includes('bill') } });
});
afterAll(async () => fake?.close());

const task = { taskType: 'binary-classification' as const, labels: ['billing'] };
const texts = Array.from({ length: 23 }, (_, i) => ({ position: i, text: i % 3 === 0 ? `my bill ${i}` : `my parcel ${i}` }));
const transportTo = (model: string): TeacherTransport =>
  directTeacherTransport(`provider-a:${model}`, { url: fake.urls.a, key: kFakeKeys.a });

it('labels in calls of textsPerCall, at most concurrency in flight, each answer handed over as it arrives', async () => {
  const send = transportTo('gpt-calls');
  let inFlight = 0;
  let most = 0;
  const counted: TeacherTransport = async (body, signal) => {
    most = Math.max(most, ++inFlight);
    try {
      return await send(body, signal);
    } finally {
      inFlight -= 1;
    }
  };
  const batches: TeacherAnswer[][] = [];
  const result = await labelTexts({
    teacher: 'provider-a:gpt-calls',
    task,
    texts,
    textsPerCall: 5,
    concurrency: 2,
    transport: counted,
    onAnswers: async (answers) => void batches.push(answers),
  });
  expect(result).toEqual({ calls: 5, stopped: null });
  expect(most).toBe(2);
  expect(batches.map((b) => b.length).sort()).toEqual([3, 5, 5, 5, 5]);
  const answers = batches.flat().sort((a, b) => a.position - b.position);
  expect(answers.map((a) => a.label)).toEqual(texts.map((t) => t.text.includes('bill')));
  expect(answers.every((a) => a.outcome === 'labelled' && a.tokensIn > 0 && a.tokensOut > 0)).toBe(true);
});

it('retries a provider that keeps failing, then stops with what it has and says why', async () => {
  const result = await labelTexts({
    teacher: 'provider-a:fail-500',
    task,
    texts: texts.slice(0, 4),
    textsPerCall: 4,
    concurrency: 1,
    transport: transportTo('fail-500'),
    onAnswers: async () => {
      throw new Error('no answer expected');
    },
    attempts: 3,
    backoffMs: 1,
  });
  expect(result).toEqual({ calls: 3, stopped: 'provider-a:fail-500 gave 500 3 times in a row; labelling stopped' });
  expect(fake.requests.filter((r) => r.body.model === 'fail-500')).toHaveLength(3);
});

it('waits out a 429 and succeeds on the retry', async () => {
  const answers: TeacherAnswer[] = [];
  const result = await labelTexts({
    teacher: 'provider-a:gpt-429',
    task,
    texts: [{ position: 0, text: 'my bill [[fail-429x1]]' }],
    textsPerCall: 1,
    concurrency: 1,
    transport: transportTo('gpt-429'),
    onAnswers: async (batch) => void answers.push(...batch),
    backoffMs: 1,
  });
  expect(result).toEqual({ calls: 2, stopped: null });
  expect(answers.map((a) => [a.outcome, a.label])).toEqual([['labelled', true]]);
});

it('stops at once on an answer no retry can fix, and on a transport that says stop', async () => {
  const wrongKey = directTeacherTransport('provider-a:gpt-key', { url: fake.urls.a, key: 'sk-wrong' });
  const refused = await labelTexts({
    teacher: 'provider-a:gpt-key',
    task,
    texts,
    textsPerCall: 5,
    concurrency: 1,
    transport: wrongKey,
    onAnswers: async () => {},
  });
  expect(refused.calls).toBe(1);
  expect(refused.stopped).toMatch(/^provider-a:gpt-key answered 401: /);
  const spent: TeacherTransport = async () => ({
    status: 403,
    body: '',
    tokensIn: null,
    tokensOut: null,
    ms: 0,
    retryAfterMs: null,
    stop: 'the budget is spent',
  });
  const stopped = await labelTexts({
    teacher: 'provider-a:gpt-x',
    task,
    texts,
    textsPerCall: 5,
    concurrency: 3,
    transport: spent,
    onAnswers: async () => {},
  });
  expect(stopped.stopped).toBe('the budget is spent');
  expect(stopped.calls).toBeLessThanOrEqual(3);
});
