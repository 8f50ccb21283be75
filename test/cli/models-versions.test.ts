// `svc train --version-of`, `svc models versions|promote|delete` as real processes against a real `svc serve`
// child: retrain a classifier, promote the new version, roll back, delete it.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { exited, serve, svc } from '../_support/cli.js';
import { imdbExamples } from '../_support/examples.js';
import { kLevelSlowdown } from '../_support/level.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-cli-versions-'));
let server: Awaited<ReturnType<typeof serve>>;
let env: Record<string, string>;

beforeAll(async () => {
  await svc(['orgs', 'create', 'acme', '--data', join(dir, 'data')]);
  const key = (await svc(['keys', 'create', '--org', 'acme', '--data', join(dir, 'data')])).stdout.trim();
  server = await serve(['--data', join(dir, 'data'), '--workers', '1', '--engine-threads', '1']);
  env = { SVC_URL: server.url, SVC_KEY: key };
});

afterAll(async () => {
  server?.child.kill('SIGTERM');
  if (server) await exited(server.child);
  rmSync(dir, { recursive: true, force: true });
});

const examplesFile = (name: string, from: number) => {
  const file = join(dir, name);
  writeFileSync(
    file,
    imdbExamples(from, 10)
      .map((e) => JSON.stringify({ text: e.text, label: e.label }))
      .join('\n'),
  );
  return file;
};
const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>;

it(
  'retrains with --version-of, lists the versions, promotes, rolls back and deletes one',
  { timeout: 180_000 * kLevelSlowdown },
  async () => {
    const first = await svc(['train', '--examples', examplesFile('one.jsonl', 0), '--label-text', 'positive', '--frozen', '--wait'], env);
    expect(first.code).toBe(0);
    const id = json(first.stdout).id as string;

    const second = await svc(
      ['train', '--examples', examplesFile('two.jsonl', 10), '--label-text', 'positive', '--frozen', '--version-of', id, '--wait'],
      env,
    );
    expect(second.code).toBe(0);
    // The model object of the new version: not live until promoted.
    expect(json(second.stdout)).toMatchObject({
      id: `${id}@2`,
      object: 'model',
      version: 2,
      live_version: 1,
      status: 'trained',
    });

    const versions = json((await svc(['models', 'versions', id], env)).stdout);
    expect([versions.live_version, (versions.data as { version: number; live: boolean }[]).map((v) => [v.version, v.live])]).toEqual([
      1,
      [
        [1, true],
        [2, false],
      ],
    ]);
    expect(json((await svc(['models', 'promote', id, '2'], env)).stdout)).toMatchObject({ id: `${id}@2`, live: true });
    const shown = json((await svc(['models', 'show', `${id}@2`], env)).stdout);
    expect([shown.id, shown.status]).toEqual([`${id}@2`, 'trained']);
    // Trained without a validation set: the report of its examples' cross-validation.
    const shownMetrics = json((await svc(['models', 'show', `${id}@2`], env)).stdout) as { metrics: { cv_accuracy: number } };
    expect(json((await svc(['models', 'evaluation', `${id}@2`], env)).stdout)).toMatchObject({
      object: 'model.evaluation',
      model: `${id}@2`,
      source: 'cross-validation',
      examples: 20,
      accuracy: shownMetrics.metrics.cv_accuracy,
    });
    const predicted = json((await svc(['predict', '--model', `${id}@1`, 'A wonderful, moving film.'], env)).stdout);
    expect(predicted.model).toBe(`${id}@1`);

    // The live version cannot go; after the rollback, version 2 can, with its hub copy.
    const refused = await svc(['models', 'delete', `${id}@2`], env);
    expect([refused.code, refused.stderr]).toEqual([
      1,
      expect.stringContaining(`Version 2 of '${id}' is live; promote another version before deleting it`),
    ]);
    expect(json((await svc(['models', 'promote', id, '1'], env)).stdout)).toMatchObject({ version: 1, live: true });
    expect(await svc(['models', 'delete', `${id}@2`], env)).toEqual({
      code: 0,
      stdout: `${JSON.stringify({ id: `${id}@2`, object: 'model.version', deleted: true }, null, 2)}\n`,
      stderr: '',
    });
    expect(existsSync(join(dir, 'data', 'hub', 'acme', `${id}.v2`))).toBe(false);
    expect(existsSync(join(dir, 'data', 'hub', 'acme', id))).toBe(true);
    // Version 1 is the model itself: the refusal names the command that deletes it, not an HTTP route.
    expect(await svc(['models', 'delete', `${id}@1`], env)).toEqual({
      code: 1,
      stdout: '',
      stderr:
        `svc models: 409: version 1 holds the model '${id}' itself; delete the model with 'svc models delete ${id}', ` +
        'which removes all its versions\n',
    });

    expect(await svc(['models', 'promote', id], env)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('svc models promote <id> <n>'),
    });
    expect(await svc(['models', 'delete', `${id}@x`], env)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('usage: svc models list'),
    });
  },
);
