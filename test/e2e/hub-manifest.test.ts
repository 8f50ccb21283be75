// The hub's manifest.json of a version through a real server on 127.0.0.1 with the library runtime (finetune: false):
// after version 2 is promoted, `main/manifest.json` names the classifier's public id and `version: 2` (it named the
// store's key for version 2, `<id>.v2`, which every route refuses), and that name predicts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { startServer } from '../../src/server/app.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-hub-manifest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("names the public id and the version in each revision's manifest.json", { timeout: 180_000 * kLevelSlowdown }, async () => {
  const server = await startServer({ dataDir: dir, port: 0, logLevel: 'silent', proxy: false, pool: { workers: 1, engineThreads: 1 } });
  try {
    await server.service.createOrganization('acme');
    const key = (await server.service.createApiKey('acme')).key;
    const call = async (method: string, path: string, body?: unknown) => {
      const { status, text } = await httpCall(server.url, method, path, key, body);
      return { status, body: JSON.parse(text) as Record<string, unknown> };
    };
    const body = (from: number) => ({
      model: 'svc-small',
      task_type: 'binary-classification',
      finetune: false,
      examples: imdbExamples(from, 10),
    });
    const id = (await call('POST', '/v2/train', body(0))).body.id as string;
    await server.service.idle();
    await call('POST', `/v2/models/${id}/versions`, body(10));
    await server.service.idle();
    expect((await call('POST', `/v2/models/${id}/promote`, { version: 2 })).body).toMatchObject({ id: `${id}@2`, live: true });

    const manifest = async (revision: string) => {
      const { status, text } = await httpCall(server.url, 'GET', `/hub/acme/${id}/resolve/${revision}/manifest.json`, key);
      const parsed = JSON.parse(text) as { id: string; version: number; task_type: string; label_text: string };
      return { status, id: parsed.id, version: parsed.version, task_type: parsed.task_type, label_text: parsed.label_text };
    };
    const named = { id, task_type: 'binary-classification', label_text: 'positive', status: 200 };
    expect([await manifest('main'), await manifest('v2'), await manifest('v1')]).toEqual([
      { ...named, version: 2 },
      { ...named, version: 2 },
      { ...named, version: 1 },
    ]);
    const live = await manifest('main');
    const predicted = await call('POST', '/v2/predict', { model: `${live.id}@${live.version}`, inputs: ['A wonderful, moving film.'] });
    expect({ status: predicted.status, model: predicted.body.model }).toEqual({ status: 200, model: `${id}@2` });
  } finally {
    await server.close();
  }
});
