// `svc train --examples <file>`: JSONL, CSV/TSV, a JSON array of examples, or the JSON body
// POST /v2/train takes (the README builds one for curl, so people try it here too).
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';

import { CsvError, parse } from 'csv-parse/sync';

import { closestName } from '../did-you-mean.js';
import { SvcError } from '../errors.js';
import { kTaskTypes } from '../contract/train-request.js';
import type { ClassExample, LabelSetExample, TaskType, TrainExample } from '../contract/train-request.js';

/** One example as the file wrote it, with where it came from (`file:line` or `file: examples[3]`). */
interface RawExample {
  text: unknown;
  label: unknown;
  label_text?: unknown;
  labels?: unknown;
  where: string;
}

/** Separates a CSV cell's labels (multi-label): `film|positive`; an empty cell is no label. */
export const kCsvLabelSeparator = '|';

const kDelimiters = [',', ';', '\t'] as const;
const kDelimiterNames: Readonly<Record<string, string>> = { ',': 'comma', ';': 'semicolon', '\t': 'tab' };

function invalid(message: string): SvcError {
  return new SvcError('invalid_request', message);
}

/** A label as a file may write it: true/false, 1/0, yes/no (any case). */
function parseLabel(value: unknown, where: string): boolean {
  if (typeof value === 'boolean') return value;
  const text = String(value).trim().toLowerCase();
  if (['true', '1', 'yes'].includes(text)) return true;
  if (['false', '0', 'no'].includes(text)) return false;
  throw invalid(
    `${where}: label must be true/false, 1/0 or yes/no, got '${String(value)}'` +
      ' (class names? pass --task-type multi-class-classification)',
  );
}

/** The header's column names, split by `delimiter`, unquoted and lower-cased. */
function headerNames(headerLine: string, delimiter: string): string[] {
  return headerLine.split(delimiter).map((name) =>
    name
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .trim()
      .toLowerCase(),
  );
}

/** The fields (JSON) and columns (CSV) an example may have. */
const kExampleFields = ['text', 'label', 'label_text', 'labels'] as const;

/** True when the names hold a text and a label (or labels): what a header or an example object needs. */
function namesAnExample(names: readonly string[]): boolean {
  return names.includes('text') && (names.includes('label') || names.includes('labels'));
}

/** ` (did you mean 'text' for 'txt', 'label' for 'lable'?)` for the names close to a known one; '' for none. */
function suggestFields(names: readonly string[]): string {
  const guesses = names
    .filter((name) => !(kExampleFields as readonly string[]).includes(name))
    .flatMap((name) => {
      const known = closestName(name, kExampleFields);
      return known === undefined || names.includes(known) ? [] : [`'${known}' for '${name}'`];
    });
  return guesses.length === 0 ? '' : ` (did you mean ${guesses.join(', ')}?)`;
}

/** The names as a message lists them: `'txt', 'lable'`. */
const listed = (names: readonly string[]) => names.map((name) => `'${name}'`).join(', ');

/** The refusal of a header without the needed columns: the names it has, those expected, the near misses. */
function headerError(path: string, names: readonly string[]): SvcError {
  return invalid(
    `${path}:1: the header names ${listed(names)}${suggestFields(names)}; it must name the columns 'text' and 'label' ` +
      "(or 'labels'), and may name 'label_text', separated by commas, semicolons or tabs",
  );
}

/**
 * The delimiter that makes the header name both `text` and `label` (or `labels`): comma, semicolon
 * (what spreadsheets write where the comma is the decimal mark) or tab. `.tsv` files are tab-separated.
 */
export function detectDelimiter(source: string, path: string): string {
  if (extname(path).toLowerCase() === '.tsv') return '\t';
  const headerLine = source.replace(/^\uFEFF/, '').split(/\r?\n|\r/, 1)[0];
  const found = kDelimiters.find((d) => namesAnExample(headerNames(headerLine, d)));
  if (found === undefined) {
    // The header as the delimiter that splits it most reads it: a typo is then one of its names.
    const split = kDelimiters.map((d) => headerNames(headerLine, d)).reduce((most, names) => (names.length > most.length ? names : most));
    throw headerError(path, split);
  }
  return found;
}

/** Finds where records begin: the first non-blank line after a given line (lines count from 1). */
function recordStarts(source: string): (after: number) => number {
  const lines = source.split(/\r\n|\n|\r/);
  return (after) => {
    let line = after;
    while (line < lines.length && lines[line].trim().length === 0) line += 1;
    return line + 1;
  };
}

/**
 * CSV rows (RFC 4180: quoted fields hold delimiters, doubled quotes and line breaks), each with the
 * line it starts on. A quote inside an unquoted field is kept as text, as spreadsheets do; a quote
 * that opens a field and never closes is an error naming its line, not the rest of the file swallowed.
 */
