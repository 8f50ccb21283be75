import { type GraphBuilder, OnnxType } from './graph.js';
import type { BertWeights } from './bert-weights.js';
import { addRelativePositionBias } from './mpnet-bias.js';

/**
 * Emits `y = x · Wᵀ + b` for a PyTorch Linear weight `[outFeatures, inFeatures]` and returns y's
 * name. The fp32 and int8 graphs differ only in this function.
 */
export type LinearEmitter = (
  g: GraphBuilder,
  x: string,
  weight: Float32Array,
  bias: Float32Array,
  outFeatures: number,
  inFeatures: number,
  name: string,
) => string;

/** Transposes a row-major `[rows, cols]` matrix into `[cols, rows]`. */
export function transposeMatrix(matrix: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(matrix.length);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c * rows + r] = matrix[r * cols + c];
  }
  return out;
}

/** fp32 Linear: MatMul with the transposed weight, then Add the bias. */
export const fp32Linear: LinearEmitter = (g, x, weight, bias, outFeatures, inFeatures, name) => {
  const w = g.constant(`${name}.weight_t`, OnnxType.FLOAT, [inFeatures, outFeatures], transposeMatrix(weight, outFeatures, inFeatures));
  const b = g.constant(`${name}.bias`, OnnxType.FLOAT, [outFeatures], bias);
  return g.op('Add', [g.op('MatMul', [x, w]), b]);
};

/** Names of the graph inputs, as BERT tokenizers (and transformers.js) name them. */
export const kBertInputs = Object.freeze(['input_ids', 'attention_mask', 'token_type_ids'] as const);

/**
 * The inputs a graph of these weights takes: no `token_type_ids` for a model with a single token
 * type (XLM-RoBERTa), as Hugging Face's exports of it have none.
 */
export function graphInputs(weights: BertWeights): readonly string[] {
  return weights.config.typeVocabSize > 1 ? kBertInputs : kBertInputs.filter((name) => name !== 'token_type_ids');
}
export const kBatchDim = 'batch_size';
export const kSequenceDim = 'sequence_length';

// Additive attention bias for padded keys, as Hugging Face's BERT uses: the most negative fp32.
const kMaskedScore = -3.4028234663852886e38;

/** What the body leaves for the heads: the last hidden state and the attention mask as fp32. */
export interface BertBody {
  /** `[batch, seq, hidden]` */
  readonly hidden: string;
  /** `[batch, seq]`, 1 for tokens and 0 for padding. */
  readonly maskFloat: string;
}

function layerNorm(g: GraphBuilder, weights: BertWeights, x: string, prefix: string): string {
  const scale = g.constant(`${prefix}.weight`, OnnxType.FLOAT, [weights.config.hiddenSize], weights.tensor(`${prefix}.weight`));
  const bias = g.constant(`${prefix}.bias`, OnnxType.FLOAT, [weights.config.hiddenSize], weights.tensor(`${prefix}.bias`));
  return g.op('LayerNormalization', [x, scale, bias], { axis: { int: -1 }, epsilon: { float: weights.config.layerNormEps } });
}

function dense(g: GraphBuilder, weights: BertWeights, linear: LinearEmitter, x: string, prefix: string): string {
  const [outFeatures, inFeatures] = weights.shape(`${prefix}.weight`);
  return linear(g, x, weights.tensor(`${prefix}.weight`), weights.tensor(`${prefix}.bias`), outFeatures, inFeatures, prefix);
}

/**
 * Replaces the last attended token of each row by `sepTokenId`. transformers.js truncates by
 * cutting the id list, which drops the closing [SEP]; Hugging Face truncation (and ours) keeps it.
 * Rows that already end in [SEP] are unchanged; the last token is found from the mask.
 */
function closeTruncatedRows(g: GraphBuilder, maskFloat: string, sepTokenId: number): string {
  const seqLength = g.op('Squeeze', [
    g.op('Shape', ['input_ids'], { start: { int: 1 }, end: { int: 2 } }),
    g.int64s('axes_0_squeeze', [0]),
  ]);
  const positions = g.op('Range', [g.int64s('range_start', [0], []), seqLength, g.int64s('range_step', [1], [])]);
  // Weight each kept token by its 1-based position: the largest marks the last attended token.
  const oneBased = g.op('Cast', [g.op('Add', [positions, g.int64s('position_one', [1], [])])], { to: { int: OnnxType.FLOAT } });
  const last = g.op('ArgMax', [g.op('Mul', [maskFloat, oneBased])], { axis: { int: 1 }, keepdims: { int: 1 } });
  return g.op('Where', [g.op('Equal', [positions, last]), g.int64s('sep_token_id', [sepTokenId], []), 'input_ids']);
}

