// SentencePiece Unigram tokenizer.json files (XLM-R's layout: Precompiled
// charsmap, Metaspace, Unigram, byte fallback) against the reference, Hugging
// Face's Rust `tokenizers`: ids equal, id for id, on a multilingual sentence
// set and on a seeded fuzz of every script.
import { describe, expect, it } from 'vitest';

import { allUciTexts } from '../../fixtures/corpora.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { seededRandom } from '../../src/random.js';
import { hardCorpus } from '../fixtures/hard-corpus.js';
import { compare, kNoTruncation } from './_tokenizer_reference.js';

const kFixtures = ['unigram-xlmr.json', 'unigram-byte-fallback.json'].map((name) => ({
  name,
  path: new URL(`../fixtures/tokenizers/${name}`, import.meta.url).pathname,
}));

const kSentences: readonly string[] = [
  'The quick brown fox jumps over the lazy dog.',
  'Der schnelle braune Fuchs springt über den faulen Hund. Größe, Straße, Äpfel.',
  'Le vif renard brun saute par-dessus le chien paresseux ; « guillemets » et œuvre.',
  'El rápido zorro marrón salta sobre el perro perezoso. ¿Qué tal? ¡Olé!',
  'Szybki brązowy lis przeskakuje nad leniwym psem. Zażółć gęślą jaźń.',
  'Быстрая коричневая лиса перепрыгивает через ленивую собаку. Ёжик в тумане.',
  'Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο. ΐ ΰ ς',
  'الثعلب البني السريع يقفز فوق الكلب الكسول. مُحَمَّد ١٢٣',
  'השועל החום המהיר קופץ מעל הכלב העצלן. שָׁלוֹם 123',
  'तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है। क्षत्रिय ज्ञान',
  'সকালে আমি ভাত খাই। ગુજરાતી ભાષા। தமிழ் மொழி',
  'สุนัขจิ้งจอกสีน้ำตาลกระโดดข้ามสุนัขขี้เกียจ ภาษาไทย',
  '빠른 갈색 여우가 게으른 개를 뛰어넘습니다. 한국어 가 조합',
  '敏捷的棕色狐狸跳过了懒狗。日本語の文章とカタカナ、ﾊﾝｶｸ。',
  'Արագ շագանակագույն աղվեսը ցատկում է ծույլ շան վրայով։ ქართული ენა',
  'Hızlı kahverengi tilki tembel köpeğin üzerinden atlar. İstanbul ıI',
  'Tiếng Việt có dấu: Hà Nội, Đà Nẵng, Nguyễn Trãi.',
  'Emoji: 👩‍👩‍👧‍👦 👍🏽 🇫🇷🇯🇵 🧑‍💻 ❤️ 1️⃣ and text.',
  'Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３, ① ② ⅷ, ﬁ ﬂ, ㎏ ㍿, x² H₂O, ½ …',
  'Compatibility jamo ㄱㅏ and halfwidth ﾀﾞ ﾊﾟ, e\u0301 a\u0308\u0301 o\u0328\u0304',
  'Added tokens inline: <s> inside, then <mask> here, </s> and <unk><pad>.',
  '  leading and  double   spaces\tand tabs\nand lines\r\nend  ',
  'Mixed: Привет, world! مرحبا 世界 שלום नमस्ते 🌍',
  '',
  ' ',
  '<mask>',
  'ends with a mask <mask>',
];

// Code point pools of each script and of the characters normalizers treat specially.
const kPools: readonly (readonly [number, number])[] = [
  [0x41, 0x7a],
  [0xc0, 0x24f],
  [0x400, 0x4ff],
  [0x370, 0x3ff],
  [0x600, 0x6ff],
  [0x590, 0x5ff],
  [0x900, 0x97f],
  [0x980, 0x9ff],
  [0xe00, 0xe7f],
  [0x1100, 0x11ff],
  [0xac00, 0xd7a3],
  [0x3130, 0x318f],
  [0x4e00, 0x9fff],
  [0x3040, 0x30ff],
  [0xff00, 0xffef],
  [0x300, 0x36f],
  [0x2000, 0x206f],
  [0x2100, 0x24ff],
  [0x3300, 0x33ff],
  [0xfb00, 0xfb4f],
  [0x1f300, 0x1f64f],
  [0x1f3fb, 0x1f3ff],
  [0x0, 0x1f],
  [0xfe00, 0xfe0f],
  [0x1d400, 0x1d7ff],
  [0xe000, 0xe0ff],
];
const kSpecials = [
  ' ',
  ' ',
  '  ',
  '\t',
  '\n',
  '\r\n',
  '\u3000',
  '\u00a0',
  '\u200d',
  '\u200b',
  '<mask>',
  '<s>',
  '▁',
  '\ud800',
  '\udc00',
  '\ufffd',
  '\u0000',
  'e\u0301',
  'ｱﾞ',
  '👨\u200d👩\u200d👧',
  '👍🏿',
  '🇺🇳',
  '#️⃣',
];

