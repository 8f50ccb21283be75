import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { SvcError } from '../../errors.js';
import type { BaseModel } from '../base-models.js';
import { type BertFamilyModelType, parseBertConfig, toBaseModel } from './bert-weights.js';
import { buildClassifierOnnx, buildEncoderOnnx, type LinearHead, type LinearHeads, type OnnxPrecision } from './export.js';
import * as is from '../../is.js';

/** What `writeTransformersJsModelDir` writes. */
export interface TransformersJsDirOptions {
  /** `'svc-small'`, a registered base model's name, or a resolved base model. */
  baseModel: string | BaseModel;
  /** `feature-extraction`: the encoder; `text-classification`: encoder + pooling + `head`. */
  task: 'feature-extraction' | 'text-classification';
  /** The name of the true label (binary classification), e.g. `'positive'`. */
  labelText?: string;
  /** The class or label names, in the order of the head's rows (multi-class and multi-label classification). */
  labels?: readonly string[];
  /** The labels are independent (multi-label: a sigmoid each); else one softmax over them. */
  multiLabel?: boolean;
  /** The trained head (classification only): binary `{ weights, bias }`, or a row per label `{ weights, biases }`. */
  head?: LinearHead | LinearHeads;
  /** `int8` also writes `onnx/model_quantized.onnx`, which transformers.js loads for `dtype: 'q8'`. */
  precision?: OnnxPrecision;
}

const kFalseLabel = 'false';

// The transformers classes of each family: transformers.js picks its model class from model_type and
// these name the same architecture for Hugging Face users.
const kArchitectures = Object.freeze({
  bert: { encoder: 'BertModel', classifier: 'BertForSequenceClassification' },
  'xlm-roberta': { encoder: 'XLMRobertaModel', classifier: 'XLMRobertaForSequenceClassification' },
  mpnet: { encoder: 'MPNetModel', classifier: 'MPNetForSequenceClassification' },
});

// The specials of the tokenizers on RoBERTa's vocabulary layout (XLM-RoBERTa's and MPNet's); each names its own unk.
const kRobertaSpecialTokens = Object.freeze({
  bos_token: '<s>',
  eos_token: '</s>',
  cls_token: '<s>',
  sep_token: '</s>',
  pad_token: '<pad>',
  mask_token: '<mask>',
});

function validate(options: TransformersJsDirOptions): void {
  is.object(options, 'options');
  if (options.task !== 'feature-extraction' && options.task !== 'text-classification') {
    throw new RangeError(`options.task must be 'feature-extraction' or 'text-classification'`);
  }
  if (options.precision !== undefined && options.precision !== 'fp32' && options.precision !== 'int8') {
    throw new RangeError(`options.precision must be 'fp32' or 'int8'`);
  }
  if (options.task === 'text-classification' && options.labels !== undefined) {
    if (
      !Array.isArray(options.labels) ||
      options.labels.length < 2 ||
      !options.labels.every((l) => typeof l === 'string' && l.length > 0)
    ) {
      throw new TypeError('options.labels must be an array of at least 2 non-empty strings');
    }
    if (!options.head || !('biases' in options.head) || options.head.biases.length !== options.labels.length) {
      throw new TypeError(`options.head must have a row per label (${options.labels.length})`);
    }
  } else if (options.task === 'text-classification') {
    if (typeof options.labelText !== 'string' || options.labelText.length === 0) {
      throw new TypeError('options.labelText must be a non-empty string');
    }
    if (options.labelText === kFalseLabel) throw new RangeError(`options.labelText must not be '${kFalseLabel}'`);
    if (!options.head) throw new TypeError('options.head is required for text-classification');
  } else if (options.head !== undefined) {
    throw new TypeError('options.head is only used for text-classification');
  }
}

