import type { BaseModel } from '../base-models.js';
import { addBertBody, addSentencePooling, fp32Linear, kBatchDim, kSequenceDim, type LinearEmitter } from './bert-graph.js';
import { loadBertWeights } from './bert-weights.js';
import { GraphBuilder, OnnxType } from './graph.js';
import { int8Linear } from './quantize.js';
import * as is from '../../is.js';

/** Weight precision of an exported graph. */
export type OnnxPrecision = 'fp32' | 'int8';

export interface OnnxExportOptions {
  /** `fp32` (default) keeps the weights as they are; `int8` quantizes every Linear dynamically. */
  precision?: OnnxPrecision;
  /**
   * When set, each row's last attended token is replaced by this id (the closing token: [SEP], 102
   * for svc-small; `</s>` for XLM-R vocabularies) before embedding. transformers.js truncates long
   * texts by cutting their ids, dropping it; with this the graph sees what Hugging Face truncation
   * gives. Unset for the plain reference.
   */
  sepTokenId?: number;
}

/** A trained linear head on the normalized sentence embedding: score = w·e + b. */
export interface LinearHead {
  readonly weights: Float32Array;
  readonly bias: number;
}

/** A head with a row per label: scores = W e + b (labels x hidden weights, row-major; a bias per label). */
export interface LinearHeads {
  readonly weights: Float32Array;
  readonly biases: Float32Array;
}

interface ResolvedExportOptions {
  readonly precision: OnnxPrecision;
  readonly sepTokenId: number | undefined;
}

const kDefaultPrecision: OnnxPrecision = 'fp32';

function resolveOptions(options: OnnxExportOptions | undefined): ResolvedExportOptions {
  if (options !== undefined) is.object(options, 'options');
  const precision = options?.precision ?? kDefaultPrecision;
  if (precision !== 'fp32' && precision !== 'int8') {
    throw new RangeError(`options.precision must be 'fp32' or 'int8'`);
  }
  const sepTokenId = options?.sepTokenId;
  if (sepTokenId !== undefined) is.nonNegativeInteger(sepTokenId, 'options.sepTokenId');
  return { precision, sepTokenId };
}

// onnxruntime-node 1.30 and the onnxruntime-web build transformers.js v4 uses both run opset 17.
function linearFor(precision: OnnxPrecision): LinearEmitter {
  return precision === 'int8' ? int8Linear : fp32Linear;
}

/**
 * Builds the sentence encoder of a base model as an ONNX ModelProto: inputs `input_ids`,
 * `attention_mask` and, where the model has more than one token type, `token_type_ids` (int64
 * `[batch_size, sequence_length]`; an XLM-RoBERTa model has a single one and no such input),
 * outputs `last_hidden_state` (`[batch_size, sequence_length, hidden]`) and `sentence_embedding`
 * (`[batch_size, hidden]`, pooled as the base model's folder says: mean over the attention mask or
 * the first token, L2-normalized when it has a Normalize module). XLM-RoBERTa positions count
 * from the padding id, computed in the graph from `input_ids` as transformers does.
 *
 * @example
 * ```ts
 * import * as ort from 'onnxruntime-node';
 * const session = await ort.InferenceSession.create(buildEncoderOnnx('svc-small'));
 * const ids = new ort.Tensor('int64', [101n, 2023n, 2003n, 2019n, 2742n, 6251n, 102n], [1, 7]);
 * const ones = new ort.Tensor('int64', new BigInt64Array(7).fill(1n), [1, 7]);
 * const zeros = new ort.Tensor('int64', new BigInt64Array(7), [1, 7]);
 * const out = await session.run({ input_ids: ids, attention_mask: ones, token_type_ids: zeros });
 * out.sentence_embedding.data.slice(0, 4); // Float32Array [0.0677, 0.0636, 0.0487, 0.0794] (rounded)
 * ```
 */
export function buildEncoderOnnx(baseModel: string | BaseModel, options?: OnnxExportOptions): Uint8Array {
  const { precision, sepTokenId } = resolveOptions(options);
  const weights = loadBertWeights(baseModel);
  const hiddenSize = weights.config.hiddenSize;
  const g = new GraphBuilder();
  const body = addBertBody(g, weights, linearFor(precision), sepTokenId);
  const embedding = addSentencePooling(g, body, weights.baseModel);
  g.op('Identity', [body.hidden], {}, 'last_hidden_state');
  g.op('Identity', [embedding], {}, 'sentence_embedding');
  g.output('last_hidden_state', OnnxType.FLOAT, [kBatchDim, kSequenceDim, hiddenSize]);
  g.output('sentence_embedding', OnnxType.FLOAT, [kBatchDim, hiddenSize]);
  return g.toModel({
    graphName: `${weights.baseModel.name}-encoder-${precision}`,
    docString: `${weights.baseModel.name} sentence encoder`,
  });
}

