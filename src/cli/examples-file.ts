import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';

import type { TrainExample } from '../train/request.js';

/** A label as a file may write it: true/false, 1/0, yes/no (any case). */
function parseLabel(value: unknown, where: string): boolean {
  if (typeof value === 'boolean') return value;
  const text = String(value).trim().toLowerCase();
  if (['true', '1', 'yes'].includes(text)) return true;
  if (['false', '0', 'no'].includes(text)) return false;
  throw new Error(`${where}: label must be true/false, 1/0 or yes/no, got '${String(value)}'`);
}

/** RFC 4180 rows: quoted fields may hold commas, quotes ("") and line breaks. */
export function parseCsv(source: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < source.length; i += 1) {
    const c = source[i];
    if (quoted) {
      if (c === '"' && source[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && source[i + 1] === '\n') i += 1;
      row.push(field);
      if (row.some((f) => f.length > 0)) rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  row.push(field);
  if (row.some((f) => f.length > 0)) rows.push(row);
  return rows;
}

/**
 * Reads training examples from a `.jsonl` file (one `{ "text", "label" }` per
 * line) or a `.csv` file with a header naming `text` and `label` columns.
 * `label_text` comes from `labelText`, else from each row's own `label_text`.
 */
export async function readExamplesFile(path: string, labelText: string | undefined): Promise<TrainExample[]> {
  const source = await readFile(path, 'utf8');
  const rows: { text: unknown; label: unknown; label_text?: unknown; where: string }[] = [];
  if (extname(path).toLowerCase() === '.csv') {
    const [header, ...body] = parseCsv(source);
    const column = (name: string) => header?.findIndex((h) => h.trim().toLowerCase() === name) ?? -1;
    const [text, label, text2] = [column('text'), column('label'), column('label_text')];
    if (text < 0 || label < 0) throw new Error(`${path}: the header must name the columns 'text' and 'label'`);
    body.forEach((r, i) =>
      rows.push({ text: r[text], label: r[label], label_text: text2 >= 0 ? r[text2] : undefined, where: `${path}:${i + 2}` }),
    );
  } else {
    source.split(/\r?\n/).forEach((line, i) => {
      if (line.trim().length === 0) return;
      let value: { text?: unknown; label?: unknown; label_text?: unknown };
      try {
        value = JSON.parse(line) as typeof value;
      } catch {
        throw new Error(`${path}:${i + 1}: not a JSON object`);
      }
      rows.push({ text: value.text, label: value.label, label_text: value.label_text, where: `${path}:${i + 1}` });
    });
  }
  return rows.map(({ text, label, label_text, where }) => {
    if (typeof text !== 'string') throw new Error(`${where}: text must be a string`);
    const shared = labelText ?? (typeof label_text === 'string' ? label_text : undefined);
    if (shared === undefined) throw new Error(`${where}: no label_text; pass --label-text "..."`);
    return { text, label: parseLabel(label, where), label_text: shared };
  });
}
