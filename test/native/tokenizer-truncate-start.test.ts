// `truncate: 'start'` against the reference, Hugging Face's Rust `tokenizers` with truncation direction 'left':
// [CLS] + the last tokens that fit + [SEP], id for id and offset for offset, on the svc-small (MiniLM) WordPiece file
// and on an XLM-R Unigram file, texts without spaces (Chinese, Japanese, Thai) included.
import { describe, expect, it } from 'vitest';

import { emailBodies } from '../../fixtures/corpora.js';
import { resolveBaseModel } from '../../src/model/base-models.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { hardCorpus } from '../fixtures/hard-corpus.js';
import { compare } from './_tokenizer_reference.js';

// Long texts with no space between words: the tokenizer alone can find where their last tokens start.
const kChinese = '敏捷的棕色狐狸跳过了懒狗。这部电影的结局让我非常感动，演员的表演也十分出色。'.repeat(30);
const kJapanese = '日本語の文章とカタカナ、ひらがなを混ぜた長い文です。最後まで読むと結論がわかります。'.repeat(30);
const kThai = 'สุนัขจิ้งจอกสีน้ำตาลกระโดดข้ามสุนัขขี้เกียจภาษาไทยไม่มีช่องว่างระหว่างคำในประโยค'.repeat(30);
const kUnspaced = [kChinese, kJapanese, kThai];

// `tails`: the unspaced texts the file reads as more than 256 tokens (WordPiece reads a Thai run, one word past
// 100 characters, as one unknown token).
const kFiles = [
  { name: 'svc-small (WordPiece)', path: resolveBaseModel('svc-small').tokenizerFile, tails: [kChinese, kJapanese] },
  {
    name: 'unigram-xlmr.json (Unigram)',
    path: new URL('../fixtures/tokenizers/unigram-xlmr.json', import.meta.url).pathname,
    tails: [kChinese, kJapanese, kThai],
  },
];

describe.each(kFiles)("Tokenizer truncate 'start' against HF tokenizers' left truncation: $name", ({ path, tails }) => {
  const tokenizer = Tokenizer.fromFile(path);
  const texts = [...kUnspaced, ...emailBodies(400)];
  // The hard corpus's ids only: on it the Unigram file's offsets differ from the reference's uncut too.
  const hard = hardCorpus();

  for (const maxLength of [256, 16]) {
    it(`keeps the same last tokens, offsets and truncated flags at maxLength ${maxLength}`, async () => {
      const result = await compare(texts, maxLength, true, path, tokenizer, 'start');
      expect(result.idMismatches).toEqual([]);
      expect(result.mismatchCount).toBe(0);
      expect(result.offsetMismatches).toBe(0);
      expect(result.flagMismatches).toBe(0);
      expect(result.tokens).toBeGreaterThan(texts.length * 3);
      const hardResult = await compare(hard, maxLength, false, path, tokenizer, 'start');
      expect(hardResult.idMismatches).toEqual([]);
      expect(hardResult.flagMismatches).toBe(0);
    });
  }

  it('keeps the tail of a text without spaces: its whole encoding less the first tokens', () => {
    for (const text of tails) {
      const whole = tokenizer.encode(text, { maxLength: 100_000 });
      const start = tokenizer.encode(text, { maxLength: 256, truncate: 'start' });
      expect(whole.length).toBeGreaterThan(256);
      expect([...start]).toEqual([whole[0], ...whole.subarray(whole.length - 255, whole.length - 1), whole[whole.length - 1]]);
      // 'end' keeps the other side of the same text.
      expect([...tokenizer.encode(text, { maxLength: 256 })]).toEqual([...whole.subarray(0, 255), whole[whole.length - 1]]);
    }
  });

  it('cuts each text of one batch on its own side, and flags only texts that lost tokens', () => {
    const short = 'A short review.';
    const long = kUnspaced[0];
    const batch = tokenizer.encodeBatch([long, long, short], { maxLength: 32, truncate: ['end', 'start', 'start'] });
    const rows = [0, 1, 2].map((i) => {
      const at = batch.lengths.subarray(0, i).reduce((a, b) => a + b, 0);
      return [...batch.ids.subarray(at, at + batch.lengths[i])];
    });
    expect(rows[0]).toEqual([...tokenizer.encode(long, { maxLength: 32 })]);
    expect(rows[1]).toEqual([...tokenizer.encode(long, { maxLength: 32, truncate: 'start' })]);
    expect(rows[2]).toEqual([...tokenizer.encode(short, { maxLength: 32 })]);
    expect([...batch.truncated]).toEqual([1, 1, 0]);
  });

  it('refuses a side it does not know, and a list of sides of the wrong length', () => {
    expect(() => tokenizer.encode('x', { truncate: 'middle' as 'end' })).toThrow("options.truncate must be 'end' or 'start'");
    expect(() => tokenizer.encodeBatch(['x', 'y'], { truncate: ['start'] })).toThrow('options.truncate must hold one side per text');
  });
});
