// `svc train --teacher`: the train body its flags and texts file make, and the usage errors it answers.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';

import { parseTextsFile, teacherTrainBody } from '../../src/cli/teacher-train.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-teacher-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('reads a texts file as lines, JSON Lines or a JSON array', () => {
  expect(parseTextsFile('Why was I charged twice?\n\nMy parcel is late\r\n', 'tickets.txt')).toEqual([
    'Why was I charged twice?',
    'My parcel is late',
  ]);
  expect(parseTextsFile('{"text":"a"}\n{"text":"b"}\n', 'tickets.jsonl')).toEqual(['a', 'b']);
  expect(parseTextsFile('["a", "b"]', 'tickets.json')).toEqual(['a', 'b']);
  expect(() => parseTextsFile('{"txt":"a"}', 'tickets.jsonl')).toThrow('tickets.jsonl line 1 has no "text" string');
  expect(() => parseTextsFile('[1]', 'tickets.json')).toThrow('tickets.json must be a JSON array of strings');
});

it('makes the POST /v2/train body of a binary and a multi-class teacher request', async () => {
  const file = join(dir, 'tickets.txt');
  writeFileSync(file, 'Why was I charged twice?\nMy parcel is late\n');
  expect(
    await teacherTrainBody({
      teacher: 'provider-a:gpt-4o-mini',
      project: 'proj_0123456789ab',
      texts: file,
      'label-text': 'billing question',
    }),
  ).toEqual({
    model: 'svc-small',
    task_type: 'binary-classification',
    label_text: 'billing question',
    texts: ['Why was I charged twice?', 'My parcel is late'],
    teacher: { model: 'provider-a:gpt-4o-mini', project_id: 'proj_0123456789ab' },
  });
  expect(
    await teacherTrainBody({
      teacher: 'provider-c:claude-x',
      project: 'proj_0123456789ab',
      texts: file,
      'task-type': 'multi-class-classification',
      labels: 'billing, shipping',
      instructions: 'Support tickets',
      'texts-per-call': '20',
      budget: '40',
      frozen: true,
    }),
  ).toEqual({
    model: 'svc-small',
    task_type: 'multi-class-classification',
    labels: ['billing', 'shipping'],
    texts: ['Why was I charged twice?', 'My parcel is late'],
    teacher: { model: 'provider-c:claude-x', project_id: 'proj_0123456789ab', instructions: 'Support tickets', texts_per_call: 20 },
    select: { budget: 40 },
    finetune: false,
  });
});

it('names the missing or wrong flag', async () => {
  const file = join(dir, 'one.txt');
  writeFileSync(file, 'a\n');
  await expect(teacherTrainBody({ teacher: 'provider-a:x', texts: file, 'label-text': 'y' })).rejects.toThrow(
    /^--teacher needs --project <id>/,
  );
  await expect(teacherTrainBody({ teacher: 'provider-a:x', project: 'p', 'label-text': 'y' })).rejects.toThrow(
    /^--teacher needs --texts <file>/,
  );
  await expect(teacherTrainBody({ teacher: 'provider-a:x', project: 'p', texts: file })).rejects.toThrow(/^--teacher needs --label-text/);
  await expect(
    teacherTrainBody({ teacher: 'provider-a:x', project: 'p', texts: file, 'task-type': 'multi-label-classification' }),
  ).rejects.toThrow(/^--teacher needs --labels a,b,\.\.\. for multi-label-classification/);
  await expect(teacherTrainBody({ teacher: 'provider-a:x', project: 'p', texts: file, 'label-text': 'y', budget: '0' })).rejects.toThrow(
    "--budget must be a positive integer; got '0'",
  );
});
