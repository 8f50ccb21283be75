// Seeded tiny random-weight base models in the real sentence-transformers folder layout: config.json,
// model.safetensors (F32), tokenizer.json, modules.json, 1_Pooling/config.json, sentence_bert_config.json,
// 2_Normalize/ when normalized and config_sentence_transformers.json when prompts are given. No weights are
// ever committed: scripts/reference-encoders.py regenerates the same values bit for bit from the generator
// below to compute the reference outputs under test/fixtures/encoders/.
//
// The generator: each tensor draws from its own mulberry32 stream (src/random.ts) seeded with
// `seed XOR fnv1a32(tensor name)`; a draw r (a uint32) gives the value (2 r / 2^32 - 1) * bound + shift,
// computed in float64 and rounded to float32 once.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { seededRandom } from '../../src/random.js';
import { packSafetensors, safetensorsParts } from './tiny-model.js';
import type { TinyTensor } from './tiny-model.js';

export type TinyFamily = 'bert' | 'xlm-roberta' | 'mpnet';

export interface TinyBaseModelOptions {
  family: TinyFamily;
  layers: number;
  hidden: number;
  heads: number;
  intermediate: number;
  /** A tokenizer.json, copied into the folder; the vocabulary size is its highest id + 1. */
  tokenizer: string;
  pooling: 'mean' | 'cls';
  normalize: boolean;
  /** sentence_bert_config.json's max_seq_length; the model addresses this many positions after its offset. */
  maxSeqLength: number;
  /** config_sentence_transformers.json's prompts, e.g. `{ query: 'query: ', document: 'passage: ' }`. */
  prompts?: Record<string, string>;
  seed: number;
  /** The checkpoint names' prefix, as a model inside a task head saves them ('bert.', 'roberta.', 'mpnet.'). Default none. */
  prefix?: string;
}

/** FNV-1a over the UTF-8 bytes of `text`, 32 bits. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash >>> 0;
}

/** The values of one tensor: `count` draws of the stream keyed by (seed, name). */
export function seededValues(seed: number, name: string, count: number, bound: number, shift = 0): Float32Array {
  const random = seededRandom((seed ^ fnv1a32(name)) >>> 0);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = (2 * random() - 1) * bound + shift;
  return out;
}

/** Token ids the tokenizer.json defines: its model vocabulary and added tokens. */
export function tokenizerVocabSize(tokenizerFile: string): number {
  const json = JSON.parse(readFileSync(tokenizerFile, 'utf8')) as {
    model: { vocab: Record<string, number> | [string, number][] };
    added_tokens?: { id: number }[];
  };
  const vocab = json.model.vocab;
  let max = Array.isArray(vocab) ? vocab.length - 1 : Math.max(...Object.values(vocab));
  for (const token of json.added_tokens ?? []) max = Math.max(max, token.id);
  return max + 1;
}

/** XLM-RoBERTa and MPNet count positions from pad_token_id + 1 (pad 1: offset 2); BERT from 0. */
export function positionOffset(family: TinyFamily): number {
  return family === 'bert' ? 0 : 2;
}

export function tinyBaseConfig(options: TinyBaseModelOptions, vocab: number): Record<string, unknown> {
  const common = {
    hidden_size: options.hidden,
    num_hidden_layers: options.layers,
    num_attention_heads: options.heads,
    intermediate_size: options.intermediate,
    vocab_size: vocab,
    max_position_embeddings: options.maxSeqLength + positionOffset(options.family),
    hidden_act: 'gelu',
    hidden_dropout_prob: 0.1,
    attention_probs_dropout_prob: 0.1,
    initializer_range: 0.02,
    position_embedding_type: 'absolute',
  };
  if (options.family === 'bert') {
    return { architectures: ['BertModel'], model_type: 'bert', ...common, type_vocab_size: 2, layer_norm_eps: 1e-12, pad_token_id: 0 };
  }
  if (options.family === 'xlm-roberta') {
    return {
      architectures: ['XLMRobertaModel'],
      model_type: 'xlm-roberta',
      ...common,
      type_vocab_size: 1,
      layer_norm_eps: 1e-5,
      bos_token_id: 0,
      pad_token_id: 1,
      eos_token_id: 2,
    };
  }
  // MPNetModel's config.json (all-mpnet-base-v2's keys): no token types, one relative position bias table.
  return {
    architectures: ['MPNetModel'],
    model_type: 'mpnet',
    ...common,
    layer_norm_eps: 1e-5,
    relative_attention_num_buckets: 32,
    bos_token_id: 0,
    pad_token_id: 1,
    eos_token_id: 2,
  };
}

