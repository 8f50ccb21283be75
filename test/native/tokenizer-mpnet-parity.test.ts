// MPNet's tokenizer.json (BERT's WordPiece under <s> <pad> </s> <unk>, <mask> taking the space before it,
// RobertaProcessing's `<s> $A </s>`) against the reference, Hugging Face's Rust `tokenizers`: ids equal, id for
// id, offsets included, on the UCI sentences, the hard corpus and the specials written inline.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { allUciTexts } from '../../fixtures/corpora.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { mpnetTokenizerJson } from '../_support/mpnet-tokenizer.js';
import { hardCorpus } from '../fixtures/hard-corpus.js';
import { compare, kNoTruncation } from './_tokenizer_reference.js';

const root = mkdtempSync(join(tmpdir(), 'svc-mpnet-tokenizer-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const file = join(root, 'tokenizer.json');
writeFileSync(file, JSON.stringify(mpnetTokenizerJson()));

const kSpecialsInline = [
  'Added tokens inline: <s> inside, then <mask> here, </s> and <unk><pad>.',
  'a<mask>b   <mask>   c [UNK] d [CLS] e',
  '<mask>',
  '',
];

describe('Tokenizer parity with HF tokenizers (an MPNet tokenizer.json)', () => {
  const ours = Tokenizer.fromFile(file);

  it('starts a text with <s> (0) and ends it with </s> (2), BERT pieces moved up by 4', () => {
    const { ids, lengths } = ours.encodeBatch(['hello world'], { maxLength: kNoTruncation });
    expect(lengths[0]).toBe(4);
    // svc-small's ids of "hello" and "world" are 7592 and 2088.
    expect(Array.from(ids)).toEqual([0, 7592 + 4, 2088 + 4, 2]);
  });

  for (const maxLength of [5, 128, kNoTruncation]) {
    it(`equals the reference on every UCI sentence, the hard corpus and inline specials at maxLength ${maxLength}`, async () => {
      const texts = [...allUciTexts(), ...hardCorpus(), ...kSpecialsInline];
      const result = await compare(texts, maxLength, maxLength !== 5, file, ours);
      expect(result.idMismatches).toEqual([]);
      expect(result.mismatchCount).toBe(0);
      expect(result.offsetMismatches).toBe(0);
      expect(result.tokens).toBeGreaterThan(texts.length * 2);
    });
  }
});
