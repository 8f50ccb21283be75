import { readFileSync } from 'node:fs';

import { SvcError } from '../../errors.js';
import { type BaseModel, resolveBaseModel } from '../base-models.js';
import { SafetensorsFile } from '../safetensors.js';

/**
 * The encoder families the ONNX graph expresses: BERT; XLM-RoBERTa (BERT's layers, positions after the
 * padding id); MPNet (XLM-RoBERTa's positions, no token types, a relative position bias in attention).
 */
export type BertFamilyModelType = 'bert' | 'xlm-roberta' | 'mpnet';
const kModelTypes: readonly string[] = Object.freeze(['bert', 'xlm-roberta', 'mpnet']);

/** The BERT architecture numbers an encoder graph needs, read from config.json. */
export interface BertConfig {
  /** config.json `model_type` (absent: `bert`). */
  readonly modelType: BertFamilyModelType;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  readonly layerNormEps: number;
  readonly vocabSize: number;
  readonly maxPositions: number;
  /** Token types: 2 for BERT, 1 for XLM-RoBERTa, 0 for MPNet (which has no such embedding). */
  readonly typeVocabSize: number;
  /** The padding id; XLM-RoBERTa counts a token's position from it (`pad_token_id + 1` is the first). */
  readonly padTokenId: number;
}

/** A BERT checkpoint: its config, its raw config.json, and fp32 access to its weights by HF name. */
export interface BertWeights {
  readonly baseModel: BaseModel;
  readonly config: BertConfig;
  readonly rawConfig: Readonly<Record<string, unknown>>;
  /** A weight as fp32 in its stored shape; `name` is without its checkpoint prefix (`bert.`, `roberta.`, `mpnet.`). */
  tensor(name: string): Float32Array;
  shape(name: string): readonly number[];
}

function positiveInteger(raw: Record<string, unknown>, key: string, source: string): number {
  const value = raw[key];
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new SvcError('internal', `${source}: ${key} must be a positive integer`);
  }
  return value;
}

/**
 * Parses the architecture fields of a BERT config.json and rejects what our graph cannot express.
 *
 * @example
 * ```ts
 * parseBertConfig(JSON.parse(readFileSync(resolveBaseModel('svc-small').configFile, 'utf8')));
 * // { modelType: 'bert', hiddenSize: 384, numLayers: 6, numHeads: 12, intermediateSize: 1536,
 * //   layerNormEps: 1e-12, vocabSize: 30522, maxPositions: 512, typeVocabSize: 2, padTokenId: 0 }
 * ```
 */
export function parseBertConfig(raw: Record<string, unknown>, source = 'config.json'): BertConfig {
  const modelType = (raw.model_type ?? 'bert') as BertFamilyModelType;
  if (!kModelTypes.includes(modelType)) {
    throw new SvcError('internal', `${source}: model_type '${String(modelType)}' is not one of ${kModelTypes.join(', ')}`);
  }
  const act = raw.hidden_act ?? 'gelu';
  if (act !== 'gelu') throw new SvcError('internal', `${source}: hidden_act '${String(act)}' is not supported (gelu only)`);
  const positions = raw.position_embedding_type ?? 'absolute';
  if (positions !== 'absolute') {
    throw new SvcError('internal', `${source}: position_embedding_type '${String(positions)}' is not supported`);
  }
  const config: BertConfig = {
    modelType,
    hiddenSize: positiveInteger(raw, 'hidden_size', source),
    numLayers: positiveInteger(raw, 'num_hidden_layers', source),
    numHeads: positiveInteger(raw, 'num_attention_heads', source),
    intermediateSize: positiveInteger(raw, 'intermediate_size', source),
    layerNormEps: typeof raw.layer_norm_eps === 'number' ? raw.layer_norm_eps : 1e-12,
    vocabSize: positiveInteger(raw, 'vocab_size', source),
    maxPositions: positiveInteger(raw, 'max_position_embeddings', source),
    typeVocabSize: modelType === 'mpnet' ? 0 : typeof raw.type_vocab_size === 'number' ? raw.type_vocab_size : 2,
    // transformers' defaults: BertConfig pads with 0, XLMRobertaConfig and MPNetConfig with 1.
    padTokenId: typeof raw.pad_token_id === 'number' ? raw.pad_token_id : modelType === 'bert' ? 0 : 1,
  };
  if (config.hiddenSize % config.numHeads !== 0) {
    throw new SvcError('internal', `${source}: hidden_size is not a multiple of num_attention_heads`);
  }
  return Object.freeze(config);
}

/** Resolves a base model name (or passes a BaseModel through). */
export function toBaseModel(baseModel: string | BaseModel): BaseModel {
  return typeof baseModel === 'string' ? resolveBaseModel(baseModel) : baseModel;
}

// Where a task model saves its encoder: BertFor* under `bert.`, XLMRobertaFor* under `roberta.`, MPNetFor* under `mpnet.`.
const kCheckpointPrefixes = Object.freeze(['', 'bert.', 'roberta.', 'mpnet.']);

/**
 * Opens a base model's config.json and safetensors. Checkpoints saved from `BertModel` name
 * weights `embeddings.*`, those saved from a task model `bert.embeddings.*` (`roberta.` for
 * XLM-RoBERTa, `mpnet.` for MPNet); all are accepted.
 *
 * @example
 * ```ts
 * const weights = loadBertWeights('svc-small');
 * weights.config.numLayers; // 6
 * weights.shape('encoder.layer.0.intermediate.dense.weight'); // [1536, 384]
 * ```
 */
export function loadBertWeights(baseModel: string | BaseModel): BertWeights {
  const model = toBaseModel(baseModel);
  const rawConfig = JSON.parse(readFileSync(model.configFile, 'utf8')) as Record<string, unknown>;
  const config = parseBertConfig(rawConfig, model.configFile);
  const file = SafetensorsFile.open(model.weightsFile);
  const prefix = kCheckpointPrefixes.find((p) => file.has(`${p}embeddings.word_embeddings.weight`));
  if (prefix === undefined) {
    throw new SvcError('internal', `${model.weightsFile} has no embeddings.word_embeddings.weight (bare, bert., roberta. or mpnet.)`);
  }
  return {
    baseModel: model,
    config,
    rawConfig: Object.freeze({ ...rawConfig }),
    tensor: (name) => file.float32(prefix + name),
    shape: (name) => file.info(prefix + name).shape,
  };
}
