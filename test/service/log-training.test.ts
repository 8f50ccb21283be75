// Training from the request log against a real SQLite store: rows inserted as the proxy writes them (each provider's
// JSON and SSE bodies), read back into an ordinary train body with its training_data, dispatched by SvcService.train
// so the job stores that training_data, and every refusal (nothing matched, nothing readable, another org's project,
// a bad rule, too few examples) with its exact message.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { chatChunks } from '../../fixtures/fake-provider.js';
import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { SvcError } from '../../src/errors.js';
import { trainBodyFromLog, type LogTrainingDeps } from '../../src/service/log-training.js';
import { type Principal, SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { ProviderName, RequestLogRow } from '../../src/store/types.js';

let dir: string;
let service: SvcService;
let acme: Principal;
let projectId: string;
let deps: LogTrainingDeps;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-log-training-'));
  service = new SvcService({ store: SqliteStore.open(dir), runtime: new WordCountRuntime(join(dir, 'hub')), retention: false });
  await service.createOrganization('acme');
  acme = await service.authenticate(`Bearer ${(await service.createApiKey('acme')).key}`);
  projectId = (await service.createProject('acme', 'support')).id;
  deps = { store: service.store, ownProject: (id) => service.ownProject(acme, id) };
});
afterEach(async () => {
  await service.close();
  rmSync(dir, { recursive: true, force: true });
});

const usage = { prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 };

/** A request body as a client sends it through the proxy: a system prompt and the text as the last user message. */
function chatRequest(provider: ProviderName, text: string): string {
  const system = 'Is this message a billing question? Answer yes or no.';
  if (provider === 'provider-c')
    return JSON.stringify({ model: 'provider-c:claude', max_tokens: 5, system, messages: [{ role: 'user', content: text }] });
  return JSON.stringify({
    model: `${provider}:gpt-4o-mini`,
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: text },
    ],
  });
}

/** The response body as the log keeps it: each provider's JSON, or its SSE stream. */
function chatResponse(provider: ProviderName, reply: string, stream: boolean): string {
  if (provider === 'provider-c') {
    if (!stream)
      return JSON.stringify({ type: 'message', role: 'assistant', content: [{ type: 'text', text: reply }], stop_reason: 'end_turn' });
    const event = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
    return [
      event('message_start', { message: { id: 'msg', content: [] } }),
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: reply } }),
      event('message_stop', {}),
    ].join('');
  }
  if (stream)
    return chatChunks(provider === 'provider-a' ? 'a' : 'b', 'gpt-4o-mini', [reply.slice(0, 1), reply.slice(1)], usage, true).join('');
  return JSON.stringify({
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
    usage,
  });
}

interface Call {
  text: string;
  reply: string;
  provider?: ProviderName;
  stream?: boolean;
  createdAt?: number;
  overrides?: Partial<Omit<RequestLogRow, 'id'>>;
}

/** Inserts the calls as the proxy's log would, each 10 ms long with 7 tokens in and 1 out; returns their ids. */
async function logCalls(calls: readonly Call[], project = projectId): Promise<number[]> {
  const ids = [];
  for (const [i, call] of calls.entries()) {
    const provider = call.provider ?? 'provider-a';
    ids.push(
      await service.store.insertRequestLog({
        projectId: project,
        keyId: 'key_1',
        provider,
        model: provider === 'provider-c' ? 'provider-c:claude' : `${provider}:gpt-4o-mini`,
        stream: call.stream ?? false,
        status: 200,
        ttfbMs: 5,
        totalMs: 10,
        tokensIn: 7,
        tokensOut: 1,
        error: null,
        requestBody: chatRequest(provider, call.text),
        responseBody: chatResponse(provider, call.reply, call.stream ?? false),
        createdAt: call.createdAt ?? 1_000 + i,
        ...call.overrides,
      }),
    );
  }
  return ids;
}

/** Texts 0..n-1: even ones about billing ('yes'), odd ones not ('no'), spread over the three providers, half streamed. */
const billingCalls = (n: number): Call[] =>
  Array.from({ length: n }, (_, i) => ({
    text: i % 2 === 0 ? `invoice question ${i}` : `parcel question ${i}`,
    reply: i % 2 === 0 ? 'Yes, it is.' : 'No.',
    provider: (['provider-a', 'provider-b', 'provider-c'] as const)[i % 3],
    stream: i % 4 < 2,
  }));

