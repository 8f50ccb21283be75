// Our tokenizer against the reference, Hugging Face's Rust `tokenizers`: the
// one comparison the tokenizer suites share (ids, and offsets in the
// reference's code-point units).
import { Tokenizer as HfTokenizer } from 'tokenizers';

import { Tokenizer, type TruncationSide } from '../../src/native/tokenizer.js';

/** The largest maxLength a caller may pass: in practice, no truncation. */
export const kNoTruncation = 100_000;

// The reference truncates like we do: at most maxLength ids, special tokens included; 'start' is its direction 'left'.
async function referenceEncodings(path: string, texts: string[], maxLength: number, side: TruncationSide) {
  const hf = HfTokenizer.fromFile(path);
  hf.disablePadding();
  hf.setTruncation(maxLength, { direction: side === 'start' ? 'left' : 'right' });
  return hf.encodeBatch(texts);
}

/** UTF-16 offsets -> code point offsets (what the reference reports). */
export function codePointIndex(text: string): Int32Array {
  const index = new Int32Array(text.length + 1);
  let cp = 0;
  for (let i = 0; i < text.length; i++) {
    index[i] = cp;
    const c = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      index[i + 1] = cp;
      i++;
    }
    cp++;
  }
  index[text.length] = cp;
  return index;
}

export interface Mismatch {
  index: number;
  text: string;
  ours: number[];
  theirs: number[];
}

// Long texts are shown by their start: a failure message stays readable.
const kShownChars = 200;

/**
 * Encodes `texts` with both tokenizers of the file at `path`, long texts cut on `side`; counts the texts and tokens
 * that differ, and the texts whose `truncated` flag is not what the reference's overflow says.
 */
export async function compare(
  texts: string[],
  maxLength: number,
  withOffsets: boolean,
  path: string,
  tokenizer?: Tokenizer,
  side: TruncationSide = 'end',
) {
  const ours = (tokenizer ?? Tokenizer.fromFile(path)).encodeBatch(texts, { maxLength, offsets: withOffsets, truncate: side });
  const theirs = await referenceEncodings(path, texts, maxLength, side);
  let flagMismatches = 0;
  const idMismatches: Mismatch[] = [];
  let offsetMismatches = 0;
  let tokens = 0;
  let at = 0;
  texts.forEach((text, i) => {
    const length = ours.lengths[i] as number;
    const ids = Array.from(ours.ids.subarray(at, at + length));
    const reference = theirs[i]!;
    const expected = reference.getIds();
    if ((ours.truncated[i] === 1) !== reference.getOverflowing().length > 0) flagMismatches++;
    if (ids.length !== expected.length || ids.some((id, k) => id !== expected[k])) {
      const shown = text.length > kShownChars ? `${text.slice(0, kShownChars)}...` : text;
      idMismatches.push({ index: i, text: shown, ours: ids.slice(0, kShownChars), theirs: expected.slice(0, kShownChars) });
    } else if (withOffsets) {
      const cps = codePointIndex(text);
      const theirOffsets = reference.getOffsets();
      for (let k = 0; k < length; k++) {
        const start = ours.offsets![2 * (at + k)] as number;
        const end = ours.offsets![2 * (at + k) + 1] as number;
        const isSpecial = k === 0 || k === length - 1;
        const mine = isSpecial ? [0, 0] : [cps[start], cps[end]];
        if (mine[0] !== theirOffsets[k]![0] || mine[1] !== theirOffsets[k]![1]) offsetMismatches++;
      }
    }
    tokens += length;
    at += length;
  });
  return { idMismatches: idMismatches.slice(0, 3), mismatchCount: idMismatches.length, offsetMismatches, flagMismatches, tokens };
}
