// Our tokenizer against the reference, Hugging Face's Rust `tokenizers`:
// ids (and offsets) equal for every text of every corpus, zero mismatches.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { allUciTexts, emailBodies } from '../../fixtures/corpora.js';
import { resolveBaseModel } from '../../src/model/base-models.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { hardCorpus } from '../fixtures/hard-corpus.js';
import { compare, kNoTruncation } from './_tokenizer_reference.js';

const file = resolveBaseModel('svc-small').tokenizerFile;

describe('Tokenizer parity with HF tokenizers (svc-small tokenizer.json)', () => {
  const uci = allUciTexts();
  const emails = emailBodies(3000);
  const hard = hardCorpus();
  const ours = Tokenizer.fromFile(file);

  it('uses corpora of the expected size', () => {
    expect(uci.length).toBe(3003);
    expect(emails.length).toBe(3000);
    expect(hard.length).toBe(450);
  });

  for (const maxLength of [256, kNoTruncation]) {
    it(`equals the reference on every UCI sentence at maxLength ${maxLength}, offsets included`, async () => {
      const result = await compare(uci, maxLength, true, file, ours);
      expect(result.idMismatches).toEqual([]);
      expect(result.mismatchCount).toBe(0);
      expect(result.offsetMismatches).toBe(0);
      expect(result.tokens).toBeGreaterThan(3000 * 3);
    });

    it(`equals the reference on 3000 e-mail bodies at maxLength ${maxLength}`, async () => {
      const result = await compare(emails, maxLength, maxLength === 256, file, ours);
      expect(result.idMismatches).toEqual([]);
      expect(result.mismatchCount).toBe(0);
      expect(result.offsetMismatches).toBe(0);
    });

    it(`equals the reference on the hard corpus at maxLength ${maxLength}, offsets included`, async () => {
      const result = await compare(hard, maxLength, true, file, ours);
      expect(result.idMismatches).toEqual([]);
      expect(result.mismatchCount).toBe(0);
      expect(result.offsetMismatches).toBe(0);
    });
  }

  it('equals the reference at small maximum lengths, where truncation cuts inside words', async () => {
    const sample = [...uci.slice(0, 300), ...hard.slice(0, 60)];
    for (const maxLength of [2, 3, 5, 17]) {
      const result = await compare(sample, maxLength, false, file, ours);
      expect(result.mismatchCount).toBe(0);
    }
  });
});

// Each BertNormalizer option as the file sets it, and files without one, on
// the hard corpus.
describe('Tokenizer parity across normalizer options', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-tok-options-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const hard = hardCorpus(99, 150);
  const variants: Record<string, unknown> = {
    cased: { lowercase: false, strip_accents: null },
    'strip-accents-only': { lowercase: false, strip_accents: true },
    'keep-accents': { lowercase: true, strip_accents: false },
    'no-clean-text': { clean_text: false },
    'no-chinese-spacing': { handle_chinese_chars: false },
    'nothing-at-all': { clean_text: false, handle_chinese_chars: false, lowercase: false, strip_accents: false },
  };
  for (const [name, options] of Object.entries(variants)) {
    it(`equals the reference with ${name}`, async () => {
      const json = JSON.parse(readFileSync(file, 'utf8'));
      json.normalizer = { ...json.normalizer, ...(options as object) };
      const path = join(dir, `${name}.json`);
      writeFileSync(path, JSON.stringify(json));
      const result = await compare(hard, kNoTruncation, true, path);
      expect(result.idMismatches).toEqual([]);
      expect(result.offsetMismatches).toBe(0);
    });
  }

  it('equals the reference without a normalizer', async () => {
    const json = JSON.parse(readFileSync(file, 'utf8'));
    json.normalizer = null;
    const path = join(dir, 'no-normalizer.json');
    writeFileSync(path, JSON.stringify(json));
    const result = await compare(hard, 256, true, path);
    expect(result.idMismatches).toEqual([]);
    expect(result.offsetMismatches).toBe(0);
  });
});

// Every code point, as its own WordPiece token: a vocabulary that holds each
// character (and its ## form) makes any normalization or splitting difference
// show up as a different id. Planes 0-3 in full, the tag/selector block, and
// a sample of the private-use planes.
describe('Tokenizer parity on every code point', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-tok-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function sweptCodePoints(): number[] {
    const cps: number[] = [];
    for (let cp = 0; cp <= 0x3ffff; cp++) if (cp < 0xd800 || cp > 0xdfff) cps.push(cp);
    for (let cp = 0xe0000; cp <= 0xe01ff; cp++) cps.push(cp);
    for (let cp = 0xf0000; cp <= 0x10ffff; cp += 97) cps.push(cp);
    return cps;
  }

  // A vocabulary of every swept character; returns the file's path.
  function everyCharFile(cps: number[], name: string, normalizer: object): string {
    const base = JSON.parse(readFileSync(file, 'utf8'));
    const vocab: Record<string, number> = { '[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3, '[MASK]': 4 };
    let id = 5;
    for (const cp of cps) {
      const c = String.fromCodePoint(cp);
      if (!(c in vocab)) vocab[c] = id++;
      vocab[`##${c}`] = id++;
    }
    base.model.vocab = vocab;
    base.normalizer = { ...base.normalizer, ...normalizer };
    base.added_tokens = base.added_tokens.map((t: { content: string }) => ({ ...t, id: vocab[t.content] }));
    base.post_processor.special_tokens['[CLS]'].ids = [2];
    base.post_processor.special_tokens['[SEP]'].ids = [3];
    const path = join(dir, `${name}.json`);
    writeFileSync(path, JSON.stringify(base));
    return path;
  }

  // Each character between two letters: dropped, split off, or joined, and how it normalizes.
  function sweepTexts(cps: number[]): string[] {
    const texts: string[] = [];
    for (let i = 0; i < cps.length; i += 2048) {
      texts.push(
        cps
          .slice(i, i + 2048)
          .map((cp) => `x${String.fromCodePoint(cp)}y`)
          .join(' '),
      );
    }
    return texts;
  }

  it('normalizes, splits and looks up each one like the reference', async () => {
    const cps = sweptCodePoints();
    const path = everyCharFile(cps, 'every-char', {});
    const texts = sweepTexts(cps);
    // Sequences where canonical reordering would matter (marks of different combining classes).
    texts.push(
      'x\u{1D16D}\u{1D165}y x\u{1D165}\u{1D16D}y a\u0328\u0301b \u302E\u302Fz \u0F72\u0F71 ' +
        // a removed control character does not end a run of marks; a removed class-0 mark does
        'x\u{1D16D}\u0001\u{1D165}y x\u{1D16D}\u0900\u{1D165}y x\u{1D16D}\u0301\u{1D165}\u{1D16E}y ' +
        `x${'\u{1D16D}\u{1D165}'.repeat(30)}y`,
    );
    const result = await compare(texts, kNoTruncation, false, path);
    expect(cps.length).toBe(0x40000 - 0x800 + 0x200 + Math.ceil(0x20000 / 97));
    expect(result.idMismatches).toEqual([]);
    expect(result.mismatchCount).toBe(0);
  });

  it('lowercases each one like the reference when accents are kept', async () => {
    // Without NFD first, precomposed letters reach lowercasing as they are. Cased letters all live in planes 0-1.
    const cps = sweptCodePoints().filter((cp) => cp <= 0x1ffff);
    const path = everyCharFile(cps, 'every-char-accents', { strip_accents: false });
    const result = await compare(sweepTexts(cps), kNoTruncation, false, path);
    expect(result.idMismatches).toEqual([]);
    expect(result.mismatchCount).toBe(0);
  });
});
