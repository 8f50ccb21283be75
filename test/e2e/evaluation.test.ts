// Evaluation reports through a real server on 127.0.0.1 with the library runtime (finetune: false): binary versions
// trained with validation sets, each report checked against the server's own predictions on the same texts, and a
// new version compared with the live one on the live one's validation set.
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

    // Refusals: unknown version, a version without a validation set, a version not trained yet.
    expect((await call('GET', `/v2/models/${id}/evaluation?version=9`)).body.error.message).toBe(
      `The model '${id}' has no version 9 (its versions: 1, 2)`,
    );
    const third = await call('POST', `/v2/models/${id}/versions`, request(20, null));
    await settled(`${id}@${third.body.version}`);
    expect(await call('GET', `/v2/models/${id}/evaluation?version=3`)).toEqual({
      status: 404,
      body: {
        error: expect.objectContaining({
          message: `Version 3 of '${id}' was trained without a validation set: send 'validation' with the train request for a report`,
        }),
      },
    });
    expect((await call('GET', `/v2/models/${id}/evaluation?version=0`)).status).toBe(400);
  },
);