/**
 * XLM-RoBERTa's and MPNet's position ids, as transformers' `create_position_ids_from_input_ids` computes them:
 * `padding_idx + cumsum(mask) · mask` with mask = (input_ids ≠ padding_idx). Real tokens count from
 * padding_idx + 1 and every pad sits at padding_idx, so a padded row embeds as it would alone.
 */
function offsetPositionIds(g: GraphBuilder, padTokenId: number): string {
  const pad = g.int64s('padding_idx', [padTokenId], []);
  const real = g.op('Cast', [g.op('Not', [g.op('Equal', ['input_ids', pad])])], { to: { int: OnnxType.INT64 } });
  const counted = g.op('CumSum', [real, g.int64s('cumsum_axis', [1], [])]);
  return g.op('Add', [g.op('Mul', [counted, real]), pad]);
}

function embeddings(g: GraphBuilder, weights: BertWeights, inputIds: string): string {
  const { hiddenSize, vocabSize, maxPositions, typeVocabSize, modelType, padTokenId } = weights.config;
  const table = (name: string, rows: number) =>
    g.constant(`embeddings.${name}.weight`, OnnxType.FLOAT, [rows, hiddenSize], weights.tensor(`embeddings.${name}.weight`));
  const words = g.op('Gather', [table('word_embeddings', vocabSize), inputIds], { axis: { int: 0 } });
  // A single token type is one row that every token adds: no input to feed it from. MPNet has none at all.
  let typed = words;
  if (typeVocabSize > 1) {
    typed = g.op('Add', [words, g.op('Gather', [table('token_type_embeddings', typeVocabSize), 'token_type_ids'], { axis: { int: 0 } })]);
  } else if (typeVocabSize === 1) {
    typed = g.op('Add', [words, table('token_type_embeddings', 1)]);
  }
  let positions: string;
  if (modelType !== 'bert') {
    positions = g.op('Gather', [table('position_embeddings', maxPositions), offsetPositionIds(g, padTokenId)], { axis: { int: 0 } });
  } else {
    // Absolute positions 0..seq-1: the first `seq` rows of the position table, broadcast over the batch.
    const seqLength = g.op('Shape', ['input_ids'], { start: { int: 1 }, end: { int: 2 } });
    positions = g.op('Slice', [
      table('position_embeddings', maxPositions),
      g.int64s('zero_start', [0]),
      seqLength,
      g.int64s('axis_0', [0]),
    ]);
  }
  return layerNorm(g, weights, g.op('Add', [typed, positions]), 'embeddings.LayerNorm');
}

/** Where a layer's attention weights sit: BERT's and XLM-RoBERTa's names, and MPNet's. */
const kAttentionNames = Object.freeze({
  bert: {
    query: 'attention.self.query',
    key: 'attention.self.key',
    value: 'attention.self.value',
    out: 'attention.output.dense',
    norm: 'attention.output.LayerNorm',
  },
  mpnet: {
    query: 'attention.attn.q',
    key: 'attention.attn.k',
    value: 'attention.attn.v',
    out: 'attention.attn.o',
    norm: 'attention.LayerNorm',
  },
});

function selfAttention(
  g: GraphBuilder,
  weights: BertWeights,
  linear: LinearEmitter,
  x: string,
  scoreBias: readonly string[],
  layer: string,
): string {
  const { hiddenSize, numHeads, modelType } = weights.config;
  const names = kAttentionNames[modelType === 'mpnet' ? 'mpnet' : 'bert'];
  const headSize = hiddenSize / numHeads;
  const splitShape = g.int64s(`${layer}.split_heads_shape`, [0, 0, numHeads, headSize]);
  const heads = (name: string, perm: number[]) =>
    g.op('Transpose', [g.op('Reshape', [dense(g, weights, linear, x, `${layer}.${name}`), splitShape])], {
      perm: { ints: perm },
    });
  const query = heads(names.query, [0, 2, 1, 3]); // [b, h, s, d]
  const keyT = heads(names.key, [0, 2, 3, 1]); // [b, h, d, s]
  const value = heads(names.value, [0, 2, 1, 3]); // [b, h, s, d]
  const scale = g.floats(`${layer}.attention_scale`, [Math.sqrt(headSize)], []);
  // The scaled scores plus, in upstream's order, MPNet's position bias and then the padding mask.
  let scores = g.op('Div', [g.op('MatMul', [query, keyT]), scale]);
  for (const bias of scoreBias) scores = g.op('Add', [scores, bias]);
  const probs = g.op('Softmax', [scores], { axis: { int: -1 } });
  const context = g.op('Transpose', [g.op('MatMul', [probs, value])], { perm: { ints: [0, 2, 1, 3] } });
  const merged = g.op('Reshape', [context, g.int64s(`${layer}.merge_heads_shape`, [0, 0, hiddenSize])]);
  const projected = dense(g, weights, linear, merged, `${layer}.${names.out}`);
  return layerNorm(g, weights, g.op('Add', [projected, x]), `${layer}.${names.norm}`);
}

