// Evaluation reports made in the background, through a real server on 127.0.0.1 (SQLite, the library runtime,
// the shared service's predict bounds): 160 e-mails of 1,500 characters scored by the training job and stored with
// the model, served by a GET that neither reads the job nor predicts; a comparison with a version made live after
// this one trained, and the report of a version whose job stored none, computed in the background (409 with
// retry-after until then).
import { readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it, vi } from 'vitest';

import { labelledEmails } from '../../fixtures/corpora.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-evaluation-background-'));
let server: RunningServer;
let key: string;
beforeAll(async () => {
  server = await startServer({ dataDir: dir, port: 0, logLevel: 'silent', proxy: false, pool: { workers: 1, engineThreads: 1 } });
  await server.service.createOrganization('acme');
  key = (await server.service.createApiKey('acme')).key;
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const call = async (method: string, path: string, body?: unknown) => {
  const { status, text } = await httpCall(server.url, method, path, key, body);
  return { status, body: JSON.parse(text) as Record<string, any> };
};
const settled = async (name: string) => {
  for (let i = 0; i < 6000 * kLevelSlowdown; i += 1) {
    const { body } = await call('GET', `/v2/models/${name}`);
    if (body.status !== 'training') return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${name} still training`);
};
/** The server's predictions of `texts` by `model`, ten texts a call (each well within the predict deadline). */
const predictions = async (model: string, texts: readonly string[]) => {
  const out: { label: boolean }[] = [];
  for (let start = 0; start < texts.length; start += 10) {
    const answer = await call('POST', '/v2/predict', { model, inputs: texts.slice(start, start + 10) });
    expect(answer.status).toBe(200);
    out.push(...(answer.body.predictions as { label: boolean }[]));
  }
  return out;
};
const right = (predicted: readonly { label: boolean }[], truth: readonly { label: boolean }[]) =>
  predicted.filter((p, i) => p.label === truth[i].label).length;

it(
  'scores 160 validation e-mails of 1,500 characters in the training job and serves the stored report without reading the job',
  { timeout: 900_000 * kLevelSlowdown },
  async () => {
    // E-mails cut to exactly 1,500 characters: each is more than the 256 tokens the encoder reads.
    const emails = labelledEmails(400, 1500).filter((e) => e.text.length === 1500);
    const spam = emails.filter((e) => e.label);
    const ham = emails.filter((e) => !e.label);
    const labelled = (rows: typeof emails) => rows.map((e) => ({ text: e.text, label: e.label, label_text: 'spam' }));
    const examples = labelled([...spam.slice(0, 10), ...ham.slice(0, 10)]);
    const validation = labelled([...spam.slice(10, 90), ...ham.slice(10, 90)]);
    const trained = await call('POST', '/v2/train', {
      model: 'svc-small',
      task_type: 'binary-classification',
      examples,
      finetune: false,
      validation,
    });
    expect(trained.status).toBe(200);
    const id = trained.body.id as string;
    expect((await settled(id)).status).toBe('trained');
    expect(await server.service.runtime.hubFiles('acme', id)).toContain('evaluation.json');

    const getJob = vi.spyOn(server.service.store, 'getJob');
    const predict = vi.spyOn(server.service.runtime, 'predict');
    const score = vi.spyOn(server.service.runtime, 'score');
    const answer = await call('GET', `/v2/models/${id}/evaluation`);
    expect([getJob.mock.calls.length, predict.mock.calls.length, score.mock.calls.length]).toEqual([0, 0, 0]);
    vi.restoreAllMocks();
    expect(answer.status).toBe(200);
    const report = answer.body;
    expect(report).toMatchObject({
      object: 'model.evaluation',
      model: `${id}@1`,
      source: 'validation',
      examples: 160,
      labels: ['true', 'false'],
    });
    expect(report.per_label.map((l: { support: number }) => l.support)).toEqual([80, 80]);

    // The report is what the server's own predictions of the same texts score.
    const predicted = await predictions(
      id,
      validation.map((e) => e.text),
    );
    const truePositives = predicted.filter((p, i) => p.label && validation[i].label).length;
    const trueNegatives = predicted.filter((p, i) => !p.label && !validation[i].label).length;
    expect(report.confusion_matrix).toEqual([
      [truePositives, 80 - truePositives],
      [80 - trueNegatives, trueNegatives],
    ]);
    expect(report.accuracy).toBe(right(predicted, validation) / 160);
    expect(report.calibration.bins.reduce((sum: number, b: { count: number }) => sum + b.count, 0)).toBe(160);
  },
);

const imdbRequest = (from: number, validationFrom: number) => ({
  model: 'svc-small',
  task_type: 'binary-classification',
  examples: imdbExamples(from, 10),
  finetune: false,
  validation: imdbExamples(validationFrom, 8),
});

it(
  'computes in the background what no training job stored, answering 409 with retry-after until it has it',
  { timeout: 600_000 * kLevelSlowdown },
  async () => {
    const id = (await call('POST', '/v2/train', imdbRequest(0, 40))).body.id as string;
    await settled(id);
    expect((await call('POST', `/v2/models/${id}/versions`, imdbRequest(10, 60))).status).toBe(200);
    await settled(`${id}@2`);
    const first = (await call('GET', `/v2/models/${id}/evaluation?version=1`)).body;
    // Version 2 trained while version 1 was live: its job stored both on version 1's texts.
    const getJob = vi.spyOn(server.service.store, 'getJob');
    const second = (await call('GET', `/v2/models/${id}/evaluation?version=2`)).body;
    expect(getJob).not.toHaveBeenCalled();
    vi.restoreAllMocks();
    expect(second.compared_with_live).toEqual({
      version: 1,
      examples: 16,
      this: {
        accuracy:
          right(
            await predictions(
              `${id}@2`,
              imdbExamples(40, 8).map((e) => e.text),
            ),
            imdbExamples(40, 8),
          ) / 16,
        macro_f1: expect.any(Number),
      },
      live: { accuracy: first.accuracy, macro_f1: first.macro.f1 },
    });

    // Version 2 goes live: version 1 is scored on version 2's texts in the background, and until then a GET says so.
    expect((await call('POST', `/v2/models/${id}/promote`, { version: 2 })).status).toBe(200);
    const path = `/v2/models/${id}/evaluation?version=1`;
    const computing = await fetch(server.url + path, { headers: { authorization: `Bearer ${key}` } });
    expect([computing.status, computing.headers.get('retry-after')]).toEqual([409, '5']);
    expect(((await computing.json()) as { error: unknown }).error).toEqual({
      message:
        `Version 1 of '${id}' is being scored in the background on the validation set of version 2, made live after it trained: ` +
        'retry in a few seconds',
      type: 'conflict',
      param: 'version',
      code: 'conflict',
    });
    await server.service.evaluations.idle();
    const compared = (await call('GET', path)).body;
    const onSecond = await predictions(
      `${id}@1`,
      imdbExamples(60, 8).map((e) => e.text),
    );
    expect(compared.compared_with_live).toEqual({
      version: 2,
      examples: 16,
      this: { accuracy: right(onSecond, imdbExamples(60, 8)) / 16, macro_f1: expect.any(Number) },
      live: { accuracy: second.accuracy, macro_f1: second.macro.f1 },
    });
    expect({ ...compared, compared_with_live: undefined }).toEqual({ ...first, compared_with_live: undefined });

    // A version whose job stored no report (as one trained before reports were stored): computed in the background.
    const older = (await call('POST', '/v2/train', imdbRequest(20, 80))).body.id as string;
    await settled(older);
    const file = join(server.service.runtime.modelDir('acme', older), 'evaluation.json');
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { validation: Record<string, unknown> };
    rmSync(file);
    const waiting = await call('GET', `/v2/models/${older}/evaluation`);
    expect([waiting.status, waiting.body.error.message]).toEqual([
      409,
      `Version 1 of '${older}' was trained before evaluation reports were stored; its report is being computed in the background: ` +
        'retry in a few seconds',
    ]);
    await server.service.evaluations.idle();
    const { object, model, source, ...scores } = (await call('GET', `/v2/models/${older}/evaluation`)).body;
    expect([object, model, source]).toEqual(['model.evaluation', `${older}@1`, 'validation']);
    // The same scores; the time per text is kept only by the training job that scored them.
    expect(scores).toEqual({ ...stored.validation, ms_per_text: undefined });
  },
);
