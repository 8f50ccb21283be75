import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';

import { SvcError, Tokenizer } from '../../src/index.js';
import { resolveBaseModel } from '../../src/model/base-models.js';
import { packageRoot } from '../../src/native/index.js';

const file = resolveBaseModel('svc-small').tokenizerFile;
const tokenizer = Tokenizer.fromPretrained('svc-small');
const dir = mkdtempSync(join(tmpdir(), 'svc-tokenizer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A copy of svc-small's tokenizer.json with some parts replaced.
function variant(name: string, edit: (json: Record<string, any>) => void): string {
  const json = JSON.parse(readFileSync(file, 'utf8'));
  edit(json);
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(json));
  return path;
}

describe('Tokenizer', () => {
  it('encodes the reference sentence', () => {
    expect(Array.from(tokenizer.encode('This is an example sentence'))).toEqual([101, 2023, 2003, 2019, 2742, 6251, 102]);
  });

  it("defaults to the base model's maxLength, or the file's truncation setting", () => {
    expect(tokenizer.maxLength).toBe(256);
    expect(Tokenizer.fromFile(file).maxLength).toBe(128);
    expect(Tokenizer.fromFile(file, { maxLength: 64 }).maxLength).toBe(64);
    expect(Tokenizer.fromFile(variant('no-truncation', (j) => (j.truncation = null))).maxLength).toBe(512);
    const long = 'word '.repeat(1000);
    expect(tokenizer.encode(long).length).toBe(256);
    expect(Tokenizer.fromFile(file).encode(long).length).toBe(128);
  });

  it('truncates to maxLength including [CLS] and [SEP]', () => {
    const ids = tokenizer.encode('Hello, world! How are you today?', { maxLength: 5 });
    expect(Array.from(ids)).toEqual([101, 7592, 1010, 2088, 102]);
    expect(Array.from(tokenizer.encode('Hello, world!', { maxLength: 2 }))).toEqual([101, 102]);
    // Truncation keeps the first pieces of a split word.
    expect(Array.from(tokenizer.encode('unbelievably', { maxLength: 3 }))).toEqual([101, 4895, 102]);
    expect(Array.from(tokenizer.encode('unbelievably'))).toEqual([101, 4895, 8671, 2666, 3567, 6321, 102]);
  });

  it('says which texts of a batch were cut, with the same ids as encode', () => {
    const texts = ['Hello, world! How are you today?', 'Hello, world!', 'unbelievably', '', 'a [SEP] b', 'Hello, world', 'Hello,'];
    const batch = tokenizer.encodeBatch(texts, { maxLength: 5, offsets: true });
    // 'Hello, world' and 'a [SEP] b' are exactly 3 tokens and [CLS] [SEP]: they fit, one token more does not.
    expect(Array.from(batch.truncated)).toEqual([1, 1, 1, 0, 0, 0, 0]);
    expect(Array.from(batch.lengths)).toEqual([5, 5, 5, 2, 5, 5, 4]);
    let at = 0;
    texts.forEach((text, i) => {
      expect(Array.from(batch.ids.subarray(at, at + batch.lengths[i]!))).toEqual(Array.from(tokenizer.encode(text, { maxLength: 5 })));
      at += batch.lengths[i]!;
    });
    expect(batch.offsets!.length).toBe(2 * at);
    expect(Array.from(batch.offsets!.subarray(0, 10))).toEqual([0, 0, 0, 5, 5, 6, 7, 12, 0, 0]);
    // A text of only accents and control characters has no tokens to cut.
    expect(Array.from(tokenizer.encodeBatch(['Hi \u0301\u0000'], { maxLength: 3 }).truncated)).toEqual([0]);
    expect(Array.from(tokenizer.encodeBatch(['word '.repeat(255), 'word '.repeat(254)]).truncated)).toEqual([1, 0]);
  });

  it('handles empty, whitespace-only and special-token texts', () => {
    expect(Array.from(tokenizer.encode(''))).toEqual([101, 102]);
    expect(Array.from(tokenizer.encode(' \t\n\u00a0\u3000'))).toEqual([101, 102]);
    expect(Array.from(tokenizer.encode('a [SEP] b[MASK]'))).toEqual([101, 1037, 102, 1038, 103, 102]);
    expect(Array.from(tokenizer.encode('café CAFÉ'))).toEqual([101, 7668, 7668, 102]);
    expect(Array.from(tokenizer.encode('x'.repeat(101)))).toEqual([101, 100, 102]);
  });

  it('packs a batch: all ids concatenated, one length per text, offsets in UTF-16 units', () => {
    const batch = tokenizer.encodeBatch(['Hi!', '', '😀 café'], { offsets: true });
    expect(Array.from(batch.ids)).toEqual([101, 7632, 999, 102, 101, 102, 101, 100, 7668, 102]);
    expect(Array.from(batch.lengths)).toEqual([4, 2, 4]);
    expect(Array.from(batch.offsets!)).toEqual([0, 0, 0, 2, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 7, 0, 0]);
    const plain = tokenizer.encodeBatch(['Hi!', '', '😀 café']);
    expect(plain.offsets).toBeUndefined();
    expect(Array.from(plain.ids)).toEqual(Array.from(batch.ids));
    expect(Array.from(tokenizer.encodeBatch([]).ids)).toEqual([]);
    expect(tokenizer.encodeBatch([], { offsets: true }).offsets!.length).toBe(0);
  });

  it('counts the unknown ids it kept per text, and says how many special tokens a text carries', () => {
    const texts = ['Great product 😀', '😀😀😀 🎉🎉', '为什么这个月我被收了两次费?', 'Warum wurde mir zweimal etwas berechnet?', ''];
    const batch = tokenizer.encodeBatch(texts);
    expect(Array.from(batch.unknown)).toEqual([1, 2, 11, 0, 0]);
    expect(tokenizer.specialTokens).toBe(2);
    // Counted on the ids returned: an emoji past the cut is not one of them.
    expect(Array.from(tokenizer.encodeBatch(['good 😀'], { maxLength: 3 }).unknown)).toEqual([0]);
  });

  it('gives encode and encodeBatch the same ids, for long texts too', () => {
    const texts = ['short', 'é'.repeat(3000), 'word, '.repeat(20_000)];
    const batch = tokenizer.encodeBatch(texts, { maxLength: 100_000 });
    let at = 0;
    texts.forEach((text, i) => {
      const one = tokenizer.encode(text, { maxLength: 100_000 });
      expect(Array.from(batch.ids.subarray(at, at + batch.lengths[i]!))).toEqual(Array.from(one));
      at += batch.lengths[i]!;
    });
    expect(Array.from(batch.lengths)).toEqual([3, 3, 40_002]);
  });

  it('looks up token ids', () => {
    expect(tokenizer.tokenId('[CLS]')).toBe(101);
    expect(tokenizer.tokenId('##ing')).toBe(2075);
    expect(tokenizer.tokenId('not-a-token')).toBeNull();
  });

  it('rejects bad arguments with exact messages', () => {
    const bad = tokenizer as unknown as Record<string, (...args: unknown[]) => unknown>;
    expect(() => bad.encode!(42)).toThrow(new TypeError('text must be a string'));
    expect(() => bad.encodeBatch!('text')).toThrow(new TypeError('texts must be an array of strings'));
    expect(() => bad.encodeBatch!(['a', 'b', 'c', 7])).toThrow(new TypeError('texts[3] must be a string'));
    expect(() => bad.encodeBatch!([undefined])).toThrow(new TypeError('texts[0] must be a string'));
    const range = 'options.maxLength must be an integer from 2 to 100000';
    expect(() => tokenizer.encode('a', { maxLength: 1 })).toThrow(new RangeError(range));
    expect(() => tokenizer.encode('a', { maxLength: 2.5 })).toThrow(new RangeError(range));
    expect(() => tokenizer.encode('a', { maxLength: 100_001 })).toThrow(new RangeError(range));
    expect(() => tokenizer.encode('a', { maxLength: Number.NaN })).toThrow(new RangeError(range));
    expect(() => bad.encode!('a', { maxLength: '8' })).toThrow(new TypeError(range));
    expect(() => bad.encodeBatch!(['a'], { maxLength: -3 })).toThrow(new RangeError(range));
    expect(() => bad.encodeBatch!(['a'], { offsets: 1 })).toThrow(new TypeError('options.offsets must be a boolean'));
    expect(() => bad.encode!('a', 5)).toThrow(new TypeError('options must be an object'));
    expect(() => bad.tokenId!(5)).toThrow(new TypeError('token must be a string'));
    expect(() => Tokenizer.fromFile('')).toThrow(new TypeError('path must be a non-empty string'));
    expect(() => Tokenizer.fromFile(file, { maxLength: 0 })).toThrow(new RangeError(range));
  });

  it('reports missing, malformed and unsupported files as SvcError', () => {
    const missing = join(dir, 'missing.json');
    expect(() => Tokenizer.fromFile(missing)).toThrow(new SvcError('not_found', `tokenizer file not found: ${missing}`));
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{"model": {"vocab": {"a": 1,}}}');
    expect(() => Tokenizer.fromFile(broken)).toThrow(`${broken}: invalid JSON at byte 28: expected a member name`);
    try {
      Tokenizer.fromFile(broken);
    } catch (error) {
      expect((error as SvcError).code).toBe('native_error');
    }
    const bpe = variant('bpe', (j) => (j.model.type = 'BPE'));
    expect(() => Tokenizer.fromFile(bpe)).toThrow(`${bpe}: tokenizer.json: model type 'BPE' is not supported (only WordPiece and Unigram)`);
    const nfc = variant('nfc', (j) => (j.normalizer = { type: 'NFC' }));
    expect(() => Tokenizer.fromFile(nfc)).toThrow("normalizer type 'NFC' is not supported (only BertNormalizer)");
    const noUnk = variant('no-unk', (j) => (j.model.unk_token = '<unk>'));
    expect(() => Tokenizer.fromFile(noUnk)).toThrow("the WordPiece unk_token '<unk>' is not in the vocabulary");
    const normalized = variant('normalized-added', (j) => (j.added_tokens[3].normalized = true));
    expect(() => Tokenizer.fromFile(normalized)).toThrow("added token '[SEP]' is matched after normalization, which is not supported");
    const singleWord = variant('single-word', (j) => (j.added_tokens[4].single_word = true));
    expect(() => Tokenizer.fromFile(singleWord)).toThrow("added token '[MASK]' uses single_word, which is not supported");
    expect(() => Tokenizer.fromPretrained('svc-huge')).toThrow("unknown base model 'svc-huge' (known: svc-small)");
  });

  it('follows the normalizer options of the file', () => {
    const cased = Tokenizer.fromFile(variant('cased', (j) => (j.normalizer = { ...j.normalizer, lowercase: false, strip_accents: null })));
    // Without lowercasing "Hello" is not in the uncased vocabulary; accents stay (null follows lowercase).
    expect(Array.from(cased.encode('Hello café'))).toEqual([101, 100, 100, 102]);
    const stripOnly = Tokenizer.fromFile(
      variant('strip', (j) => (j.normalizer = { ...j.normalizer, lowercase: false, strip_accents: true })),
    );
    expect(Array.from(stripOnly.encode('hello café'))).toEqual([101, 7592, 7668, 102]);
    const keepAccents = Tokenizer.fromFile(variant('accents', (j) => (j.normalizer = { ...j.normalizer, strip_accents: false })));
    // Accented words are not in the uncased vocabulary: kept accents make them unknown.
    expect(Array.from(keepAccents.encode('CAFÉ naïve cafe'))).toEqual([101, 100, 100, 7668, 102]);
    const bert = Tokenizer.fromFile(
      variant('bert-processing', (j) => (j.post_processor = { type: 'BertProcessing', sep: ['[SEP]', 102], cls: ['[CLS]', 101] })),
    );
    expect(Array.from(bert.encode('This is an example sentence'))).toEqual([101, 2023, 2003, 2019, 2742, 6251, 102]);
    const bare = Tokenizer.fromFile(variant('no-post', (j) => (j.post_processor = null)));
    expect(Array.from(bare.encode('This is an example sentence', { maxLength: 3 }))).toEqual([2023, 2003, 2019]);
  });

  it('works inside a worker thread', async () => {
    const entry = pathToFileURL(join(packageRoot(), 'src/index.ts')).href;
    const worker = new Worker(
      `import { parentPort } from 'node:worker_threads';
       import { register } from 'tsx/esm/api';
       register();
       const { Tokenizer } = await import(${JSON.stringify(entry)});
       const t = Tokenizer.fromPretrained('svc-small');
       const batch = t.encodeBatch(['This is an example sentence', 'Hi!']);
       parentPort.postMessage({ ids: Array.from(batch.ids), lengths: Array.from(batch.lengths) });`,
      { eval: true, execArgv: ['--input-type=module'] },
    );
    const result = await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    expect(result).toEqual({ ids: [101, 2023, 2003, 2019, 2742, 6251, 102, 101, 7632, 999, 102], lengths: [7, 4] });
  });
});
