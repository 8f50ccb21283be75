// Hostile texts, as a caller who wants to pin a worker would write them: long
// runs of combining marks that canonical ordering must sort, every Unicode
// plane, lone surrogates, the largest normalization expansions, 1 MB words
// and 1 MB texts. Each must cost time linear in its length, checked as a
// bound on nanoseconds per UTF-8 byte at 64 KiB and at 1 MiB, and give the
// reference's ids and offsets.
//
// The bound: on the shared 2-core development machine (load average 13 while
// measured) the slowest case took 107 ns/byte (1 MiB from every plane, no
// truncation) and most cases 1-90, so kMaxNsPerByte = 1000 leaves a margin
// of 9x over the worst seen under load. A tokenizer that is quadratic in a
// run of marks fails it at 64 KiB already (5,000 ns/byte there, the run of
// U+1D16D U+1D165) and would take minutes at 1 MiB.
import { describe, expect, it } from 'vitest';

import { resolveBaseModel } from '../../src/model/base-models.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { seededRandom } from '../../src/random.js';
import { compare, kNoTruncation } from './_tokenizer_reference.js';

const kMaxNsPerByte = 1000;
const kSizes = [64 * 1024, 1024 * 1024];
// Best of a few runs: a run slowed by another process says nothing about the tokenizer.
const kRuns = 3;

const file = resolveBaseModel('svc-small').tokenizerFile;
const ours = Tokenizer.fromFile(file);

type Random = () => number;

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

function between(random: Random, low: number, high: number): number {
  return low + Math.floor(random() * (high - low + 1));
}

