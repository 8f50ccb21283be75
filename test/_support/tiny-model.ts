// A BERT model small enough to load thousands of times a second (hidden 8, 2 heads, 1 layer,
// 40 vocabulary entries), written by the tests that tamper with model files: config.json,
// tokenizer.json and F32 safetensors, with the safetensors header kept editable.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { seededRandom } from '../../src/random.js';

export const kTiny = Object.freeze({ hidden: 8, heads: 2, layers: 1, intermediate: 16, vocab: 40, positions: 16 });

export function tinyConfig(): Record<string, unknown> {
  return {
    architectures: ['BertModel'],
    model_type: 'bert',
    hidden_size: kTiny.hidden,
    num_hidden_layers: kTiny.layers,
    num_attention_heads: kTiny.heads,
    intermediate_size: kTiny.intermediate,
    vocab_size: kTiny.vocab,
    max_position_embeddings: kTiny.positions,
    type_vocab_size: 2,
    layer_norm_eps: 1e-12,
    hidden_act: 'gelu',
    hidden_dropout_prob: 0.1,
    position_embedding_type: 'absolute',
  };
}

const kWords = ['the', 'a', 'is', 'this', 'example', 'sentence', 'hello', 'world', 'good', 'bad', 'movie', 'film'];

export function tinyTokenizer(): Record<string, unknown> {
  const vocab: Record<string, number> = { '[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3, '[MASK]': 4 };
  for (const word of kWords) vocab[word] = Object.keys(vocab).length;
  for (const c of 'abcdefghijklmnopqrstuvw') {
    if (Object.keys(vocab).length < kTiny.vocab) vocab[`##${c}`] = Object.keys(vocab).length;
  }
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [0, 1, 2, 3, 4].map((id) => ({
      id,
      content: Object.keys(vocab)[id],
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      pair: [],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] } },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
}

export interface TinyTensor {
  dtype: string;
  shape: number[];
  data: Uint8Array;
}

/** Every tensor of the tiny BERT under its checkpoint name, F32 values from a seeded generator. */
export function tinyTensors(seed = 7): Map<string, TinyTensor> {
  const random = seededRandom(seed);
  const { hidden: h, intermediate: i, vocab, positions } = kTiny;
  const tensors = new Map<string, TinyTensor>();
  const put = (name: string, shape: number[], scale: number, shift = 0) => {
    const values = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => (random() - 0.5) * scale + shift);
    tensors.set(name, { dtype: 'F32', shape, data: new Uint8Array(values.buffer) });
  };
  put('embeddings.word_embeddings.weight', [vocab, h], 1);
  put('embeddings.position_embeddings.weight', [positions, h], 0.3);
  put('embeddings.token_type_embeddings.weight', [2, h], 0.1);
  put('embeddings.LayerNorm.weight', [h], 0.1, 1);
  put('embeddings.LayerNorm.bias', [h], 0.1);
  for (let l = 0; l < kTiny.layers; l++) {
    const p = `encoder.layer.${l}.`;
    for (const part of ['query', 'key', 'value']) {
      put(`${p}attention.self.${part}.weight`, [h, h], 0.5);
      put(`${p}attention.self.${part}.bias`, [h], 0.1);
    }
    put(`${p}attention.output.dense.weight`, [h, h], 0.5);
    put(`${p}attention.output.dense.bias`, [h], 0.1);
    put(`${p}attention.output.LayerNorm.weight`, [h], 0.1, 1);
    put(`${p}attention.output.LayerNorm.bias`, [h], 0.1);
    put(`${p}intermediate.dense.weight`, [i, h], 0.5);
    put(`${p}intermediate.dense.bias`, [i], 0.1);
    put(`${p}output.dense.weight`, [h, i], 0.5);
    put(`${p}output.dense.bias`, [h], 0.1);
    put(`${p}output.LayerNorm.weight`, [h], 0.1, 1);
    put(`${p}output.LayerNorm.bias`, [h], 0.1);
  }
  return tensors;
}

/** The header object and data section of a safetensors file holding `tensors` back to back. */
export function safetensorsParts(tensors: Map<string, TinyTensor>): { header: Record<string, unknown>; data: Buffer } {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const [name, t] of tensors) {
    header[name] = { dtype: t.dtype, shape: [...t.shape], data_offsets: [offset, offset + t.data.length] };
    chunks.push(t.data);
    offset += t.data.length;
  }
  return { header, data: Buffer.concat(chunks) };
}

/** A safetensors file from a header (text or raw bytes) and data; `headerLength` overrides the length field. */
export function packSafetensors(headerText: string | Uint8Array, data: Uint8Array, headerLength?: bigint): Buffer {
  const header = typeof headerText === 'string' ? Buffer.from(headerText, 'utf8') : headerText;
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(headerLength ?? BigInt(header.length));
  return Buffer.concat([length, header, data]);
}

/** Writes config.json, tokenizer.json and model.safetensors of the tiny model into dir. */
export function writeTinyModel(dir: string, tensors = tinyTensors()): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(tinyConfig(), null, 2));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tinyTokenizer()));
  const { header, data } = safetensorsParts(tensors);
  writeFileSync(join(dir, 'model.safetensors'), packSafetensors(JSON.stringify(header), data));
}