/**
 * Builds a classifier: the encoder, the base model's pooling (and normalization, where it has it)
 * and a linear head on that embedding, the one our predictions compute. A binary
 * head (`{ weights, bias }`) gives `logits` `[batch_size, 2]` holding `[0, w·e + b]` per row, so
 * softmax gives `[P(false), P(true)]` with P(true) = sigmoid(w·e + b). A head with a row per label
 * (`{ weights, biases }`) gives `logits` `[batch_size, labels]`, W e + b: softmax over them for a
 * multi-class model, a sigmoid each for a multi-label one.
 *
 * @example
 * ```ts
 * const head = { weights: new Float32Array(384).fill(0.1), bias: -0.5 };
 * const session = await ort.InferenceSession.create(buildClassifierOnnx('svc-small', head));
 * // feeds for "This is an example sentence" as in buildEncoderOnnx's example
 * (await session.run(feeds)).logits.data; // Float32Array [0, -0.4727595]: P(true) = 0.384
 * ```
 */
export function buildClassifierOnnx(
  baseModel: string | BaseModel,
  head: LinearHead | LinearHeads,
  options?: OnnxExportOptions,
): Uint8Array {
  const { precision, sepTokenId } = resolveOptions(options);
  const weights = loadBertWeights(baseModel);
  const hiddenSize = weights.config.hiddenSize;
  const { matrix, biases } = headMatrix(head, hiddenSize);
  const columns = biases.length;
  const g = new GraphBuilder();
  const body = addBertBody(g, weights, linearFor(precision), sepTokenId);
  const embedding = addSentencePooling(g, body, weights.baseModel);
  const w = g.constant('classifier.weight_t', OnnxType.FLOAT, [hiddenSize, columns], matrix);
  const b = g.constant('classifier.bias', OnnxType.FLOAT, [columns], biases);
  g.op('Add', [g.op('MatMul', [embedding, w]), b], {}, 'logits');
  g.output('logits', OnnxType.FLOAT, [kBatchDim, columns]);
  const kind = 'bias' in head ? 'binary' : `${columns}-label`;
  return g.toModel({
    graphName: `${weights.baseModel.name}-classifier-${precision}`,
    docString: `${weights.baseModel.name} ${kind} classifier`,
  });
}

/** The head as the [hidden, columns] matrix the graph multiplies by, and its biases. */
function headMatrix(head: LinearHead | LinearHeads, hiddenSize: number): { matrix: Float32Array; biases: Float32Array } {
  if (head !== null && typeof head === 'object' && 'biases' in head) {
    const labels = head.biases instanceof Float32Array ? head.biases.length : 0;
    if (labels < 2 || !head.biases.every(Number.isFinite))
      throw new TypeError('head.biases must be a Float32Array of at least 2 finite numbers');
    if (!(head.weights instanceof Float32Array) || head.weights.length !== labels * hiddenSize) {
      throw new TypeError(`head.weights must be a Float32Array of length ${labels * hiddenSize} (${labels} labels x ${hiddenSize})`);
    }
    const matrix = new Float32Array(hiddenSize * labels);
    for (let k = 0; k < labels; k++) for (let i = 0; i < hiddenSize; i++) matrix[i * labels + k] = head.weights[k * hiddenSize + i];
    return { matrix, biases: head.biases };
  }
  if (!(head?.weights instanceof Float32Array) || head.weights.length !== hiddenSize) {
    throw new TypeError(`head.weights must be a Float32Array of length ${hiddenSize}`);
  }
  if (typeof head.bias !== 'number' || !Number.isFinite(head.bias)) {
    throw new TypeError('head.bias must be a finite number');
  }
  // One MatMul against [hidden, 2] whose first column is zero: the false logit is exactly 0.
  const matrix = new Float32Array(hiddenSize * 2);
  for (let i = 0; i < hiddenSize; i++) matrix[i * 2 + 1] = head.weights[i];
  return { matrix, biases: new Float32Array([0, head.bias]) };
}