function utf8Length(cp: number): number {
  // A lone surrogate reaches the tokenizer as U+FFFD: 3 bytes.
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

// A text of about `bytes` UTF-8 bytes from a generator of code points.
function build(bytes: number, next: () => number[]): string {
  const parts: string[] = [];
  let size = 0;
  while (size < bytes) {
    const cps = next();
    for (const cp of cps) size += utf8Length(cp);
    parts.push(String.fromCodePoint(...cps));
  }
  return parts.join('');
}

const kSpace = 0x20;
const isSurrogate = (cp: number) => cp >= 0xd800 && cp <= 0xdfff;

// Marks of many combining classes; Mn ones (removed by accent stripping) still take part in
// the ordering, U+0900 (Mn, class 0) ends a run, U+0001 and U+200B (removed by clean-up) do not.
const kMarks = [
  0x0301, 0x0316, 0x0334, 0x0345, 0x05b0, 0x05c4, 0x0e38, 0x0f71, 0x0f72, 0x0f74, 0x302a, 0x302e, 0x302f, 0x1d165, 0x1d166, 0x1d16d,
  0x1d16e, 0x1d172, 0x1d17b, 0x1d185,
];
const kRunEnders = [0x0900, 0x0001, 0x200b];
// Characters with the longest normalized forms (decomposition and lowercasing).
const kExpanders = [0x0390, 0x03b0, 0x1f82, 0x1fb7, 0x0130, 0x1e9e, 0x01c4, 0x1e0a, 0xfb03, 0x0587, 0x2126, 0xac01];
const kPunct = [0x21, 0x2c, 0x2e, 0x3f, 0x5b, 0x5d, 0x2014, 0x3001, 0xff01, 0x1f600, 0x00bf];
const ascii = (s: string) => Array.from(s, (c) => c.codePointAt(0)!);

interface Case {
  name: string;
  make: (random: Random, bytes: number) => string;
}

const cases: Case[] = [
  {
    name: 'one letter and a run of U+1D16D U+1D165 (class 226, then 216)',
    make: (_random, bytes) => `a${build(bytes - 1, () => [0x1d16d, 0x1d165])}`,
  },
  {
    name: 'runs of marks of mixed classes, some thousands long',
    make: (random, bytes) =>
      build(bytes, () => {
        const run = [between(random, 0x61, 0x7a)];
        const length = random() < 0.1 ? between(random, 1000, 5000) : between(random, 1, 40);
        for (let k = 0; k < length; k++) run.push(random() < 0.02 ? pick(random, kRunEnders) : pick(random, kMarks));
        if (random() < 0.3) run.push(kSpace);
        return run;
      }),
  },
  {
    name: 'marks without a base, through removed control characters',
    make: (random, bytes) => build(bytes, () => [pick(random, kMarks), 0x0001, pick(random, kMarks)]),
  },
  {
    name: 'every plane at once, no spaces (one 1 MB word, split only by punctuation)',
    make: (random, bytes) =>
      build(bytes, () => {
        const cp = between(random, 0x80, 0x10ffff);
        return [isSurrogate(cp) ? 0xfffd : cp];
      }),
  },
  {
    name: 'lone surrogates between letters and marks',
    make: (random, bytes) => build(bytes, () => [between(random, 0xd800, 0xdfff), random() < 0.5 ? 0x61 : pick(random, kMarks)]),
  },
  {
    name: 'one ASCII word of the whole length',
    make: (random, bytes) => build(bytes, () => [between(random, 0x61, 0x7a)]),
  },
  {
    name: 'one word of accented letters and marks of the whole length',
    make: (random, bytes) => build(bytes, () => [pick(random, [0xe9, 0x1ec7, 0x61]), pick(random, kMarks)]),
  },
  {
    name: 'short words: more tokens than the largest maxLength',
    make: (random, bytes) =>
      build(bytes, () => [...Array.from({ length: between(random, 1, 6) }, () => between(random, 0x61, 0x7a)), kSpace]),
  },
  {
    name: 'the largest normalization expansions',
    make: (random, bytes) => build(bytes, () => [pick(random, kExpanders), ...(random() < 0.05 ? [kSpace] : [])]),
  },
  {
    name: 'CJK ideographs and Hangul syllables',
    make: (random, bytes) => build(bytes, () => [random() < 0.5 ? between(random, 0x4e00, 0x9fff) : between(random, 0xac00, 0xd7a3)]),
  },
  {
    name: 'prefixes of added tokens and punctuation',
    make: (random, bytes) =>
      build(bytes, () => (random() < 0.5 ? ascii(pick(random, ['[MASK]', '[MAS', '[', '[CLS', '[[SEP]'])) : [pick(random, kPunct)])),
  },
];

// Nanoseconds per UTF-8 byte of the fastest of kRuns encodings.
function nsPerByte(text: string, maxLength: number, offsets: boolean): number {
  let best = Infinity;
  for (let run = 0; run < kRuns; run++) {
    const started = process.hrtime.bigint();
    ours.encodeBatch([text], { maxLength, offsets });
    best = Math.min(best, Number(process.hrtime.bigint() - started));
  }

  return best / Buffer.byteLength(text);
}

describe('Tokenizer on hostile texts', () => {
  cases.forEach((c, index) => {
    it(`${c.name}: time linear in the length, ids and offsets of the reference`, async () => {
      const texts = kSizes.map((size) => c.make(seededRandom(1000 + index), size));
      // Smallest first: a super-linear path fails at 64 KiB before it spends minutes at 1 MiB.
      for (const text of texts) {
        for (const maxLength of [256, kNoTruncation]) {
          for (const offsets of [false, true]) {
            const where = `${Buffer.byteLength(text)} bytes, maxLength ${maxLength}, offsets ${offsets}`;
            expect(nsPerByte(text, maxLength, offsets), where).toBeLessThan(kMaxNsPerByte);
          }
        }
      }
      for (const maxLength of [256, kNoTruncation]) {
        const result = await compare(texts, maxLength, true, file, ours);
        expect(result.idMismatches).toEqual([]);
        expect(result.mismatchCount).toBe(0);
        expect(result.offsetMismatches).toBe(0);
      }
    });
  });

  it('every plane, one at a time, in words: linear time and the reference ids', async () => {
    const random = seededRandom(17);
    const texts = Array.from({ length: 17 }, (_, plane) =>
      build(kSizes[0]!, () => {
        const cp = plane * 0x10000 + between(random, 0, 0xffff);
        return random() < 0.15 ? [kSpace] : [isSurrogate(cp) ? 0x61 : cp];
      }),
    );
    for (const text of texts) expect(nsPerByte(text, kNoTruncation, true)).toBeLessThan(kMaxNsPerByte);
    for (const maxLength of [256, kNoTruncation]) {
      const result = await compare(texts, maxLength, true, file, ours);
      expect(result.idMismatches).toEqual([]);
      expect(result.mismatchCount).toBe(0);
      expect(result.offsetMismatches).toBe(0);
    }
  });
});