const binaryBody = (fromLog: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  model: 'svc-small',
  task_type: 'binary-classification',
  label_text: 'billing question',
  finetune: false,
  from_log: { project_id: projectId, label: { regex: '^(yes|no)\\b', flags: 'i' }, ...fromLog },
  ...extra,
});

async function refusal(promise: Promise<unknown>): Promise<{ code: string; status: number; param: string | null; message: string }> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof SvcError)) throw new Error(`expected an SvcError, got ${String(error)}`);
  return { code: error.code, status: error.status, param: error.param, message: error.message };
}

describe('trainBodyFromLog', () => {
  it('makes a binary train body from every provider, JSON and streamed, holding out a stratified fifth as validation', async () => {
    const calls = billingCalls(40);
    // Skipped: an answer the regex cannot read, a call that ended with an error, a request without a user message.
    calls.push({ text: 'what now', reply: 'Perhaps, it depends.' });
    calls.push({ text: 'cut call', reply: 'Yes', overrides: { error: 'upstream closed the stream' } });
    calls.push({ text: 'x', reply: 'Yes', overrides: { requestBody: '{"model":"provider-a:gpt-4o-mini","messages":[]}' } });
    // Not matched at all: a failed call (502) and another project's call.
    calls.push({ text: 'failed', reply: 'Yes', overrides: { status: 502 } });
    const ids = await logCalls(calls);
    const other = await service.createProject('acme', 'other');
    await logCalls([{ text: 'elsewhere', reply: 'Yes' }], other.id);

    const { body, trainingData } = await trainBodyFromLog(deps, binaryBody({}));
    const examples = body.examples as { text: string; label: boolean; label_text: string }[];
    const validation = body.validation as typeof examples;
    // 20 of each label: 4 of each held out.
    expect([examples.length, validation.length]).toEqual([32, 8]);
    expect(validation.filter((e) => e.label).length).toBe(4);
    const all = [...examples, ...validation].sort((a, b) => a.text.localeCompare(b.text));
    const expected = calls.slice(0, 40).map((c, i) => ({ text: c.text, label: i % 2 === 0, label_text: 'billing question' }));
    expect(all).toEqual(expected.sort((a, b) => a.text.localeCompare(b.text)));
    expect(Object.keys(body)).toEqual(['model', 'task_type', 'examples', 'validation', 'finetune']);
    expect(body.finetune).toBe(false);
    expect(trainingData).toEqual({
      source: 'request_log',
      texts: 43,
      labelled: 40,
      held_out: 8,
      skipped: 3,
      skipped_samples: [
        { request_id: ids[40], reason: 'label.regex gives no label of the task in the reply "Perhaps, it depends."' },
        { request_id: ids[41], reason: 'the call ended with an error: upstream closed the stream' },
        { request_id: ids[42], reason: 'the request has no user message text' },
      ],
      teacher: {
        model: 'provider-a:gpt-4o-mini, provider-b:gpt-4o-mini, provider-c:claude',
        project_id: projectId,
        calls: 40,
        tokens_in: 280,
        tokens_out: 40,
        ms_per_text: 10,
      },
    });
    // Seeded: the same log gives the same split.
    expect((await trainBodyFromLog(deps, binaryBody({}))).body).toEqual(body);
  });

  it('filters by time range and model, keeps the latest answer of a text, and reads a text pointer', async () => {
    const calls: Call[] = billingCalls(30).map((c, i) => ({ ...c, provider: 'provider-a', createdAt: 1_000 + i }));
    // The same text answered twice: the later 'no' wins. A provider-b call is outside the model filter.
    calls.push({ text: 'invoice question 0', reply: 'no', provider: 'provider-a', createdAt: 2_000, stream: false });
    calls.push({ text: 'invoice question 99', reply: 'yes', provider: 'provider-b', createdAt: 2_001, stream: false });
    calls.push({ text: 'too late', reply: 'yes', provider: 'provider-a', createdAt: 9_000, stream: false });
    await logCalls(calls);
    const request = binaryBody({ model: 'provider-a:gpt-4o-mini', since: 1_000, until: '1970-01-01T00:00:03Z' }, { holdout: 0 });
    const { body, trainingData } = await trainBodyFromLog(deps, request);
    const examples = body.examples as { text: string; label: boolean }[];
    expect(body.validation).toBeUndefined();
    expect(examples.length).toBe(30);
    expect(examples[0]).toEqual({ text: 'invoice question 0', label: false, label_text: 'billing question' });
    expect(trainingData).toMatchObject({
      texts: 31,
      labelled: 30,
      held_out: 0,
      skipped: 0,
      teacher: { model: 'provider-a:gpt-4o-mini', calls: 31 },
    });
    expect(trainingData.skipped_samples).toBeUndefined();

    // The system prompt as the text (a pointer into the request): one distinct text, so too few examples.
    const pointed = binaryBody({ model: 'provider-a:gpt-4o-mini', text_pointer: '/messages/0/content' });
    expect(await refusal(trainBodyFromLog(deps, pointed))).toEqual({
      code: 'invalid_request',
      status: 400,
      param: 'from_log',
      message:
        'From the request log: 1 labelled texts of 32 calls (0 skipped), 1 to train on: at least 20 examples are required (got 1); ' +
        'to label texts from fewer without training a model, classify needs only 2 examples per label (POST /v2/classify, ' +
        'svc classify, or classify() in the library)',
    });
  });

  it('makes multi-class examples from a JSON pointer into JSON replies, and multi-label ones from label words', async () => {
    const topics = ['billing', 'shipping', 'returns'];
    const calls: Call[] = Array.from({ length: 30 }, (_, i) => ({
      text: `message ${i}`,
      reply: i === 29 ? '{"topic": "refunds"}' : `\`\`\`json\n{"topic": "${topics[i % 3].toUpperCase()}"}\n\`\`\``,
    }));
    const ids = await logCalls(calls);
    const multiClass = {
      model: 'svc-small',
      task_type: 'multi-class-classification',
      labels: topics,
      holdout: 0.1,
      from_log: { project_id: projectId, label: { pointer: '/topic' } },
    };
    const { body, trainingData } = await trainBodyFromLog(deps, multiClass);
    // 10, 10 and 9 per class (the 30th reply names no class of the task): a tenth of each, rounded, is one.
    expect((body.examples as unknown[]).length + (body.validation as unknown[]).length).toBe(29);
    expect((body.validation as { label: string }[]).map((e) => e.label).sort()).toEqual(['billing', 'returns', 'shipping']);
    // Half would be 5, 5 and 5, but a class keeps at least 8 examples to train on: 2, 2 and 1.
    const half = (await trainBodyFromLog(deps, { ...multiClass, holdout: 0.5 })).body;
    expect([(half.examples as unknown[]).length, (half.validation as unknown[]).length]).toEqual([24, 5]);
    expect(trainingData.skipped_samples).toEqual([
      { request_id: ids[29], reason: `no label of the task at label.pointer '/topic' in the reply "{\\"topic\\": \\"refunds\\"}"` },
    ]);

    await service.store.pruneRequestLog(projectId, { olderThan: Number.MAX_SAFE_INTEGER, keepNewest: 0, limit: 1000 });
    const aspects = ['speed', 'price'];
    await logCalls(
      Array.from({ length: 24 }, (_, i) => ({
        text: `review ${i}`,
        reply: ['It is slow', 'Too expensive', 'Slow and expensive', 'Fine'][i % 4],
      })),
    );
    const multiLabel = {
      model: 'svc-small',
      task_type: 'multi-label-classification',
      labels: aspects,
      holdout: 0,
      from_log: { project_id: projectId, label: { words: { speed: ['slow'], price: ['expensive', 'pricey'] } } },
    };
    const labelled = (await trainBodyFromLog(deps, multiLabel)).body.examples as { text: string; labels: string[] }[];
    expect(labelled.slice(0, 4)).toEqual([
      { text: 'review 0', labels: ['speed'] },
      { text: 'review 1', labels: ['price'] },
      { text: 'review 2', labels: ['speed', 'price'] },
      { text: 'review 3', labels: [] },
    ]);
  });

  it('refuses a log query that matches nothing, and a pointer that matches no reply, saying how many and why', async () => {
    expect(await refusal(trainBodyFromLog(deps, binaryBody({ model: 'provider-a:gpt-4o-mini', since: '2026-11-01' })))).toEqual({
      code: 'invalid_request',
      status: 400,
      param: 'from_log',
      message: `No successful call in the request log matched (project '${projectId}', since 2026-11-01T00:00:00.000Z, model 'provider-a:gpt-4o-mini')`,
    });
    await logCalls(billingCalls(25));
    const pointer = binaryBody({ label: { pointer: '/verdict' } });
    expect(await refusal(trainBodyFromLog(deps, pointer))).toEqual({
      code: 'invalid_request',
      status: 400,
      param: 'from_log',
      message: `None of the 25 calls that matched in the request log (project '${projectId}') gave a labelled example; skipped 25: no label of the task at label.pointer '/verdict'`,
    });
  });

  it("refuses another organization's project as unknown, and a bad rule before it reads the log", async () => {
    await service.createOrganization('globex');
    const theirs = await service.createProject('globex', 'secret');
    await logCalls(billingCalls(25), theirs.id);
    expect(await refusal(trainBodyFromLog(deps, binaryBody({ project_id: theirs.id })))).toEqual({
      code: 'not_found',
      status: 404,
      param: 'project_id',
      message: `The project '${theirs.id}' does not exist`,
    });
    expect(await refusal(trainBodyFromLog(deps, binaryBody({ label: { regex: '([a-z' } })))).toEqual({
      code: 'invalid_request',
      status: 400,
      param: 'from_log.label.regex',
      message: 'from_log.label.regex is not a valid regular expression: /([a-z/: Unterminated character class',
    });
    expect(await refusal(trainBodyFromLog(deps, binaryBody({ label: { regex: 'x', pointer: '/x' } })))).toEqual({
      code: 'invalid_request',
      status: 400,
      param: 'from_log.label',
      message: 'from_log.label must name exactly one of pointer, regex, words (got pointer and regex)',
    });
    expect(await refusal(trainBodyFromLog(deps, binaryBody({ text_pointer: 'messages/1' })))).toMatchObject({
      param: 'from_log.text_pointer',
      message: `from_log.text_pointer must be a JSON pointer starting with '/' (got "messages/1")`,
    });
    expect(await refusal(trainBodyFromLog(deps, binaryBody({ until: '2026-13-45' })))).toMatchObject({ param: 'from_log.until' });
    expect(await refusal(trainBodyFromLog(deps, { ...binaryBody({}), examples: [] }))).toMatchObject({
      message: "the request has unknown field 'examples'",
    });
  });

  it('reads at most 10,000 calls of a range and says it stopped', async () => {
    const rows = Array.from({ length: 10_001 }, (_, i) => ({ text: `t${i}`, reply: i % 2 === 0 ? 'yes' : 'no' }));
    await logCalls(rows);
    const { trainingData } = await trainBodyFromLog(deps, binaryBody({}));
    expect(trainingData).toMatchObject({ texts: 10_000, labelled: 10_000, held_out: 2_000, skipped: 0 });
    expect(trainingData.teacher?.stopped).toBe(
      'read the first 10000 calls of the range (the most one request reads); later calls were not read',
    );
  }, 120_000);
});

