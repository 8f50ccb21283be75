import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { parseCsv, readExamplesFile } from '../../src/cli/examples-file.js';
import { kRepoRoot } from '../_support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-examples-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `body` to a file in the temporary folder and returns its path. */
function file(name: string, body: string): string {
  writeFileSync(join(dir, name), body);
  return join(dir, name);
}

describe('examples files', () => {
  it('reads multi-class labels as class names and multi-label labels as lists (CSV: separated by |)', async () => {
    const csv = file('classes.csv', 'text,label\n"Refund, please",billing\nApp crashes, bug \n');
    expect(await readExamplesFile(csv, undefined, 'multi-class-classification')).toEqual([
      { text: 'Refund, please', label: 'billing' },
      { text: 'App crashes', label: 'bug' },
    ]);
    const jsonl = file('classes.jsonl', '{"text":"Refund","label":"billing"}\n{"text":"Crash","label":true}\n');
    await expect(readExamplesFile(jsonl, undefined, 'multi-class-classification')).rejects.toThrow(`${jsonl}:2: label must name the class`);
    await expect(readExamplesFile(csv, 'spam', 'multi-class-classification')).rejects.toThrow(
      '--label-text is for binary classifiers; multi-class-classification examples name their class',
    );
    const tags = file('tags.csv', 'text;labels\nSlow and pricey;speed| price\nFine;\n');
    expect(await readExamplesFile(tags, undefined, 'multi-label-classification')).toEqual([
      { text: 'Slow and pricey', labels: ['speed', 'price'] },
      { text: 'Fine', labels: [] },
    ]);
    const body = file('tags.json', '{"examples":[{"text":"Slow","labels":["speed"]},{"text":"Odd","labels":"speed"}]}');
    await expect(readExamplesFile(body, undefined, 'multi-label-classification')).rejects.toThrow(
      `${body}: examples[1]: labels must be a list of label names (in CSV: separated by '|')`,
    );
  });

  it('parses RFC 4180 CSV: quoted commas, doubled quotes, line breaks inside quotes, CRLF; rows know their first line', () => {
    expect(parseCsv('text,label\r\n"Hello, world",1\r\n"She said ""no""\nand left",0\n\nlast,1\n', ',', 'f.csv')).toEqual([
      { fields: ['text', 'label'], line: 1 },
      { fields: ['Hello, world', '1'], line: 2 },
      { fields: ['She said "no"\nand left', '0'], line: 3 },
      { fields: ['last', '1'], line: 6 },
    ]);
  });

  it('reads JSONL and CSV with --label-text or a label_text column', async () => {
    const jsonl = file('a.jsonl', '{"text":"great","label":true}\n\n{"text":"bad","label":0}\n');
    expect(await readExamplesFile(jsonl, 'positive')).toEqual([
      { text: 'great', label: true, label_text: 'positive' },
      { text: 'bad', label: false, label_text: 'positive' },
    ]);
    const csv = file('b.csv', 'label,text,label_text\nyes,"fine, really",spam\nno,meh,spam\n');
    expect(await readExamplesFile(csv, undefined)).toEqual([
      { text: 'fine, really', label: true, label_text: 'spam' },
      { text: 'meh', label: false, label_text: 'spam' },
    ]);
    await expect(readExamplesFile(jsonl, undefined)).rejects.toThrow(`${jsonl}:1: no label_text; pass --label-text "..."`);
    const maybe = file('c.csv', 'text,label\nok,maybe\n');
    await expect(readExamplesFile(maybe, 'p')).rejects.toThrow(
      `${maybe}:2: label must be true/false, 1/0 or yes/no, got 'maybe' (class names? pass --task-type multi-class-classification)`,
    );
  });

  it('names the line of a quote that never closes instead of swallowing the rest of the file', async () => {
    const path = file('open.csv', 'text,label\n"fine",1\n\n"She said ""hi"" and left,0\nnext,1\nlast,0\n');
    await expect(readExamplesFile(path, 'p')).rejects.toThrow(
      `${path}:4: this row opens a quoted field that never closes (a missing '"'?)`,
    );
    // After a multi-line field, the error still names the line the broken row starts on.
    const later = file('later.csv', 'text,label\n"two\nlines",1\n"oops,0\n');
    await expect(readExamplesFile(later, 'p')).rejects.toThrow(`${later}:4: this row opens a quoted field`);
    // A quote inside an unquoted field is text, as spreadsheets write it.
    expect(await readExamplesFile(file('inner.csv', 'text,label\nthe "best" soup,1\n'), 'p')).toEqual([
      { text: 'the "best" soup', label: true, label_text: 'p' },
    ]);
  });

  it('detects semicolon and tab delimiters from the header; .tsv is tab-separated', async () => {
    const expected = [
      { text: 'Soup, bread; wine', label: true, label_text: 'p' },
      { text: 'cold, late', label: false, label_text: 'p' },
    ];
    expect(await readExamplesFile(file('semi.csv', 'text;label\n"Soup, bread; wine";1\ncold, late;0\n'), 'p')).toEqual(expected);
    expect(await readExamplesFile(file('tab.csv', '"label"\t"text"\n1\tSoup, bread; wine\n0\tcold, late\n'), 'p')).toEqual(expected);
    expect(await readExamplesFile(file('t.tsv', 'text\tlabel\nSoup, bread; wine\t1\ncold, late\t0\n'), 'p')).toEqual(expected);
    // Neither .csv nor JSON: read as CSV.
    expect(await readExamplesFile(file('plain.txt', 'text;label\n"Soup, bread; wine";yes\ncold, late;no\n'), 'p')).toEqual(expected);

    const noHeader = file('nohead.csv', 'sentence,label\na,1\n');
    await expect(readExamplesFile(noHeader, 'p')).rejects.toThrow(
      `${noHeader}:1: the header names 'sentence', 'label'; it must name the columns 'text' and 'label' (or 'labels'), ` +
        "and may name 'label_text', separated by commas, semicolons or tabs",
    );
    const extra = file('extra.csv', 'text,label\na,1\nsoup, bread,1\n');
    await expect(readExamplesFile(extra, 'p')).rejects.toThrow(
      `${extra}:3: expected 2 fields, found 3 (quote a text that contains the comma delimiter)`,
    );
  });

  it('echoes a header or an example with a misspelt column, with the expected names and what it was likely meant as', async () => {
    const expected =
      "it must name the columns 'text' and 'label' (or 'labels'), and may name 'label_text', separated by commas, semicolons or tabs";
    const typos = file('typos.csv', 'txt,lable\nfine,1\n');
    await expect(readExamplesFile(typos, 'p')).rejects.toThrow(
      `${typos}:1: the header names 'txt', 'lable' (did you mean 'text' for 'txt', 'label' for 'lable'?); ${expected}`,
    );
    // Read by the delimiter that splits the header most, so the typo is one of its names; known names are kept.
    const semicolons = file('semi-typo.csv', 'Text;Label_Txt;lavel\nfine;p;1\n');
    await expect(readExamplesFile(semicolons, undefined)).rejects.toThrow(
      `${semicolons}:1: the header names 'text', 'label_txt', 'lavel' (did you mean 'label_text' for 'label_txt', 'label' for 'lavel'?); ${expected}`,
    );
    const tsv = file('typo.tsv', 'text\tlabl\nfine\t1\n');
    await expect(readExamplesFile(tsv, 'p')).rejects.toThrow(
      `${tsv}:1: the header names 'text', 'labl' (did you mean 'label' for 'labl'?); ${expected}`,
    );

    const needs = "it needs 'text' and 'label' (or 'labels'), and may have 'label_text'";
    const jsonl = file('typos.jsonl', '{"text":"fine","label":true}\n{"txt":"bad","label":false}\n');
    await expect(readExamplesFile(jsonl, 'p')).rejects.toThrow(
      `${jsonl}:2: the example has the fields 'txt', 'label' (did you mean 'text' for 'txt'?); ${needs}`,
    );
    const body = file('typos.json', '{"examples":[{"text":"fine","lable":true}]}');
    await expect(readExamplesFile(body, 'p')).rejects.toThrow(
      `${body}: examples[0]: the example has the fields 'text', 'lable' (did you mean 'label' for 'lable'?); ${needs}`,
    );
    const empty = file('empty-object.jsonl', '{}\n');
    await expect(readExamplesFile(empty, 'p')).rejects.toThrow(`${empty}:1: the example has no fields; ${needs}`);
  });

  it('accepts the JSON body POST /v2/train takes, and a JSON array of examples', async () => {
    const body = {
      model: 'svc-small',
      task_type: 'binary-classification',
      examples: [
        { text: 'A moving story.', label: true, label_text: 'positive review' },
        { text: 'Two hours lost.', label: false, label_text: 'positive review' },
      ],
    };
    expect(await readExamplesFile(file('train.json', JSON.stringify(body, null, 2)), undefined)).toEqual(body.examples);
    expect(
      await readExamplesFile(
        file('array.json', JSON.stringify(body.examples.map(({ text, label }) => ({ text, label })))),
        'positive review',
      ),
    ).toEqual(body.examples);
    const notArray = file('bad.json', '{"examples": {"text": "x"}}');
    await expect(readExamplesFile(notArray, 'p')).rejects.toThrow(`${notArray}: examples must be an array of { "text", "label" } objects`);
    const badItem = file('item.json', '[{"text": "x", "label": 1}, "y"]');
    await expect(readExamplesFile(badItem, 'p')).rejects.toThrow(`${badItem}: examples[1]: must be an object { "text", "label" }`);
    const badText = file('text.json', '{"examples": [{"text": 3, "label": 1}]}');
    await expect(readExamplesFile(badText, 'p')).rejects.toThrow(`${badText}: examples[0]: text must be a string`);
    const badLine = file('line.jsonl', '{"text":"x","label":1}\n[1]\n');
    await expect(readExamplesFile(badLine, 'p')).rejects.toThrow(
      `${badLine}:2: not a JSON object; expected JSONL (one {"text", "label"} object per line), a JSON array or {"examples": [...]}, or CSV with text and label columns`,
    );
  });

  it('the shipped examples/ files hold the same 24 examples, 12 of each label', async () => {
    const examples = join(kRepoRoot, 'examples');
    const jsonl = await readExamplesFile(join(examples, 'train.jsonl'), undefined);
    expect([jsonl.length, jsonl.filter((e) => e.label).length, new Set(jsonl.map((e) => e.label_text))]).toEqual([
      24,
      12,
      new Set(['billing question']),
    ]);
    expect(await readExamplesFile(join(examples, 'train.json'), undefined)).toEqual(jsonl);
    expect(await readExamplesFile(join(examples, 'train.csv'), 'billing question')).toEqual(jsonl);
  });
});