function feedForward(g: GraphBuilder, weights: BertWeights, linear: LinearEmitter, x: string, layer: string): string {
  const h = dense(g, weights, linear, x, `${layer}.intermediate.dense`);
  // Exact GELU, 0.5·h·(1 + erf(h/√2)), in the node order onnxruntime's Gelu fusion recognizes.
  const erf = g.op('Erf', [g.op('Div', [h, g.floats(`${layer}.sqrt2`, [Math.SQRT2], [])])]);
  const gelu = g.op('Mul', [g.op('Mul', [h, g.op('Add', [erf, g.floats(`${layer}.one`, [1], [])])]), g.floats(`${layer}.half`, [0.5], [])]);
  const out = dense(g, weights, linear, gelu, `${layer}.output.dense`);
  return layerNorm(g, weights, g.op('Add', [out, x]), `${layer}.output.LayerNorm`);
}

/**
 * Adds the int64 `[batch_size, sequence_length]` inputs (see graphInputs) and the BERT encoder
 * (embeddings and post-LayerNorm layers with exact GELU) to `g`. With `sepTokenId`, each row's
 * last attended token is forced to that closing token first (see closeTruncatedRows).
 */
export function addBertBody(g: GraphBuilder, weights: BertWeights, linear: LinearEmitter, sepTokenId?: number): BertBody {
  for (const name of graphInputs(weights)) g.input(name, OnnxType.INT64, [kBatchDim, kSequenceDim]);
  const maskFloat = g.op('Cast', ['attention_mask'], { to: { int: OnnxType.FLOAT } });
  // (1 - mask) · min_fp32, shaped [b, 1, 1, s] to broadcast over heads and query positions.
  const padding = g.op('Sub', [g.floats('one', [1], []), maskFloat]);
  const maskBias = g.op('Unsqueeze', [g.op('Mul', [padding, g.floats('masked_score', [kMaskedScore], [])]), g.int64s('axes_1_2', [1, 2])]);
  const inputIds = sepTokenId === undefined ? 'input_ids' : closeTruncatedRows(g, maskFloat, sepTokenId);
  let hidden = embeddings(g, weights, inputIds);
  const scoreBias = weights.config.modelType === 'mpnet' ? [addRelativePositionBias(g, weights), maskBias] : [maskBias];
  for (let i = 0; i < weights.config.numLayers; i++) {
    const layer = `encoder.layer.${i}`;
    hidden = feedForward(g, weights, linear, selfAttention(g, weights, linear, hidden, scoreBias, layer), layer);
  }
  return { hidden, maskFloat };
}

/** How the sentence embedding is taken from the token vectors: the base model's pooling and Normalize module. */
export interface SentencePooling {
  readonly pooling: 'mean' | 'cls';
  readonly normalize: boolean;
}

/**
 * The sentence embedding `[batch, hidden]`, as sentence-transformers' Pooling and Normalize do it:
 * the first token's vector (CLS) or the mean over the tokens the mask keeps (count clamped at
 * 1e-9), then, when the base has a Normalize module, L2 normalization (norm clamped at 1e-12).
 */
export function addSentencePooling(g: GraphBuilder, body: BertBody, how: SentencePooling): string {
  let pooled: string;
  if (how.pooling === 'cls') {
    pooled = g.op('Gather', [body.hidden, g.int64s('first_token', [0], [])], { axis: { int: 1 } });
  } else {
    const mask3 = g.op('Unsqueeze', [body.maskFloat, g.int64s('axes_2', [2])]);
    const axis1 = g.int64s('axes_1', [1]);
    const summed = g.op('ReduceSum', [g.op('Mul', [body.hidden, mask3]), axis1], { keepdims: { int: 0 } });
    const counts = g.op('Max', [g.op('ReduceSum', [body.maskFloat, axis1], { keepdims: { int: 1 } }), g.floats('min_count', [1e-9], [])]);
    pooled = g.op('Div', [summed, counts]);
  }
  if (!how.normalize) return pooled;
  const norm = g.op('Max', [g.op('ReduceL2', [pooled], { axes: { ints: [1] }, keepdims: { int: 1 } }), g.floats('min_norm', [1e-12], [])]);
  return g.op('Div', [pooled, norm]);
}