describe('SvcService.train with from_log', () => {
  it("trains on the log's examples and keeps training_data and the validation in the job's options", async () => {
    await logCalls(billingCalls(30));
    const model = await service.train(acme, binaryBody({}));
    expect(model.status).toBe('training');
    const job = await service.store.getJob(model.id);
    expect(job?.options.training_data).toMatchObject({ source: 'request_log', texts: 30, labelled: 30, held_out: 6, skipped: 0 });
    expect((job?.options.validation as unknown[]).length).toBe(6);
    expect((await service.store.getJobExamples(model.id)).length).toBe(24);
    expect(job?.options.finetune).toBe(false);
  });

  it("trains a classifier's next version from the log with model_id, its job keeping that version's training_data", async () => {
    await service.start();
    await logCalls(billingCalls(30));
    const first = await service.train(acme, binaryBody({}));
    await service.idle();
    expect((await service.getModel(acme, first.id)).status).toBe('trained');
    // 30 new texts, logged later: the range of the next version holds only them.
    await logCalls(
      billingCalls(60)
        .slice(30)
        .map((call, i) => ({ ...call, createdAt: 5_000 + i })),
    );
    const next = await service.train(acme, binaryBody({ since: 5_000 }, { model_id: first.id, holdout: 0 }));
    expect(next.id).toBe(`${first.id}@2`);
    await service.idle();
    const version = (await service.versions.list(acme, first.id)).data.find((v) => v.version === 2)!;
    expect(version.status).toBe('trained');
    const stored = await service.store.versions.list(first.id);
    const job = await service.store.getJob(stored.find((v) => v.version === 2)!.id);
    expect(job?.options.training_data).toMatchObject({ source: 'request_log', texts: 30, labelled: 30, held_out: 0 });
  });
});
