// Random strings and random bytes: the tokenizer never throws or crashes, and
// its ids still equal the reference's.
import { Tokenizer as HfTokenizer } from 'tokenizers';
import { describe, expect, it } from 'vitest';

import { resolveBaseModel } from '../../src/model/base-models.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { seededRandom } from '../../src/random.js';

const file = resolveBaseModel('svc-small').tokenizerFile;
const ours = Tokenizer.fromFile(file);

// Any UTF-16 code unit, lone surrogates included, biased toward ASCII and spaces so words form.
function randomUnits(random: () => number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    const r = random();
    if (r < 0.4) out += String.fromCharCode(0x20 + Math.floor(random() * 0x5f));
    else if (r < 0.5) out += ' ';
    else if (r < 0.8) out += String.fromCharCode(Math.floor(random() * 0x10000));
    else out += String.fromCodePoint(Math.floor(random() * 0x110000));
  }
  return out;
}

function randomBytes(random: () => number, length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = Math.floor(random() * 256);
  return bytes;
}

async function referenceIds(texts: string[], maxLength: number): Promise<number[][]> {
  const hf = HfTokenizer.fromFile(file);
  hf.disablePadding();
  if (maxLength >= 100_000) hf.disableTruncation();
  else hf.setTruncation(maxLength);
  return (await hf.encodeBatch(texts)).map((encoding) => encoding.getIds());
}

function split(batch: { ids: Int32Array; lengths: Int32Array }): number[][] {
  const out: number[][] = [];
  let at = 0;
  for (const length of batch.lengths) {
    out.push(Array.from(batch.ids.subarray(at, at + length)));
    at += length;
  }
  return out;
}

describe('Tokenizer fuzz', () => {
  it("rethrows an array getter's own error", () => {
    const texts = ['ok', 'fine'];
    Object.defineProperty(texts, 1, {
      get() {
        throw new Error('getter failed');
      },
    });
    expect(() => ours.encodeBatch(texts)).toThrow('getter failed');
  });

  const random = seededRandom(7);
  const strings = Array.from({ length: 1500 }, () => randomUnits(random, Math.floor(random() * 300)));
  const utf8 = new TextDecoder('utf-8', { fatal: false });
  const latin1 = new TextDecoder('latin1');
  const decoded = Array.from({ length: 1000 }, (_, i) => {
    const bytes = randomBytes(random, Math.floor(random() * 400));
    return i % 2 === 0 ? utf8.decode(bytes) : latin1.decode(bytes);
  });

  for (const [name, texts] of [
    ['random UTF-16 strings', strings],
    ['random bytes decoded leniently', decoded],
  ] as const) {
    for (const maxLength of [256, 100_000]) {
      it(`never throws and equals the reference on ${name} (maxLength ${maxLength})`, async () => {
        const batch = ours.encodeBatch(texts, { maxLength, offsets: true });
        const mine = split(batch);
        expect(mine.length).toBe(texts.length);
        expect(batch.offsets!.length).toBe(2 * batch.ids.length);
        const theirs = await referenceIds([...texts], maxLength);
        const mismatches = mine.flatMap((ids, i) => (ids.join() === theirs[i]!.join() ? [] : [i]));
        expect(mismatches).toEqual([]);
        // One at a time gives the same ids as the batch.
        for (let i = 0; i < texts.length; i += 97) expect(Array.from(ours.encode(texts[i]!, { maxLength }))).toEqual(mine[i]);
      });
    }
  }
});