/** A function that puts the seeded values of one tensor (its name without the prefix) into `tensors`. */
function seededTensorWriter(options: TinyBaseModelOptions, tensors: Map<string, TinyTensor>) {
  const p = options.prefix ?? '';
  return (name: string, shape: number[], bound: number, shift = 0) => {
    const values = seededValues(
      options.seed,
      p + name,
      shape.reduce((a, b) => a * b, 1),
      bound,
      shift,
    );
    tensors.set(p + name, { dtype: 'F32', shape, data: new Uint8Array(values.buffer) });
  };
}

/** Every tensor of a BERT or XLM-RoBERTa model (they share names), values from the seeded generator. */
export function bertFamilyTensors(options: TinyBaseModelOptions, config: Record<string, unknown>): Map<string, TinyTensor> {
  const { hidden: h, intermediate: i } = options;
  const tensors = new Map<string, TinyTensor>();
  // Bounds near 1 / sqrt(fan_in) keep every layer's activations of order 1, so the reference comparison
  // exercises every layer rather than a saturated one.
  const put = seededTensorWriter(options, tensors);
  put('embeddings.word_embeddings.weight', [config.vocab_size as number, h], 1);
  put('embeddings.position_embeddings.weight', [config.max_position_embeddings as number, h], 0.5);
  put('embeddings.token_type_embeddings.weight', [config.type_vocab_size as number, h], 0.2);
  put('embeddings.LayerNorm.weight', [h], 0.2, 1);
  put('embeddings.LayerNorm.bias', [h], 0.1);
  const wh = 1 / Math.sqrt(h),
    wi = 1 / Math.sqrt(i);
  for (let l = 0; l < options.layers; l++) {
    const q = `encoder.layer.${l}.`;
    for (const part of ['query', 'key', 'value']) {
      put(`${q}attention.self.${part}.weight`, [h, h], 2 * wh);
      put(`${q}attention.self.${part}.bias`, [h], 0.1);
    }
    put(`${q}attention.output.dense.weight`, [h, h], wh);
    put(`${q}attention.output.dense.bias`, [h], 0.1);
    put(`${q}attention.output.LayerNorm.weight`, [h], 0.2, 1);
    put(`${q}attention.output.LayerNorm.bias`, [h], 0.1);
    put(`${q}intermediate.dense.weight`, [i, h], 2 * wh);
    put(`${q}intermediate.dense.bias`, [i], 0.1);
    put(`${q}output.dense.weight`, [h, i], wi);
    put(`${q}output.dense.bias`, [h], 0.1);
    put(`${q}output.LayerNorm.weight`, [h], 0.2, 1);
    put(`${q}output.LayerNorm.bias`, [h], 0.1);
  }
  // BertModel and XLMRobertaModel save their pooler too; sentence-transformers never runs it.
  put('pooler.dense.weight', [h, h], wh);
  put('pooler.dense.bias', [h], 0.1);
  return tensors;
}

