// train() with texts and a teacher, in the library: the chat model (the fake provider's teacher mode, over real HTTP)
// labels the texts, called straight with the provider settings given, and the classifier trains on its labels.
import { afterAll, beforeAll, expect, it } from 'vitest';

import { type FakeProvider, kFakeKeys, startFakeProvider } from '../../fixtures/fake-provider.js';
import { labelWithTeacher, train } from '../../src/index.js';

const kBilling = ['charged twice', 'refund my card', 'invoice is wrong', 'billing address', 'payment failed'];
const kOther = ['parcel is late', 'reset my password', 'app crashes', 'change my email', 'login fails'];
const kTexts = Array.from({ length: 40 }, (_, i) =>
  i % 2 === 0 ? `Note ${i}: my ${kBilling[(i / 2) % 5]} today` : `Note ${i}: my ${kOther[((i - 1) / 2) % 5]} today`,
);
const isBilling = (text: string) => kBilling.some((topic) => text.includes(topic));

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider({ teacher: { labelOf: isBilling } });
});
afterAll(async () => fake?.close());

const request = (model: string) => ({
  model: 'svc-small',
  task_type: 'binary-classification' as const,
  label_text: 'billing question',
  texts: kTexts,
  teacher: { model, texts_per_call: 8 },
  finetune: false,
});

it('labelWithTeacher calls the provider itself and returns the train request and its report', async () => {
  const providers = { 'provider-c': { url: fake.urls.c, key: kFakeKeys.c } };
  const { request: made, report } = await labelWithTeacher(request('provider-c:claude-lib'), { providers, env: {} });
  expect(made.task_type).toBe('binary-classification');
  expect(made.examples).toHaveLength(32);
  expect(made.validation).toHaveLength(8);
  // The noise-free fake: every label is the true one.
  for (const example of [...made.examples, ...made.validation!] as { text: string; label: boolean }[]) {
    expect(example.label).toBe(isBilling(example.text));
  }
  expect(report).toMatchObject({
    source: 'teacher',
    texts: 40,
    labelled: 40,
    held_out: 8,
    skipped: 0,
    teacher: { model: 'provider-c:claude-lib', calls: 5 },
  });
  expect(report.teacher!.project_id).toBeUndefined();
  expect(fake.requests.filter((r) => r.body.model === 'claude-lib')).toHaveLength(5);
  // Straight to the provider with the key given: no proxy in between.
  expect(fake.requests.find((r) => r.body.model === 'claude-lib')!.headers['x-api-key']).toBe(kFakeKeys.c);
});

it('train() with a teacher labels first, then trains on the labels', async () => {
  const stages: string[] = [];
  const classifier = await train(request('provider-a:gpt-lib'), {
    teacher: { providers: { 'provider-a': { url: fake.urls.a, key: kFakeKeys.a } }, env: {} },
    onProgress: (p) => stages.push(p.stage),
  });
  expect(stages[0]).toBe('labelling');
  expect(stages).toContain('fit');
  expect(classifier.metrics.validation_examples).toBe(8);
  const [billing, other] = await classifier.predict(['Note 99: my payment failed today', 'Note 98: my app crashes today']);
  expect(billing.label).toBe(true);
  expect(other.label).toBe(false);
});

it('a wrong key is a clear failure: the provider refuses, and nothing is guessed', async () => {
  const failed = await labelWithTeacher(request('provider-b:mistral-lib'), {
    providers: { 'provider-b': { url: fake.urls.b, key: 'sk-wrong' } },
    env: {},
  }).catch((error: Error) => error);
  expect((failed as Error).message).toMatch(
    /^the teacher labelled 0 texts \(0 refused or out of schema; provider-b:mistral-lib answered 401: .*\), too few to train/,
  );
});
