// `svc models list` and `svc models show` against a real `svc serve` child, and the GET /v2/models they read:
// two binary models are told apart by their label_text, a multi-class one by its labels, and a model still
// training is listed with its status instead of missing.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { svc, useServedOrg } from '../_support/cli.js';

const { dir, env } = useServedOrg('svc-models-list-');

/** `svc <args>` that must succeed: its stdout (stderr has `--wait`'s progress lines). */
async function ok(args: string[]): Promise<string> {
  const result = await svc(args, env);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

/** A table's lines as cells: columns are separated by two spaces or more. */
function cells(table: string): string[][] {
  return table
    .trimEnd()
    .split('\n')
    .map((line) => line.split(/ {2,}/));
}

describe('svc models list and show', () => {
  it('show each model with its status, task and label names, a training one too', async () => {
    const billing = JSON.parse(await ok(['train', '--examples', 'examples/train.jsonl', '--frozen', '--wait'])) as { id: string };
    const tickets = JSON.parse(await ok(['train', '--examples', 'examples/support-tickets.json', '--frozen', '--wait'])) as {
      id: string;
      labels: string[];
    };
    // Fine-tuned with the default rounds: tens of seconds, so it is still training when listed just after.
    const yelp = uciSentences('yelp');
    const rows = [...yelp.filter((r) => r.label).slice(0, 12), ...yelp.filter((r) => !r.label).slice(0, 12)];
    const file = join(dir, 'reviews.jsonl');
    writeFileSync(file, rows.map((r) => JSON.stringify({ text: r.text, label: r.label, label_text: 'positive review' })).join('\n'));
    const reviews = JSON.parse(await ok(['train', '--examples', file])) as { id: string; status: string; label_text: string };
    expect([reviews.status, reviews.label_text]).toEqual(['training', 'positive review']);

    const listed = await fetch(`${env.SVC_URL}/v2/models`, { headers: { authorization: `Bearer ${env.SVC_KEY}` } });
    const { data } = (await listed.json()) as { data: { id: string; status: string; label_text?: string; labels?: string[] }[] };
    expect(data.map(({ id, status, label_text, labels }) => ({ id, status, label_text, labels }))).toEqual([
      { id: billing.id, status: 'trained', label_text: 'billing question', labels: undefined },
      { id: tickets.id, status: 'trained', label_text: undefined, labels: tickets.labels },
      { id: reviews.id, status: 'training', label_text: 'positive review', labels: undefined },
    ]);
    expect(tickets.labels.length).toBeGreaterThan(1);

    expect(cells(await ok(['models', 'list']))).toEqual([
      ['ID', 'STATUS', 'TASK', 'LABELS'],
      [billing.id, 'trained', 'binary', 'billing question'],
      [tickets.id, 'trained', 'multi-class', tickets.labels.join(', ')],
      [reviews.id, 'training', 'binary', 'positive review'],
    ]);
    const json = JSON.parse(await ok(['models', 'list', '--json'])) as { object: string; data: { id: string; status: string }[] };
    expect([json.object, json.data.map((m) => m.id)]).toEqual(['list', [billing.id, tickets.id, reviews.id]]);

    expect(JSON.parse(await ok(['models', 'show', billing.id]))).toMatchObject({
      id: billing.id,
      status: 'trained',
      task_type: 'binary-classification',
      label_text: 'billing question',
    });
  }, 120_000);
});
