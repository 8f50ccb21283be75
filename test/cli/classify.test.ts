// `svc classify` as a real process against a real `svc serve` on 127.0.0.1: examples from a CSV file,
// zero-shot from names, and usage and service errors with their exit codes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { imdbExamples } from '../_support/examples.js';
import { svc, useServedOrg } from '../_support/cli.js';

const { dir, env } = useServedOrg('svc-cli-classify-');

describe('svc classify', () => {
  it('labels texts by a file of examples, and zero-shot by names, printing the /v2/classify answer', async () => {
    const file = join(dir, 'examples.csv');
    const quote = (text: string) => `"${text.replaceAll('"', '""')}"`;
    writeFileSync(
      file,
      `text,label\n${imdbExamples(0, 10)
        .map((r) => `${quote(r.text)},${r.label ? 1 : 0}`)
        .join('\n')}\n`,
    );
    const texts = ['An absolutely wonderful, moving film. I loved every minute.', 'Terrible, boring and a complete waste of time.'];
    const labelled = await svc(['classify', '--examples', file, '--label-text', 'positive', '--explain', '1', ...texts], env);
    expect(labelled.code).toBe(0);
    const answer = JSON.parse(labelled.stdout) as {
      model: string;
      label_text: string;
      zero_shot: boolean;
      predictions: { label: boolean; nearest: unknown[] }[];
    };
    expect([answer.model, answer.label_text, answer.zero_shot]).toEqual(['svc-small', 'positive', false]);
    expect(answer.predictions.map((p) => [p.label, p.nearest.length])).toEqual([
      [true, 1],
      [false, 1],
    ]);

    const zero = await svc(['classify', '--labels', 'sports,economy', 'The striker scored twice in the final.'], env);
    expect(zero.code).toBe(0);
    expect(JSON.parse(zero.stdout)).toMatchObject({
      task_type: 'multi-class-classification',
      zero_shot: true,
      predictions: [{ label: 'sports' }],
    });
  });

  it('sends --threshold: binary zero-shot answers by it, and predict passes it on to the service', async () => {
    const args = ['classify', '--label-text', 'billing question', 'Why was I charged twice?', 'My parcel is late'];
    const labels = (stdout: string) => (JSON.parse(stdout) as { predictions: { label: boolean }[] }).predictions.map((p) => p.label);
    const plain = await svc(args, env);
    expect(plain.code).toBe(0);
    expect(labels(plain.stdout)).toEqual([true, false]);
    const low = await svc([...args.slice(0, 3), '--threshold', '0.01', ...args.slice(3)], env);
    expect(low.code).toBe(0);
    expect(labels(low.stdout)).toEqual([true, true]);
    // The service checks the value before it looks the model up: the flag reached the predict body.
    const predict = await svc(['predict', '--model', 'svc-small-000000000000', '--threshold', '1.5', 'text'], env);
    expect(predict.code).toBe(1);
    expect(predict.stderr).toContain('threshold');
  });

  it('says what is missing (exit 2) and passes on the service refusal (exit 1)', async () => {
    const missing = await svc(['classify', 'text'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--examples <file>, --labels or --label-text is required');
    const refused = await svc(['classify', '--labels', 'sports,economy', '--explain', '1.5', 'text'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('explain must be an integer');
  });
});