/** The base config.json, plus the label maps transformers.js and Hugging Face read for classifiers. */
function modelConfig(baseConfig: Record<string, unknown>, options: TransformersJsDirOptions, source: string): Record<string, unknown> {
  // Browsers default to dtype q8 (model_quantized.onnx); without that file, point them at fp32.
  const runtime = options.precision === 'int8' ? {} : { 'transformers.js_config': { dtype: 'fp32' } };
  const { modelType } = parseBertConfig(baseConfig, source);
  // model_type kept as the base says (absent means bert to transformers, so it is written out).
  const family = { model_type: modelType };
  const architectures = kArchitectures[modelType];
  if (options.task === 'feature-extraction') return { ...baseConfig, ...family, architectures: [architectures.encoder], ...runtime };
  if (options.labels !== undefined) {
    const labels = options.labels;
    return {
      ...baseConfig,
      ...family,
      ...runtime,
      architectures: [architectures.classifier],
      // multi_label: transformers.js applies a sigmoid to each logit; single_label, one softmax over them.
      problem_type: options.multiLabel ? 'multi_label_classification' : 'single_label_classification',
      num_labels: labels.length,
      id2label: Object.fromEntries(labels.map((label, k) => [k, label])),
      label2id: Object.fromEntries(labels.map((label, k) => [label, k])),
    };
  }
  const labelText = options.labelText as string;
  return {
    ...baseConfig,
    ...family,
    ...runtime,
    architectures: [architectures.classifier],
    // single_label: transformers.js applies softmax over the two logits [0, score] -> sigmoid(score).
    problem_type: 'single_label_classification',
    num_labels: 2,
    id2label: { 0: kFalseLabel, 1: labelText },
    label2id: { [kFalseLabel]: 0, [labelText]: 1 },
  };
}

/**
 * tokenizer_config.json: the base folder's own where it has one, else what its family and its
 * tokenizer.json's kind imply (MPNet: MPNetTokenizer; WordPiece: BertTokenizer; Unigram: the XLM-R
 * vocabulary's XLMRobertaTokenizer), with the special tokens transformers.js pads and closes with.
 * Either way truncated at the base's budget.
 */
async function tokenizerConfig(
  baseModel: BaseModel,
  tokenizer: Record<string, unknown>,
  modelType: BertFamilyModelType,
): Promise<Record<string, unknown>> {
  const model_max_length = baseModel.maxLength;
  const ownFile = join(baseModel.dir, 'tokenizer_config.json');
  if (existsSync(ownFile)) {
    const own = JSON.parse(await readFile(ownFile, 'utf8')) as Record<string, unknown>;
    return { ...own, model_max_length };
  }
  const kind = (tokenizer.model as { type?: unknown } | undefined)?.type;
  const normalizer = tokenizer.normalizer as { lowercase?: unknown } | null | undefined;
  if (modelType === 'mpnet') {
    // all-mpnet-base-v2's: BERT's uncased WordPiece under RoBERTa's <s> </s> <pad>, and BERT's [UNK].
    return {
      tokenizer_class: 'MPNetTokenizer',
      do_lower_case: normalizer?.lowercase !== false,
      clean_up_tokenization_spaces: true,
      model_max_length,
      ...kRobertaSpecialTokens,
      unk_token: '[UNK]',
    };
  }
  if (kind === 'Unigram') {
    return {
      tokenizer_class: 'XLMRobertaTokenizer',
      clean_up_tokenization_spaces: true,
      model_max_length,
      ...kRobertaSpecialTokens,
      unk_token: '<unk>',
    };
  }
  return {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: normalizer?.lowercase !== false,
    tokenize_chinese_chars: true,
    strip_accents: null,
    clean_up_tokenization_spaces: true,
    model_max_length,
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    pad_token: '[PAD]',
    unk_token: '[UNK]',
    mask_token: '[MASK]',
  };
}

/**
 * The base tokenizer.json with its truncation set to the tokens our predictions keep (the base's
 * max_seq_length, 256 for svc-small) and any fixed padding removed (svc-small's file pads
 * everything to 128, which Python's `tokenizers` would honor).
 */
