// Evaluation reports through a real server on 127.0.0.1 with the library runtime (finetune: false): binary versions
// trained with validation sets, each report checked against the server's own predictions on the same texts, a new
// version compared with the live one on the live one's validation set, and one trained without a validation set
// reported from its cross-validation.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { type RunningServer, startServer } from '../../src/server/app.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-evaluation-'));
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
  for (let i = 0; i < 1200 * kLevelSlowdown; i += 1) {
    const { body } = await call('GET', `/v2/models/${name}`);
    if (body.status !== 'training') return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${name} still training`);
};
const request = (from: number, validationFrom: number | null) => ({
  model: 'svc-small',
  task_type: 'binary-classification',
  examples: imdbExamples(from, 10),
  finetune: false,
  ...(validationFrom === null ? {} : { validation: imdbExamples(validationFrom, 8) }),
});

it(
  "reports a version on its validation set, as its predictions score, and beside the live version on the live one's",
  { timeout: 180_000 * kLevelSlowdown },
  async () => {
    const id = (await call('POST', '/v2/train', request(0, 40))).body.id as string;
    await settled(id);
    const report = (await call('GET', `/v2/models/${id}/evaluation`)).body;
    const validation = imdbExamples(40, 8);
    const predicted = (await call('POST', '/v2/predict', { model: id, inputs: validation.map((e) => e.text) })).body.predictions as {
      label: boolean;
      probability: number;
    }[];
    const right = predicted.filter((p, i) => p.label === validation[i].label).length;
    expect(report).toMatchObject({
      object: 'model.evaluation',
      model: `${id}@1`,
      source: 'validation',
      examples: 16,
      labels: ['true', 'false'],
    });
    expect(report.accuracy).toBe(right / 16);
    const truePredicted = predicted.filter((p, i) => p.label && validation[i].label).length;
    expect(report.confusion_matrix[0][0]).toBe(truePredicted);
    expect(report.confusion_matrix.flat().reduce((a: number, b: number) => a + b, 0)).toBe(16);
    expect(report.per_label.map((l: { support: number }) => l.support)).toEqual([8, 8]);
    // The 0.5 row of the threshold table is the report's own 'true' label.
    const half = report.thresholds.find((t: { threshold: number }) => t.threshold === 0.5);
    expect({ precision: half.precision, recall: half.recall }).toEqual({
      precision: report.per_label[0].precision,
      recall: report.per_label[0].recall,
    });
    expect(report.thresholds).toHaveLength(19);
    expect(report.calibration.bins.reduce((sum: number, b: { count: number }) => sum + b.count, 0)).toBe(16);
    expect(report.compared_with_live).toBeUndefined();
    // A binary model's metrics use its validation set too, as multi-class and multi-label ones do: the same texts.
    const { metrics } = (await call('GET', `/v2/models/${id}`)).body;
    expect(metrics.validation_examples).toBe(16);
    expect(Math.abs(metrics.validation_accuracy - report.accuracy)).toBeLessThanOrEqual(1 / 16);

    // Version 2 with its own validation set: its report, and both versions on version 1's texts.
    const added = await call('POST', `/v2/models/${id}/versions`, request(10, 60));
    expect(added.status).toBe(200);
    await settled(`${id}@2`);
    const second = (await call('GET', `/v2/models/${id}/evaluation?version=2`)).body;
    expect([second.model, second.examples]).toEqual([`${id}@2`, 16]);
    const onLive = (await call('POST', '/v2/predict', { model: `${id}@2`, inputs: validation.map((e) => e.text) })).body.predictions as {
      label: boolean;
    }[];
    expect(second.compared_with_live).toEqual({
      version: 1,
      examples: 16,
      this: { accuracy: onLive.filter((p, i) => p.label === validation[i].label).length / 16, macro_f1: expect.any(Number) },
      live: { accuracy: report.accuracy, macro_f1: report.macro.f1 },
    });

    expect((await call('GET', `/v2/models/${id}/evaluation?version=9`)).body.error.message).toBe(
      `The model '${id}' has no version 9 (its versions: 1, 2)`,
    );

    // Version 3, through /v2/train with model_id and without a validation set: the report of its examples'
    // cross-validation, the same one its cv metrics come from, still compared with the live version on its texts.
    const third = await call('POST', '/v2/train', { ...request(20, null), model_id: id });
    expect(third.body).toMatchObject({ id: `${id}@3`, version: 3, live_version: 1, status: 'training' });
    const trained = await settled(`${id}@3`);
    const crossValidated = (await call('GET', `/v2/models/${id}/evaluation?version=3`)).body;
    expect(crossValidated).toMatchObject({
      object: 'model.evaluation',
      model: `${id}@3`,
      source: 'cross-validation',
      folds: trained.metrics.cv_folds,
      encoder: 'trained',
      examples: 20,
      labels: ['true', 'false'],
      accuracy: trained.metrics.cv_accuracy,
    });
    expect(crossValidated.macro.f1).toBeCloseTo(trained.metrics.cv_macro_f1, 12);
    expect(crossValidated.per_label.map((l: { support: number }) => l.support)).toEqual([10, 10]);
    expect(crossValidated.thresholds).toHaveLength(19);
    expect(crossValidated.calibration.bins.reduce((sum: number, b: { count: number }) => sum + b.count, 0)).toBe(20);
    expect(crossValidated.compared_with_live).toMatchObject({ version: 1, examples: 16, live: second.compared_with_live.live });
    expect((await call('GET', `/v2/models/${id}/evaluation?version=0`)).status).toBe(400);
  },
);
