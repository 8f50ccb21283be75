// A process of its own for the model-file mutation suite (spawned with `node --import tsx`):
//   model-mutations-child.ts <scratch dir> <seed> <count>
// Writes the tiny model, then `count` seeded mutations of config.json, tokenizer.json, the
// safetensors header and the model manifest, and loads each through the public API. A load must
// either give embeddings of valid shape or throw an Error (an SvcError for the files themselves).
// Before each load the mutation is written to stderr, so a crash names it; stdout gets one JSON
// summary. Anything else than a clean exit is a failure the parent reports by signal or status.
import { linkSync, mkdirSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { SvcError } from '../../src/errors.js';
import { readModelDir } from '../../src/model/directory.js';
import { Encoder } from '../../src/native/encoder.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { seededRandom } from '../../src/random.js';
import { kTiny, packSafetensors, safetensorsParts, tinyConfig, tinyTensors, tinyTokenizer } from './tiny-model.js';

const [scratch, seedText, countText] = process.argv.slice(2);
const random = seededRandom(Number(seedText));
const count = Number(countText);
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
const int = (n: number) => Math.floor(random() * n);

const kHostile: readonly unknown[] = [
  0,
  -1,
  1,
  2,
  3,
  4,
  7,
  8,
  9,
  16,
  17,
  40,
  41,
  0.5,
  -0.5,
  1e308,
  -1e308,
  2 ** 31,
  2 ** 32 + 8,
  2 ** 53,
  2 ** 53 + 2,
  2 ** 64,
  1e-320,
  '',
  'x',
  '8',
  'F16',
  null,
  true,
  false,
  [],
  {},
  [8, 8],
  [-1],
  [0, 0],
  { a: 1 },
];
// Text-level hostility the JSON writer cannot produce.
const kRawValues = [
  'NaN',
  'Infinity',
  '-0',
  '1e999',
  '01',
  '"\\ud800"',
  '"\\u0000"',
  '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
];

type Json = Record<string, unknown> | unknown[];

// A random container inside `root` (walking down a few levels) and one of its keys.
function somewhere(root: Json): [Json, string | number] {
  let node: Json = root;
  for (let depth = 0; depth < 4; depth++) {
    const keys = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
    if (keys.length === 0) break;
    const key = pick(keys as (string | number)[]);
    const child = (node as Record<string | number, unknown>)[key];
    if (typeof child !== 'object' || child === null || random() < 0.3) return [node, key];
    node = child as Json;
  }
  const keys = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
  return [node, keys.length ? pick(keys as (string | number)[]) : 'added'];
}

function mutateTree(root: Json): string {
  const [node, key] = somewhere(root);
  const slot = node as Record<string | number, unknown>;
  const roll = random();
  if (roll < 0.15 && !Array.isArray(node)) {
    delete slot[key];
    return `delete ${key}`;
  }
  if (roll < 0.25) {
    const marker = `__raw${int(1e9)}__`;
    slot[key] = marker;
    const raw = pick(kRawValues);
    return `raw ${key} = ${raw}\u0000${marker}\u0000${raw}`;
  }
  const value = pick(kHostile);
  slot[key] = typeof value === 'object' && value !== null ? structuredClone(value) : value;
  return `set ${key} = ${JSON.stringify(value)}`;
}

// Serializes, applying a raw replacement mutateTree asked for, then maybe a byte-level mutation.
function serialize(root: Json, how: string): [Buffer, string] {
  let text = JSON.stringify(root);
  const [, marker, raw] = how.split('\u0000');
  if (marker) text = text.replace(JSON.stringify(marker), raw!);
  let bytes = Buffer.from(text, 'utf8');
  const roll = random();
  let what = how.split('\u0000')[0]!;
  if (roll < 0.1) {
    const at = int(bytes.length);
    bytes = bytes.subarray(0, at);
    what += `; truncate at ${at}`;
  } else if (roll < 0.2) {
    const at = int(bytes.length);
    const junk = Buffer.from([pick([0x00, 0x80, 0xc0, 0xed, 0xf5, 0xff, 0x22, 0x5c, 0x7b, 0x5d])]);
    bytes = Buffer.concat([bytes.subarray(0, at), junk, bytes.subarray(at)]);
    what += `; insert ${junk[0]} at ${at}`;
  } else if (roll < 0.3) {
    const at = int(bytes.length);
    bytes = Buffer.from(bytes);
    bytes[at] = int(256);
    what += `; byte ${at} = ${bytes[at]}`;
  }
  return [bytes, what];
}

// The untouched files, written once; each mutation's directory links them and replaces one.
const base = join(scratch, 'base');
function writeBase(): void {
  mkdirSync(base, { recursive: true });
  writeFileSync(join(base, 'config.json'), JSON.stringify(tinyConfig()));
  writeFileSync(join(base, 'tokenizer.json'), JSON.stringify(tinyTokenizer()));
  const { header, data } = safetensorsParts(tensors);
  writeFileSync(join(base, 'model.safetensors'), packSafetensors(JSON.stringify(header), data));
  writeFileSync(join(base, 'head.json'), JSON.stringify(head()));
  writeFileSync(join(base, 'manifest.json'), JSON.stringify(manifest()));
}

function linkBase(dir: string): void {
  mkdirSync(dir);
  for (const file of readdirSync(base)) linkSync(join(base, file), join(dir, file));
}

// Replaces a linked file (never writing through the link into the base copy).
function replace(dir: string, file: string, bytes: Uint8Array): void {
  unlinkSync(join(dir, file));
  writeFileSync(join(dir, file), bytes);
}

function head(): Record<string, unknown> {
  return { kind: 'logistic-regression', dim: kTiny.hidden, weights: new Array(kTiny.hidden).fill(0.5), bias: 0.25 };
}

function manifest(): Record<string, unknown> {
  return {
    format_version: 1,
    id: 'svc-small-0123456789ab',
    created_at: 1763769600,
    task_type: 'binary-classification',
    base_model: 'svc-small',
    label_text: 'positive review',
    body: 'finetuned',
    encoder_file: 'model.safetensors',
    head_file: 'head.json',
    training: {
      method: 'setfit',
      C: 1,
      solver: 'newton-cholesky',
      iterations: 7,
      max_length: 16,
      examples: 20,
      true_examples: 10,
      false_examples: 10,
    },
    metrics: { train_accuracy: 1, train_seconds: 0.25 },
    library_version: '0.1.0',
  };
}

const tensors = tinyTensors();
writeBase();

function mutateSafetensors(dir: string): string {
  const { header, data } = safetensorsParts(tensors);
  const names = Object.keys(header).filter((n) => n !== '__metadata__');
  const roll = random();
  let what: string;
  let length: bigint | undefined;
  if (roll < 0.15) {
    const text = JSON.stringify(header);
    length = pick([
      0n,
      1n,
      2n,
      BigInt(text.length - 1),
      BigInt(text.length + 1),
      BigInt(text.length + data.length),
      BigInt(text.length + data.length + 1),
      2n ** 32n,
      2n ** 63n,
      2n ** 64n - 1n,
    ]);
    what = `header length ${length}`;
  } else if (roll < 0.5) {
    const name = pick(names);
    const entry = header[name] as { dtype: unknown; shape: unknown[]; data_offsets: unknown[] };
    const other = header[pick(names)] as { data_offsets: number[] };
    const [begin, end] = entry.data_offsets as number[];
    const choice = int(9);
    if (choice === 0) entry.dtype = pick(['F16', 'BF16', 'F64', 'I32', 'I64', 'U8', 'BOOL', 'F8_E4M3', 'f32', 7, null]);
    else if (choice === 1) entry.data_offsets = [...other.data_offsets];
    else if (choice === 2) entry.data_offsets = [begin! + pick([-4, 4, 8, -1, 1]), end! + pick([-4, 4, 0, 8])];
    else if (choice === 3) entry.data_offsets = [end, begin];
    else if (choice === 4) entry.data_offsets = [data.length, data.length + end! - begin!];
    else if (choice === 5) (entry.shape as unknown[])[int(entry.shape.length)] = pick(kHostile);
    else if (choice === 6)
      entry.shape = pick([[], [1], [...entry.shape, 1], [...entry.shape].reverse(), (entry.shape as number[]).map((d) => d * 2)]);
    else if (choice === 7) entry.data_offsets[int(2)] = pick(kHostile);
    else delete (entry as Record<string, unknown>)[pick(['dtype', 'shape', 'data_offsets'])];
    what = `${name}: ${JSON.stringify(entry)}`;
  } else {
    what = mutateTree(header as Json);
  }
  const [bytes, described] = serialize(header as Json, what);
  replace(dir, 'model.safetensors', packSafetensors(bytes, data, length));
  return `safetensors ${described}`;
}

function mutateJsonFile(dir: string, file: string, root: Json): string {
  const how = mutateTree(root);
  const [bytes, what] = serialize(root, how);
  replace(dir, file, bytes);
  return `${file} ${what}`;
}

const kTexts = ['hello world', 'this is a good movie', 'the film is bad'];
const summary = { total: 0, ok: 0, loadErrors: 0, useErrors: 0, bad: [] as string[], kinds: {} as Record<string, number[]> };

for (let i = 0; i < count; i++) {
  const dir = join(scratch, `m${i}`);
  linkBase(dir);
  const kind = (['config', 'tokenizer', 'safetensors', 'manifest'] as const)[i % 4]!;
  let what: string;
  if (kind === 'config') what = mutateJsonFile(dir, 'config.json', tinyConfig());
  else if (kind === 'tokenizer') what = mutateJsonFile(dir, 'tokenizer.json', tinyTokenizer());
  else if (kind === 'safetensors') what = mutateSafetensors(dir);
  else what = random() < 0.8 ? mutateJsonFile(dir, 'manifest.json', manifest()) : mutateJsonFile(dir, 'head.json', head());
  process.stderr.write(`mutation ${i}: ${what}\n`);
  summary.total++;
  const counts = (summary.kinds[kind] ??= [0, 0, 0]);
  let encoder: Encoder | undefined;
  let tokenizer: Tokenizer | undefined;
  try {
    const weights = kind === 'manifest' ? (await readModelDir(dir)).encoderFile : dir;
    if (weights === null) throw new SvcError('invalid_request', 'no encoder');
    encoder = Encoder.fromPretrained(weights, { threads: 1 });
    tokenizer = Tokenizer.fromFile(join(dir, 'tokenizer.json'));
  } catch (error) {
    if (!(error instanceof SvcError)) summary.bad.push(`${what}: load threw ${String(error)}`);
    summary.loadErrors++;
    counts[1]!++;
    encoder?.dispose();
    continue;
  }
  try {
    const { ids, lengths } = tokenizer.encodeBatch(kTexts, { maxLength: kTiny.positions });
    const out = encoder.embedIdsSync(ids, lengths);
    if (encoder.dim !== kTiny.hidden || out.length !== kTexts.length * kTiny.hidden || !out.every(Number.isFinite)) {
      summary.bad.push(`${what}: loaded with dim ${encoder.dim}, ${out.length} values`);
    }
    summary.ok++;
    counts[0]!++;
  } catch (error) {
    // Ids a mutated tokenizer.json maps past the vocabulary are the caller's RangeError.
    if (!(error instanceof Error)) summary.bad.push(`${what}: use threw ${String(error)}`);
    summary.useErrors++;
    counts[2]!++;
  } finally {
    encoder.dispose();
  }
}
rmSync(scratch, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify(summary)}\n`);