function tokenizerJson(raw: Record<string, unknown>, maxLength: number): Record<string, unknown> {
  const truncation = raw.truncation as Record<string, unknown> | null | undefined;
  return {
    ...raw,
    truncation: { ...(truncation ?? { strategy: 'LongestFirst', stride: 0 }), max_length: maxLength },
    padding: null,
  };
}

interface PostProcessor {
  type?: string;
  single?: { SpecialToken?: { id: string } }[];
  special_tokens?: Record<string, { ids: number[] }>;
  sep?: [string, number];
}

/**
 * The id of the token a text ends with: the last special token of the post-processor's template
 * ([SEP] for BERT, `</s>` for the XLM-R vocabulary), or a Bert/Roberta processor's `sep`.
 */
function closingTokenId(tokenizer: Record<string, unknown>, source: string): number {
  const processor = tokenizer.post_processor as PostProcessor | null | undefined;
  if (processor?.sep !== undefined) return processor.sep[1];
  const last = processor?.single?.at(-1)?.SpecialToken?.id;
  const id = last === undefined ? undefined : processor?.special_tokens?.[last]?.ids[0];
  if (id === undefined) throw new SvcError('internal', `${source}: its post_processor adds no closing special token`);
  return id;
}

/**
 * Writes a model directory that transformers.js (v4) loads with `pipeline(task, dir)`:
 * `config.json`, `tokenizer.json`, `tokenizer_config.json` and `onnx/model.onnx` (plus
 * `onnx/model_quantized.onnx` for `precision: 'int8'`). Resolves to the relative paths written.
 *
 * @example
 * ```ts
 * await writeTransformersJsModelDir('/models/acme/spam', {
 *   baseModel: 'svc-small', task: 'text-classification', labelText: 'spam',
 *   head: { weights, bias: -0.3 },
 * });
 * // ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx']
 * const classify = await pipeline('text-classification', '/models/acme/spam');
 * await classify('WIN A FREE CRUISE'); // [{ label: 'spam', score: 0.93 }]
 * ```
 */
export async function writeTransformersJsModelDir(outDir: string, options: TransformersJsDirOptions): Promise<string[]> {
  validate(options);
  const baseModel = toBaseModel(options.baseModel);
  const precision = options.precision ?? 'fp32';
  const baseConfig = JSON.parse(await readFile(baseModel.configFile, 'utf8')) as Record<string, unknown>;
  const tokenizer = JSON.parse(await readFile(baseModel.tokenizerFile, 'utf8')) as Record<string, unknown>;
  // transformers.js cuts long inputs without re-adding [SEP] (or </s>); the graph restores it.
  const sepTokenId = closingTokenId(tokenizer, baseModel.tokenizerFile);
  const build = (p: OnnxPrecision): Uint8Array =>
    options.task === 'text-classification'
      ? buildClassifierOnnx(baseModel, options.head as LinearHead | LinearHeads, { precision: p, sepTokenId })
      : buildEncoderOnnx(baseModel, { precision: p, sepTokenId });
  const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

  await mkdir(join(outDir, 'onnx'), { recursive: true });
  const written: string[] = [];
  const write = async (file: string, data: string | Uint8Array): Promise<void> => {
    await writeFile(join(outDir, file), data);
    written.push(file);
  };
  await write('config.json', json(modelConfig(baseConfig, options, baseModel.configFile)));
  // The base's own tokenizer.json (a Unigram one included): transformers.js tokenizes as we do.
  await write('tokenizer.json', JSON.stringify(tokenizerJson(tokenizer, baseModel.maxLength)));
  const { modelType } = parseBertConfig(baseConfig, baseModel.configFile);
  await write('tokenizer_config.json', json(await tokenizerConfig(baseModel, tokenizer, modelType)));
  await write('onnx/model.onnx', build('fp32'));
  if (precision === 'int8') await write('onnx/model_quantized.onnx', build('int8'));
  return written;
}