export function parseCsv(source: string, delimiter: string, path: string): { fields: string[]; line: number }[] {
  const rows: { fields: string[]; line: number }[] = [];
  const startAfter = recordStarts(source);
  let endOfLast = 0; // the line the last complete record ended on
  try {
    parse(source, {
      delimiter,
      bom: true,
      skip_empty_lines: true,
      relax_quotes: true,
      record_delimiter: ['\r\n', '\n', '\r'], // files edited on two systems mix them
      on_record: (fields: string[], context) => {
        rows.push({ fields, line: startAfter(endOfLast) });
        endOfLast = context.lines;
        return null;
      },
    });
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    if (error.code === 'CSV_QUOTE_NOT_CLOSED') {
      const line = startAfter(endOfLast);
      throw invalid(`${path}:${line}: this row opens a quoted field that never closes (a missing '"'?)`);
    }
    if (error.code === 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH') {
      const found = (error as { record?: unknown[] }).record?.length;
      throw invalid(
        `${path}:${startAfter(endOfLast)}: expected ${rows[0]?.fields.length} fields, found ${found}` +
          ` (quote a text that contains the ${kDelimiterNames[delimiter]} delimiter)`,
      );
    }
    throw invalid(`${path}: ${error.message}`);
  }
  return rows;
}

function fromCsv(source: string, path: string): RawExample[] {
  const [header, ...body] = parseCsv(source, detectDelimiter(source, path), path);
  if (header === undefined) return [];
  const names = header.fields.map((h) => h.trim().toLowerCase());
  const [text, label, labelText, labels] = [
    names.indexOf('text'),
    names.indexOf('label'),
    names.indexOf('label_text'),
    names.indexOf('labels'),
  ];
  if (!namesAnExample(names)) throw headerError(path, names);
  return body.map(({ fields, line }) => ({
    text: fields[text],
    label: label >= 0 ? fields[label] : undefined,
    label_text: labelText >= 0 ? fields[labelText] : undefined,
    labels: labels >= 0 ? splitLabels(fields[labels]) : undefined,
    where: `${path}:${line}`,
  }));
}

