// `svc train --examples <file>`: what a body file sends, and how flags override it (trainBody), with the
// reasons a wrong command line is refused for.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { kTrainUsage, trainBody } from '../../src/cli/client.js';
import { readTrainFile } from '../../src/cli/examples-file.js';
import { svc } from '../_support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-train-body-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const classes = ['amazon', 'imdb', 'yelp'];
const examples = classes.flatMap((label) => Array.from({ length: 8 }, (_, i) => ({ text: `${label} text ${i}`, label })));
const validation = classes.map((label) => ({ text: `${label} held out`, label }));
const bodyFile = join(dir, 'body.json');
writeFileSync(
  bodyFile,
  JSON.stringify({
    model: 'svc-small',
    task_type: 'multi-class-classification',
    finetune: false,
    num_iterations: 5,
    class_weight: 'balanced',
    examples,
    validation,
  }),
);

describe('svc train body files', () => {
  it('keeps every field of a /v2/train body: task_type, finetune, num_iterations, class_weight, validation', async () => {
    const file = await readTrainFile(bodyFile, undefined);
    expect(trainBody(file, {})).toEqual({
      model: 'svc-small',
      task_type: 'multi-class-classification',
      examples,
      validation,
      finetune: false,
      num_iterations: 5,
      class_weight: 'balanced',
    });
  });

  it('sends the unlabeled texts of a body file, for self-training', async () => {
    const withTexts = join(dir, 'unlabeled.json');
    writeFileSync(withTexts, JSON.stringify({ task_type: 'multi-class-classification', examples, unlabeled: ['a text', 'another'] }));
    const file = await readTrainFile(withTexts, undefined);
    expect(trainBody(file, {})).toEqual({
      model: 'svc-small',
      task_type: 'multi-class-classification',
      examples,
      unlabeled: ['a text', 'another'],
    });
  });

  it('lets each flag override the field it sets', async () => {
    const file = await readTrainFile(bodyFile, undefined, 'multi-class-classification');
    expect(trainBody(file, { finetune: 'adapter', rank: '4', 'num-iterations': '8', model: 'svc-small' })).toMatchObject({
      finetune: { method: 'adapter', rank: 4 },
      num_iterations: 8,
      validation,
    });
    const withFinetune = { ...file, fields: { ...file.fields, finetune: { method: 'full' } } };
    expect(trainBody(withFinetune, { frozen: true }).finetune).toBe(false);
  });

  it('a plain examples file sends only what the flags say', async () => {
    const jsonl = join(dir, 'plain.jsonl');
    writeFileSync(jsonl, examples.map((e) => JSON.stringify(e)).join('\n'));
    const file = await readTrainFile(jsonl, undefined, 'multi-class-classification');
    expect(trainBody(file, {})).toEqual({ model: 'svc-small', task_type: 'multi-class-classification', examples });
  });

  it('refuses --balanced on a binary model with the reason', async () => {
    const binary = join(dir, 'binary.jsonl');
    writeFileSync(binary, '{"text":"a","label":true,"label_text":"p"}\n');
    const file = await readTrainFile(binary, undefined);
    expect(() => trainBody(file, { balanced: true })).toThrow(
      `--balanced weighs classes of a multi-class or multi-label model; this one is binary-classification\n${kTrainUsage}`,
    );
  });
});

describe('svc train command lines', () => {
  const pointer = "Run 'svc train --help' for its options and examples.\n";
  it.each([
    [
      ['--examples', bodyFile, '--task-type', 'bogus'],
      "--task-type must be one of binary-classification, multi-class-classification, multi-label-classification; got 'bogus'",
    ],
    [['--examples', bodyFile, '--finetune', 'half'], "--finetune must be adapter or full; got 'half'"],
    [['--examples', bodyFile, '--rank', '4'], "--rank is the adapter's rank: it needs --finetune adapter"],
    [['--examples', bodyFile, '--num-iterations', '0'], "--num-iterations must be a positive integer; got '0'"],
    [['--examples', bodyFile, '--frozen', '--finetune', 'full'], '--frozen and --finetune contradict each other: pick one'],
  ])('svc train %j exits 2 with its reason', async (args, reason) => {
    expect(await svc(['train', ...args], { SVC_KEY: 'svc_x', SVC_URL: 'http://127.0.0.1:9' })).toEqual({
      code: 2,
      stdout: '',
      stderr: `svc train: ${reason}\n${kTrainUsage}\n${pointer}`,
    });
  });

  it('says a missing --examples file and a folder plainly', async () => {
    const env = { SVC_KEY: 'svc_x', SVC_URL: 'http://127.0.0.1:9' };
    const missing = join(dir, 'nope.jsonl');
    expect(await svc(['train', '--examples', missing], env)).toEqual({
      code: 1,
      stdout: '',
      stderr: `svc train: ${missing}: no such file (--examples takes a JSONL, CSV or JSON file)\n`,
    });
    expect(await svc(['train', '--examples', dir], env)).toEqual({
      code: 1,
      stdout: '',
      stderr: `svc train: ${dir} is a folder; --examples takes a file (JSONL, CSV or JSON)\n`,
    });
  });

  it('a multi-class CSV without --task-type points to --task-type, not --label-text', async () => {
    const csv = join(dir, 'classes.csv');
    writeFileSync(csv, `text,label\n${examples.map((e) => `${e.text},${e.label}`).join('\n')}\n`);
    expect(await svc(['train', '--examples', csv], { SVC_KEY: 'svc_x', SVC_URL: 'http://127.0.0.1:9' })).toEqual({
      code: 1,
      stdout: '',
      stderr: `svc train: ${csv}:2: label must be true/false, 1/0 or yes/no, got 'amazon' (class names? pass --task-type multi-class-classification)\n`,
    });
  });
});
