// The runnable files in examples/, run as a user runs them: a real `node` process importing the
// package by its name (`svc-classify`, `svc-classify/server`), which resolves to the built dist/.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { exited, expectFreshBundle, kRepoRoot, runNode, startNode } from '../_support/cli.js';
import { kLevelSlowdown } from '../_support/level.js';

const kFastifyApp = join(kRepoRoot, 'examples', 'fastify-app.mjs');
const kListening = /listening on (http:\/\/\S+)/;
const kKeyLine = /^created organization acme; its API key, shown only this once: (svc_[0-9A-Za-z]{32})$/m;

let dataDir: string;

beforeAll(() => {
  expectFreshBundle();
  dataDir = mkdtempSync(join(tmpdir(), 'svc-examples-'));
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function getJson(url: string, key?: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, key === undefined ? {} : { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, body: await response.json() };
}

describe('examples/', () => {
  it('library.mjs trains on train.jsonl with the frozen encoder and labels two new texts', async () => {
    const result = await runNode([join(kRepoRoot, 'examples', 'library.mjs')]);
    expect(result).toEqual({
      code: 0,
      stdout: 'true 0.673 Why was I charged twice this month?\nfalse 0.299 The app will not let me log in.\n',
      stderr: '',
    });
  });

  it(
    'versions.mjs trains two versions, compares them on the same held-out texts and promotes the second when it is as good',
    async () => {
      const result = await runNode([join(kRepoRoot, 'examples', 'versions.mjs')]);
      const [compared, live] = result.stdout.trim().split('\n');
      const [, candidate, current] = /^version 2: F1 (\d\.\d\d) vs live version 1: (\d\.\d\d)$/.exec(compared)!;
      expect(live).toBe(`live: version ${Number(candidate) >= Number(current) ? 2 : 1}; "true" for a billing question`);
      expect([result.code, result.stderr]).toEqual([0, '']);
    },
    120_000 * kLevelSlowdown,
  );

  it(
    'the samples are sets svc-small is good at: each task type, with the frozen encoder',
    async () => {
      // The README's first impression: what training reports (cross-validated) and what it says on new texts.
      const script = `
      import { readFileSync } from 'node:fs';
      import { closePool, train } from 'svc-classify';
      const runs = [
        ['train.json', ['Why was I charged twice this month?', 'The app will not let me log in.']],
        ['support-tickets.json', ['The parcel never arrived.', 'I was billed for a plan I never ordered.', 'The app crashes when I log in.', 'How do I change my username?']],
        ['review-topics.json', ['Solid and well made.', 'Expensive, and it broke in a week.']],
      ];
      for (const [file, texts] of runs) {
        const body = JSON.parse(readFileSync(${JSON.stringify(join(kRepoRoot, 'examples'))} + '/' + file, 'utf8'));
        const classifier = await train({ ...body, finetune: false });
        const { cv_accuracy, cv_macro_f1 } = classifier.metrics;
        const answers = (await classifier.predict(texts)).map((p) => p.labels ?? p.label);
        console.log(JSON.stringify({ file, cv_accuracy, cv_macro_f1, answers }));
      }
      await closePool();`;
      const result = await runNode(['--input-type=module', '-e', script]);
      expect(result.code, result.stderr).toBe(0);
      const [binary, multiClass, multiLabel] = result.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(binary).toMatchObject({ file: 'train.json', answers: [true, false] });
      expect(binary.cv_accuracy).toBeGreaterThanOrEqual(0.9);
      expect(multiClass).toMatchObject({ file: 'support-tickets.json', answers: ['shipping', 'billing', 'technical', 'account'] });
      expect(multiClass.cv_accuracy).toBeGreaterThanOrEqual(0.9);
      // Multi-label accuracy needs the whole label set right; macro-F1 scores each label.
      expect(multiLabel).toMatchObject({ file: 'review-topics.json', answers: [['quality'], ['price', 'quality']] });
      expect(multiLabel.cv_macro_f1).toBeGreaterThanOrEqual(0.75);
    },
    300_000 * kLevelSlowdown,
  );

  it('the README shows both programs exactly as they are in examples/', () => {
    const readme = readFileSync(join(kRepoRoot, 'README.md'), 'utf8');
    for (const file of ['library.mjs', 'fastify-app.mjs']) {
      expect(readme).toContain('```js\n' + readFileSync(join(kRepoRoot, 'examples', file), 'utf8') + '```\n');
    }
  });

  it('the README fits on a screen (under 250 lines), and its links and those of docs/ name files that exist', () => {
    const readme = readFileSync(join(kRepoRoot, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThan(250);
    const pages = [
      'README.md',
      ...readdirSync(join(kRepoRoot, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const broken = pages.flatMap((page) =>
      [...readFileSync(join(kRepoRoot, page), 'utf8').matchAll(/\]\(([^)\s#]+)(#[^)\s]*)?\)/g)]
        .map((m) => m[1])
        .filter((target) => !/^[a-z]+:/.test(target) && !existsSync(join(kRepoRoot, dirname(page), target)))
        .map((target) => `${page} -> ${target}`),
    );
    expect(broken).toEqual([]);
  });

  it('fastify-app.mjs serves /v2 in a Fastify app and starts again on the same data directory', async () => {
    const env = { PORT: '0', DATA_DIR: dataDir };
    const first = await startNode([kFastifyApp], kListening, { cwd: dataDir, env });
    const key = kKeyLine.exec(first.output())?.[1];
    expect(key).toBeDefined();
    expect(await getJson(`${first.url}/health`)).toEqual({ status: 200, body: { ok: true } });
    expect(await getJson(`${first.url}/v2/models`, key)).toEqual({ status: 200, body: { object: 'list', data: [] } });
    first.child.kill('SIGTERM');
    expect(await exited(first.child)).toBe(0);

    // The second start finds the organization and keeps its key: no new key, no conflict.
    const second = await startNode([kFastifyApp], kListening, { cwd: dataDir, env });
    expect(second.output()).toBe(`listening on ${second.url}\n`);
    expect(await getJson(`${second.url}/v2/models`, key)).toEqual({ status: 200, body: { object: 'list', data: [] } });
    expect(await getJson(`${second.url}/v2/models`, 'svc_wrong')).toEqual({
      status: 401,
      body: { error: { message: 'Invalid API key', type: 'authentication_error', param: null, code: 'authentication' } },
    });
    second.child.kill('SIGTERM');
    expect(await exited(second.child)).toBe(0);
  });
});