function splitLabels(cell: string | undefined): string[] | undefined {
  if (cell === undefined) return undefined;
  return cell
    .split(kCsvLabelSeparator)
    .map((label) => label.trim())
    .filter((label) => label.length > 0);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The parsed file when it is one JSON value (an array, or an object such as a train body); undefined otherwise. */
function jsonDocument(source: string): unknown {
  try {
    return JSON.parse(source);
  } catch {
    return undefined; // JSONL (several values), or broken: the line reader says which line
  }
}

/**
 * An example object as a raw example; one without `text`, or without both `label` and `labels`, is refused naming
 * the fields it has and the near misses (`{"txt": ...}`), not with a bare "text must be a string".
 */
function fromObject(value: Record<string, unknown>, where: string): RawExample {
  const names = Object.keys(value);
  if (!namesAnExample(names)) {
    const has = names.length === 0 ? 'no fields' : `the fields ${listed(names)}${suggestFields(names)}`;
    throw invalid(`${where}: the example has ${has}; it needs 'text' and 'label' (or 'labels'), and may have 'label_text'`);
  }
  return { text: value.text, label: value.label, label_text: value.label_text, labels: value.labels, where };
}

/** Raw examples from a JSON array (`list` names it in messages: `examples`, `validation`). */
function fromJsonArray(value: unknown, path: string, list: string): RawExample[] {
  if (!Array.isArray(value)) throw invalid(`${path}: ${list} must be an array of { "text", "label" } objects`);
  const at = (i: number) => `${path}: ${list}[${i}]`;
  return value.map((example: unknown, i) => {
    if (!isObject(example)) throw invalid(`${at(i)}: must be an object { "text", "label" }`);
    return fromObject(example, at(i));
  });
}

/** A whole-file JSON array of examples, or a `{ "examples": [...] }` train body; undefined for anything else. */
function fromJsonDocument(value: unknown, path: string): RawExample[] | undefined {
  const examples = Array.isArray(value) ? value : isObject(value) && 'examples' in value ? value.examples : undefined;
  if (examples === undefined) return undefined; // a one-line JSONL file
  return fromJsonArray(examples, path, 'examples');
}

function fromJsonLines(source: string, path: string): RawExample[] {
  const rows: RawExample[] = [];
  source.split(/\r?\n/).forEach((line, i) => {
    if (line.trim().length === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    if (!isObject(value)) {
      throw invalid(
        `${path}:${i + 1}: not a JSON object; expected JSONL (one {"text", "label"} object per line), ` +
          'a JSON array or {"examples": [...]}, or CSV with text and label columns',
      );
    }
    rows.push(fromObject(value, `${path}:${i + 1}`));
  });
  return rows;
}

/** The examples a file holds for each task type. */
export type ExamplesOf<T extends TaskType> = T extends 'binary-classification'
  ? TrainExample[]
  : T extends 'multi-class-classification'
    ? ClassExample[]
    : LabelSetExample[];

/** The file's text; a missing file or a folder said plainly (not ENOENT / EISDIR). */
async function readSource(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ENOENT') throw invalid(`${path}: no such file (--examples takes a JSONL, CSV or JSON file)`);
    if (code === 'EISDIR') throw invalid(`${path} is a folder; --examples takes a file (JSONL, CSV or JSON)`);
    if (code === 'EACCES') throw invalid(`${path}: not allowed to read it`);
    throw error;
  }
}

/** Raw rows as typed examples of the task type. */
function typedExamples<T extends TaskType>(rows: RawExample[], labelText: string | undefined, taskType: T): ExamplesOf<T> {
  const examples = rows.map(({ text, label, label_text, labels, where }) => {
    if (typeof text !== 'string') throw invalid(`${where}: text must be a string`);
    if (taskType === 'multi-class-classification') {
      if (typeof label !== 'string' && typeof label !== 'number') throw invalid(`${where}: label must name the class`);
      return { text, label: String(label).trim() };
    }
    if (taskType === 'multi-label-classification') {
      if (!Array.isArray(labels) || !labels.every((name) => typeof name === 'string')) {
        throw invalid(`${where}: labels must be a list of label names (in CSV: separated by '${kCsvLabelSeparator}')`);
      }
      return { text, labels };
    }
    // The label first: a class name here means a multi-class file without --task-type, which is what to say.
    const value = parseLabel(label, where);
    const shared = labelText ?? (typeof label_text === 'string' ? label_text : undefined);
    if (shared === undefined) throw invalid(`${where}: no label_text; pass --label-text "..."`);
    return { text, label: value, label_text: shared };
  });
  return examples as ExamplesOf<T>;
}

/** What a training file holds: its examples, and when it is a `POST /v2/train` body, that body's other fields. */
export interface TrainFile<T extends TaskType = TaskType> {
  /** The task type: the caller's, else the body's `task_type`, else binary-classification. */
  taskType: T;
  examples: ExamplesOf<T>;
  /** The body's `validation` examples, read like its examples. */
  validation?: ExamplesOf<T>;
  /** The body's fields besides task_type, examples and validation (model, finetune, num_iterations, class_weight...). */
  fields: Record<string, unknown>;
}

/**
 * Reads a training file (see {@link readExamplesFile} for the formats). A `POST /v2/train` body keeps its other
 * fields, so that `svc train --examples body.json` sends what `curl -d @body.json` would; `taskType` (the
 * command line's) wins over the body's `task_type`.
 */
export async function readTrainFile(path: string, labelText: string | undefined, taskType?: TaskType): Promise<TrainFile> {
  const source = await readSource(path);
  // By name, else by content: JSON starts with '{' or '['; anything else is read as CSV.
  const csv = ['.csv', '.tsv'].includes(extname(path).toLowerCase()) || !/^\uFEFF?\s*[[{]/.test(source);
  const document = csv ? undefined : jsonDocument(source);
  const rows = csv ? fromCsv(source, path) : (fromJsonDocument(document, path) ?? fromJsonLines(source, path));
  const body = isObject(document) && 'examples' in document ? document : {};
  const { task_type: bodyTask, examples: _examples, validation: bodyValidation, ...fields } = body;
  if (bodyTask !== undefined && !kTaskTypes.includes(bodyTask as TaskType)) {
    throw invalid(`${path}: task_type must be one of ${kTaskTypes.join(', ')}; got ${JSON.stringify(bodyTask)}`);
  }
  const type = taskType ?? (bodyTask as TaskType | undefined) ?? 'binary-classification';
  if (type !== 'binary-classification' && labelText !== undefined) {
    throw invalid(
      `--label-text is for binary classifiers; ${type} examples name their ${type === 'multi-class-classification' ? 'class' : 'labels'}`,
    );
  }
  const examples = typedExamples(rows, labelText, type);
  const validation =
    bodyValidation === undefined ? undefined : typedExamples(fromJsonArray(bodyValidation, path, 'validation'), labelText, type);
  return { taskType: type, examples, ...(validation === undefined ? {} : { validation }), fields };
}

/**
 * Reads training examples from a file: CSV (`.csv`, `.tsv`, or any file not starting with `{` or
 * `[`) with a header naming `text` and `label` columns, else JSON: one `{ "text", "label" }` object per line, an array of them, or a
 * train body `{ "examples": [...] }`. Binary: `label` is true/false and `label_text` comes from
 * `labelText`, else from each example. Multi-class: `label` is the class name. Multi-label: a
 * `labels` column, an array of names in JSON, names separated by `|` in CSV (an empty cell: none).
 */
export async function readExamplesFile<T extends TaskType = 'binary-classification'>(
  path: string,
  labelText: string | undefined,
  taskType: T = 'binary-classification' as T,
): Promise<ExamplesOf<T>> {
  return (await readTrainFile(path, labelText, taskType)).examples as ExamplesOf<T>;
}
