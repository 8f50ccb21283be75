// Durable training: `svc serve` killed with SIGKILL in the middle of a training job runs
// the job again after restart, and the model reaches `trained`.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { readManifest } from '../../src/model/directory.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { exited, serve, svc } from '../_support/cli.js';
import { kLevelSlowdown } from '../_support/level.js';

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(20, 30), ...imdb.filter((r) => !r.label).slice(20, 30)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive',
}));
const dir = mkdtempSync(join(tmpdir(), 'svc-restart-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function call(url: string, key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

describe('a training job interrupted by SIGKILL', () => {
  it('runs again after restart and the model reaches trained', async () => {
    expect((await svc(['orgs', 'create', 'acme', '--data', dir])).code).toBe(0);
    const key = (await svc(['keys', 'create', '--org', 'acme', '--data', dir])).stdout.trim();

    const first = await serve(['--data', dir]);
    const body = { model: 'svc-small', task_type: 'binary-classification', examples, num_iterations: 4 };
    const model = await call(first.url, key, 'POST', '/v2/train', body);
    const id = model.id as string;
    // Kill as soon as the job reports that it is working.
    let progress: Record<string, unknown> = {};
    for (let i = 0; i < 500 && progress.stage == null && progress.status !== 'trained'; i += 1) {
      progress = await call(first.url, key, 'GET', `/v2/models/${id}/progress`);
    }
    expect(progress).toMatchObject({ status: 'training', stage: 'finetune', total: 10 });
    first.child.kill('SIGKILL');
    expect(await exited(first.child)).toBe('SIGKILL');
    // The dead server's lock stays behind; the next one takes it over.
    expect(existsSync(join(dir, 'serve.pid'))).toBe(true);

    const store = SqliteStore.open(dir);
    expect([(await store.getModel(id))?.status, (await store.getJob(id))?.state]).toEqual(['training', 'running']);
    await store.close();

    const second = await serve(['--data', dir]);
    let current = await call(second.url, key, 'GET', `/v2/models/${id}`);
    for (let i = 0; i < 600 * kLevelSlowdown && current.status === 'training'; i += 1) {
      await new Promise((r) => setTimeout(r, 100));
      current = await call(second.url, key, 'GET', `/v2/models/${id}`);
    }
    // The metrics are the ones the manifest the second run wrote holds.
    const { metrics } = await readManifest(join(dir, 'hub', 'acme', id));
    expect(current).toEqual({ ...model, status: 'trained', metrics });
    const predicted = await call(second.url, key, 'POST', '/v2/predict', { model: id, inputs: ['A wonderful, moving film.'] });
    expect((predicted.predictions as unknown[]).length).toBe(1);

    // SIGTERM: a clean shutdown with exit code 0.
    second.child.kill('SIGTERM');
    expect(await exited(second.child)).toBe(0);
    expect(second.output()).toContain('svc: SIGTERM, shutting down');
    expect(existsSync(join(dir, 'serve.pid'))).toBe(false);
    const after = SqliteStore.open(dir);
    expect(await after.getJob(id)).toMatchObject({ state: 'done', attempts: 2 });
    await after.close();
  });
});