function sentenceTransformersFiles(dir: string, options: TinyBaseModelOptions): void {
  const modules = [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ];
  if (options.normalize) modules.push({ idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' });
  writeFileSync(join(dir, 'modules.json'), JSON.stringify(modules, null, 2));
  mkdirSync(join(dir, '1_Pooling'), { recursive: true });
  writeFileSync(
    join(dir, '1_Pooling', 'config.json'),
    JSON.stringify(
      {
        word_embedding_dimension: options.hidden,
        pooling_mode_cls_token: options.pooling === 'cls',
        pooling_mode_mean_tokens: options.pooling === 'mean',
        pooling_mode_max_tokens: false,
        pooling_mode_mean_sqrt_len_tokens: false,
        pooling_mode_weightedmean_tokens: false,
        pooling_mode_lasttoken: false,
        include_prompt: true,
      },
      null,
      2,
    ),
  );
  // sentence-transformers saves Normalize as an empty folder.
  if (options.normalize) mkdirSync(join(dir, '2_Normalize'), { recursive: true });
  writeFileSync(
    join(dir, 'sentence_bert_config.json'),
    JSON.stringify({ max_seq_length: options.maxSeqLength, do_lower_case: false }, null, 2),
  );
  if (options.prompts) {
    writeFileSync(
      join(dir, 'config_sentence_transformers.json'),
      JSON.stringify(
        {
          __version__: { sentence_transformers: '3.0.1' },
          prompts: options.prompts,
          default_prompt_name: null,
          similarity_fn_name: 'cosine',
        },
        null,
        2,
      ),
    );
  }
}

/**
 * Every tensor of an MPNetModel: BERT's layer under MPNet's names (attention.attn.{q,k,v,o}, attention.LayerNorm),
 * no token type embeddings, and encoder.relative_attention_bias [32 buckets x heads], drawn as BERT's are.
 */
export function mpnetTensors(options: TinyBaseModelOptions, config: Record<string, unknown>): Map<string, TinyTensor> {
  const { hidden: h, intermediate: i } = options;
  const tensors = new Map<string, TinyTensor>();
  const put = seededTensorWriter(options, tensors);
  put('embeddings.word_embeddings.weight', [config.vocab_size as number, h], 1);
  put('embeddings.position_embeddings.weight', [config.max_position_embeddings as number, h], 0.5);
  put('embeddings.LayerNorm.weight', [h], 0.2, 1);
  put('embeddings.LayerNorm.bias', [h], 0.1);
  // A bias of up to 1.5 per distance: of the order of the scores themselves, so a kernel that drops or
  // misplaces it fails the reference comparison by far more than rounding.
  put('encoder.relative_attention_bias.weight', [config.relative_attention_num_buckets as number, options.heads], 1.5);
  const wh = 1 / Math.sqrt(h),
    wi = 1 / Math.sqrt(i);
  for (let l = 0; l < options.layers; l++) {
    const q = `encoder.layer.${l}.`;
    for (const part of ['q', 'k', 'v']) {
      put(`${q}attention.attn.${part}.weight`, [h, h], 2 * wh);
      put(`${q}attention.attn.${part}.bias`, [h], 0.1);
    }
    put(`${q}attention.attn.o.weight`, [h, h], wh);
    put(`${q}attention.attn.o.bias`, [h], 0.1);
    put(`${q}attention.LayerNorm.weight`, [h], 0.2, 1);
    put(`${q}attention.LayerNorm.bias`, [h], 0.1);
    put(`${q}intermediate.dense.weight`, [i, h], 2 * wh);
    put(`${q}intermediate.dense.bias`, [i], 0.1);
    put(`${q}output.dense.weight`, [h, i], wi);
    put(`${q}output.dense.bias`, [h], 0.1);
    put(`${q}output.LayerNorm.weight`, [h], 0.2, 1);
    put(`${q}output.LayerNorm.bias`, [h], 0.1);
  }
  put('pooler.dense.weight', [h, h], wh);
  put('pooler.dense.bias', [h], 0.1);
  return tensors;
}

/** The tensors a tiny model of `options` holds, under their checkpoint names (the family's own writer). */
export function tinyBaseTensors(options: TinyBaseModelOptions, config: Record<string, unknown>): Map<string, TinyTensor> {
  return options.family === 'mpnet' ? mpnetTensors(options, config) : bertFamilyTensors(options, config);
}

/** Writes a seeded tiny base model of `options` into dir (created); returns its config.json object. */
export function writeTinyBaseModel(dir: string, options: TinyBaseModelOptions): Record<string, unknown> {
  mkdirSync(dir, { recursive: true });
  const config = tinyBaseConfig(options, tokenizerVocabSize(options.tokenizer));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  copyFileSync(options.tokenizer, join(dir, 'tokenizer.json'));
  const { header, data } = safetensorsParts(tinyBaseTensors(options, config));
  writeFileSync(join(dir, 'model.safetensors'), packSafetensors(JSON.stringify(header), data));
  sentenceTransformersFiles(dir, options);
  return config;
}
