// The shadow runner on its own, over a real SQLite store and a service whose runtime trains a word-count model:
// labels compared as the service compares them, a full queue dropping jobs (counted on the telemetry channel the
// metrics read), a project without a shadow costing no job, and the CLI's body from its flags.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { shadowBody } from '../../src/cli/shadow.js';
import { kMaxShadowQueue, kShadowConcurrency, predictedLabel, sameLabel, ShadowRunner, taskOfModel } from '../../src/proxy/shadow.js';
import { SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { RequestLogRow } from '../../src/store/types.js';
import { kChannels, type ShadowJobEvent } from '../../src/telemetry.js';

describe('labels as the shadow compares them', () => {
  it('reads a task from a model record and a label from a predict answer, and compares label sets in any order', () => {
    expect(taskOfModel({ taskType: 'binary-classification', labelText: 'billing question' })).toEqual({
      taskType: 'binary-classification',
      labels: ['billing question'],
    });
    expect(taskOfModel({ taskType: 'multi-label-classification', labelText: '["a","b"]' })).toEqual({
      taskType: 'multi-label-classification',
      labels: ['a', 'b'],
    });
    expect(predictedLabel({ model: 'm', label_text: 'x', predictions: [{ label: false, probability: 0.2, truncated: false }] })).toBe(
      false,
    );
    expect(
      predictedLabel({
        model: 'm',
        task_type: 'multi-label-classification',
        predictions: [{ labels: ['b'], scores: { a: 0.1, b: 0.9 }, truncated: false }],
      }),
    ).toEqual(['b']);
    expect([sameLabel(['a', 'b'], ['b', 'a']), sameLabel(['a'], ['a', 'b']), sameLabel('a', ['a']), sameLabel(true, true)]).toEqual([
      true,
      false,
      false,
      true,
    ]);
  });

  it('builds the PUT body from the flags, and refuses two rules or none', () => {
    expect(
      shadowBody({ model: 'provider-a:m', classifier: 'svc-small-1', 'label-words': 'true=yes, yeah;false=no', 'text-pointer': '/x' }),
    ).toEqual({
      model: 'provider-a:m',
      classifier: 'svc-small-1',
      text_pointer: '/x',
      label: { words: { true: ['yes', 'yeah'], false: ['no'] } },
    });
    expect(shadowBody({ model: 'provider-a:m', classifier: 'c', 'label-regex': '^(yes|no)', 'label-flags': 'i' }).label).toEqual({
      regex: '^(yes|no)',
      flags: 'i',
    });
    expect(() => shadowBody({ model: 'provider-a:m', classifier: 'c' })).toThrow(
      /^give exactly one of --label-pointer, --label-regex, --label-words \(got 0\)\nusage: svc shadow set/,
    );
    expect(() => shadowBody({ model: 'provider-a:m', classifier: 'c', 'label-words': 'yes' })).toThrow(/^--label-words has 'yes'/);
  });
});

describe('the shadow runner', () => {
  let dir: string;
  let store: SqliteStore;
  let service: SvcService;
  const events: ShadowJobEvent['outcome'][] = [];
  const listener = (event: unknown) => events.push((event as ShadowJobEvent).outcome);

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-shadow-runner-'));
    store = SqliteStore.open(dir);
    service = new SvcService({ store, runtime: new WordCountRuntime(join(dir, 'hub')), retention: false });
    await service.start();
    await service.createOrganization('acme');
    await store.createProject({ id: 'proj_1', orgId: 'acme', name: 'chat', createdAt: 0, monthlyTokenBudget: null });
    events.length = 0;
    subscribe(kChannels.shadowJob, listener);
  });
  afterEach(async () => {
    unsubscribe(kChannels.shadowJob, listener);
    await service.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `count` answered calls of the model, logged (the results point at their rows), as the request log hands them over. */
  async function loggedCalls(count: number, model = 'provider-a:m'): Promise<RequestLogRow[]> {
    const rows: RequestLogRow[] = [];
    for (let i = 0; i < count; i++) {
      const row: Omit<RequestLogRow, 'id'> = {
        projectId: 'proj_1',
        keyId: 'key_1',
        provider: 'provider-a',
        model,
        stream: false,
        status: 200,
        ttfbMs: 1,
        totalMs: 30,
        tokensIn: 5,
        tokensOut: 1,
        error: null,
        requestBody: JSON.stringify({ model, messages: [{ role: 'user', content: i % 2 === 0 ? 'great fun film' : 'dull boring film' }] }),
        responseBody: JSON.stringify({ choices: [{ message: { role: 'assistant', content: i % 2 === 0 ? 'yes' : 'no' } }] }),
        createdAt: 1_000 + i,
      };
      rows.push({ ...row, id: await store.insertRequestLog(row) });
    }
    return rows;
  }

  async function trainedClassifier(): Promise<string> {
    const principal = await service.authenticate((await service.createApiKey('acme')).key);
    const examples = Array.from({ length: 20 }, (_, i) => ({
      text: i % 2 === 0 ? `great fun film ${i}` : `dull boring film ${i}`,
      label: i % 2 === 0,
      label_text: 'positive',
    }));
    const model = await service.train(principal, { model: 'svc-small', task_type: 'binary-classification', examples });
    await service.idle();
    return model.id;
  }

  it('compares every call it can queue and drops, counted, the calls past a full queue', async () => {
    const classifier = await trainedClassifier();
    await store.shadows.put({
      projectId: 'proj_1',
      model: 'provider-a:m',
      classifierId: classifier,
      textPointer: null,
      labelRule: { words: { true: ['yes'], false: ['no'] } },
      createdAt: 0,
      updatedAt: 0,
    });
    const runner = new ShadowRunner(service);
    const calls = await loggedCalls(kMaxShadowQueue + kShadowConcurrency + 10);
    // Offered at once, as a flush of the log would: the first few start, the queue fills, the rest are dropped.
    for (const call of calls) runner.offer(call);
    await runner.drain();
    const kept = kMaxShadowQueue + kShadowConcurrency;
    expect(runner.counts).toEqual({ recorded: kept, error: 0, dropped: 10, failed: 0 });
    expect(events.filter((e) => e === 'dropped')).toHaveLength(10);
    expect(events.filter((e) => e === 'recorded')).toHaveLength(kept);
    const results = (await store.shadows.listResults('proj_1', { limit: 2000 })).reverse();
    // Four at a time: they finish in any order, but exactly the first calls offered were kept.
    expect(results.map((r) => r.requestId).sort((x, y) => x - y)).toEqual(calls.slice(0, kept).map((c) => c.id));
    // The word-count model reads these texts as its examples did: it agrees with every reply.
    expect(results.every((r) => r.agreed === true && r.error === null && r.chatLabel === r.classifierLabel)).toBe(true);
  });

  it("believes its cache of a project's settings until told of a change, and never shadows a failed call", async () => {
    const classifier = await trainedClassifier();
    const runner = new ShadowRunner(service);
    const [first, second, third] = await loggedCalls(3);
    runner.offer(first);
    await runner.drain();
    // Set behind the runner's back (as another replica would): the cached 'no shadow' holds for a while.
    await store.shadows.put({
      projectId: 'proj_1',
      model: 'provider-a:m',
      classifierId: classifier,
      textPointer: null,
      labelRule: { words: { true: ['yes'], false: ['no'] } },
      createdAt: 0,
      updatedAt: 0,
    });
    runner.offer(second);
    await runner.drain();
    expect(await store.shadows.listResults('proj_1', { limit: 10 })).toEqual([]);
    // The settings routes call forget on a change: the next call reads them again.
    runner.forget('proj_1');
    runner.offer({ ...third, status: 500, error: 'upstream 500' });
    runner.offer(third);
    await runner.drain();
    expect((await store.shadows.listResults('proj_1', { limit: 10 })).map((r) => [r.requestId, r.agreed])).toEqual([[third.id, true]]);
    expect(runner.counts).toEqual({ recorded: 1, error: 0, dropped: 0, failed: 0 });
  });
});
