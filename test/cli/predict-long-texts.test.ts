// `svc train --truncate` and `svc predict --truncate --explain` as real processes against a real
// `svc serve` child over a temporary data directory.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { exited, serve, svc } from '../_support/cli.js';
import { kExplainTextChars } from '../../src/contract/long-texts.js';

const imdb = uciSentences('imdb');
const rows = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)];
// About 400 words of reviews: three windows of 160 words, more than the 256 tokens read.
const long = imdb
  .slice(300, 400)
  .map((r) => r.text)
  .join(' ')
  .split(' ')
  .slice(0, 400)
  .join(' ');
const dir = mkdtempSync(join(tmpdir(), 'svc-cli-long-'));
let server: Awaited<ReturnType<typeof serve>>;
let env: Record<string, string>;

beforeAll(async () => {
  await svc(['orgs', 'create', 'acme', '--data', join(dir, 'data')]);
  const key = (await svc(['keys', 'create', '--org', 'acme', '--data', join(dir, 'data')])).stdout.trim();
  server = await serve(['--data', join(dir, 'data'), '--predict-deadline-ms', '120000']);
  env = { SVC_URL: server.url, SVC_KEY: key };
});

afterAll(async () => {
  server?.child.kill('SIGTERM');
  if (server) await exited(server.child);
  rmSync(dir, { recursive: true, force: true });
});

describe('svc train --truncate, svc predict --truncate --explain', () => {
  it('trains on examples read in chunks, then predicts with chunks and the nearest examples', async () => {
    const file = join(dir, 'examples.jsonl');
    const examples = [...rows.map((r) => ({ text: r.text, label: r.label })), { text: long, label: true }];
    writeFileSync(file, examples.map((e) => JSON.stringify(e)).join('\n'));
    const refused = await svc(['train', '--examples', file, '--label-text', 'positive', '--frozen', '--truncate', 'none'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("examples[20].text is longer than the 256 tokens svc-small reads (truncate: 'none')");

    const trained = await svc(['train', '--examples', file, '--label-text', 'positive', '--frozen', '--truncate', 'chunks', '--wait'], env);
    expect(trained.code).toBe(0);
    const model = JSON.parse(trained.stdout) as { id: string; status: string };
    expect(model.status).toBe('trained');

    const predicted = await svc(['predict', '--model', model.id, '--truncate', 'chunks', '--explain', '2', 'A wonderful film.', long], env);
    expect(predicted.code).toBe(0);
    const body = JSON.parse(predicted.stdout) as {
      predictions: { label: boolean; chunks: number; nearest: { text: string; text_truncated?: true; similarity: number }[] }[];
    };
    expect(body.predictions.map((p) => [p.chunks, p.nearest.length])).toEqual([
      [1, 2],
      [3, 2],
    ]);
    // The long text is its own nearest example, cut to what an explanation carries.
    expect(long.length).toBeGreaterThan(kExplainTextChars);
    expect(body.predictions[1].nearest[0]).toMatchObject({ text: long.slice(0, kExplainTextChars), text_truncated: true });

    const bad = await svc(['predict', '--model', model.id, '--explain', '1.5', 'A wonderful film.'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('explain must be an integer');
  }, 240_000);
});