function fuzzText(random: () => number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    if (random() < 0.25) {
      out += kSpecials[Math.floor(random() * kSpecials.length)];
    } else {
      const [lo, hi] = kPools[Math.floor(random() * kPools.length)]!;
      const cp = lo + Math.floor(random() * (hi - lo + 1));
      out += String.fromCodePoint(cp);
    }
  }
  return out;
}

function fuzzCorpus(seed: number, count: number): string[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => fuzzText(random, 1 + Math.floor(random() * 60)));
}

describe.each(kFixtures)('Unigram parity with HF tokenizers ($name)', ({ path }) => {
  const ours = Tokenizer.fromFile(path);
  const fuzz = fuzzCorpus(4321, 3000);

  it('loads the file the reference loads', () => {
    expect(ours.encode('', { maxLength: kNoTruncation }).length).toBe(2);
    expect(ours.tokenId('<mask>')).toBeGreaterThan(1000);
  });

  it('equals the reference on the multilingual sentences, offsets included', async () => {
    const result = await compare([...kSentences], kNoTruncation, true, path, ours);
    expect(result.idMismatches).toEqual([]);
    expect(result.offsetMismatches).toBe(0);
    expect(result.tokens).toBeGreaterThan(kSentences.length * 5);
  });

  it('equals the reference on the hard corpus and 1000 English sentences', async () => {
    const texts = [...hardCorpus(), ...allUciTexts().slice(0, 1000)];
    const result = await compare(texts, kNoTruncation, false, path, ours);
    expect(result.idMismatches).toEqual([]);
    expect(result.mismatchCount).toBe(0);
  });

  it('equals the reference on 3000 seeded texts of every script', async () => {
    const result = await compare(fuzz, kNoTruncation, true, path, ours);
    expect(result.idMismatches).toEqual([]);
    expect(result.mismatchCount).toBe(0);
    expect(result.tokens).toBeGreaterThan(3000 * 10);
  });

  it('equals the reference when truncation cuts the text, byte fallback runs included', async () => {
    const sample = [...kSentences, ...fuzz.slice(0, 300)];
    for (const maxLength of [2, 3, 7, 30]) {
      const result = await compare(sample, maxLength, false, path, ours);
      expect(result.idMismatches).toEqual([]);
      expect(result.mismatchCount).toBe(0);
    }
  });

  it('reports truncation and the unknown tokens it kept, as the WordPiece files do', async () => {
    const texts = ['a long sentence with many words in it', 'short', 'ok 😀 ok 😀😀 🙃'];
    const batch = ours.encodeBatch(texts, { maxLength: 6 });
    const unk = ours.tokenId('<unk>');
    let at = 0;
    texts.forEach((text, i) => {
      const whole = ours.encode(text, { maxLength: kNoTruncation });
      expect(batch.lengths[i]).toBe(Math.min(6, whole.length));
      expect(batch.truncated[i]).toBe(whole.length > 6 ? 1 : 0);
      // Counted on the ids kept: the emoji are one fused <unk> per run (bytes with byte fallback).
      const kept = Array.from(batch.ids.subarray(at, at + batch.lengths[i]!));
      expect(batch.unknown[i]).toBe(kept.filter((id) => id === unk).length);
      at += batch.lengths[i]!;
    });
    expect(batch.truncated[0]).toBe(1);
    expect((await compare(texts, 6, false, path, ours)).mismatchCount).toBe(0);
  });
});
