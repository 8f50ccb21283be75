import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { parseCsv, readExamplesFile } from '../../src/cli/examples-file.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-examples-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('examples files', () => {
  it('parses RFC 4180 CSV: quoted commas, doubled quotes, line breaks inside quotes, CRLF', () => {
    expect(parseCsv('text,label\r\n"Hello, world",1\r\n"She said ""no""\nand left",0\n\n')).toEqual([
      ['text', 'label'],
      ['Hello, world', '1'],
      ['She said "no"\nand left', '0'],
    ]);
  });

  it('reads JSONL and CSV with --label-text or a label_text column', async () => {
    writeFileSync(join(dir, 'a.jsonl'), '{"text":"great","label":true}\n\n{"text":"bad","label":0}\n');
    expect(await readExamplesFile(join(dir, 'a.jsonl'), 'positive')).toEqual([
      { text: 'great', label: true, label_text: 'positive' },
      { text: 'bad', label: false, label_text: 'positive' },
    ]);
    writeFileSync(join(dir, 'b.csv'), 'label,text,label_text\nyes,"fine, really",spam\nno,meh,spam\n');
    expect(await readExamplesFile(join(dir, 'b.csv'), undefined)).toEqual([
      { text: 'fine, really', label: true, label_text: 'spam' },
      { text: 'meh', label: false, label_text: 'spam' },
    ]);
    await expect(readExamplesFile(join(dir, 'a.jsonl'), undefined)).rejects.toThrow(`${join(dir, 'a.jsonl')}:1: no label_text; pass --label-text "..."`);
    writeFileSync(join(dir, 'c.csv'), 'text,label\nok,maybe\n');
    await expect(readExamplesFile(join(dir, 'c.csv'), 'p')).rejects.toThrow(`${join(dir, 'c.csv')}:2: label must be true/false, 1/0 or yes/no, got 'maybe'`);
  });
});
