// The tasks the pool's workers run: plain data in, typed arrays out. Shared by the
// worker (which runs them) and the main thread (which only builds and awaits them).
import type { MessagePort } from 'node:worker_threads';

import type { BaseModelRegistration } from '../model/base-models.js';
import type { Head } from '../model/directory.js';
import type { EncoderPrecision, PrecisionSetting } from '../native/encoder.js';
import type { KernelChoice } from '../native/kernel-choice.js';
import type { TruncationSide } from '../native/tokenizer.js';
import type { AdapterOptions, AdapterTensor } from '../native/trainer.js';
import type { Manifest } from '../contract/manifest.js';
import type { TaskType } from '../contract/train-request.js';

/**
 * What each example is labelled with, as the pool's tasks carry it. `classes`: one class index per
 * example (binary: 0 or 1; multi-class: the index into the model's labels); `label-sets`: per
 * example a row of `count` 0/1 flags (multi-label, n x count, row-major).
 */
export type ExampleTargets =
  | { readonly kind: 'classes'; readonly classes: Int32Array; readonly count: number }
  | { readonly kind: 'label-sets'; readonly sets: Uint8Array; readonly count: number };

/** Cross-validated quality of a head, as the model object and the manifest report it (train/cross-validate.ts). */
export interface CrossValidation {
  /** Share of held-out examples labelled correctly (multi-label: every label of the text right). */
  accuracy: number;
  /** Unweighted mean of each class's F1 on the held-out examples (multi-label: each label's). */
  macroF1: number;
  folds: number;
}

/** How the head uses the label words (train/label-words.ts); `none` fits on the examples alone. */
export type LabelWordsLever = { kind: 'none' } | { kind: 'examples'; weight: number } | { kind: 'direction'; scale: number };

/** How a head self-trains on unlabelled texts (train/self-training.ts). */
export interface SelfTrainingOptions {
  /** Share of the unlabelled texts pseudo-labelled, 0 < share <= 1. */
  share: number;
  /** Label-and-refit rounds (each relabels from the last head). */
  rounds: number;
}

/** Sentence embeddings of `texts` (n x dim, L2-normalized), as one engine batch. */
export interface EmbedTask {
  kind: 'embed';
  baseModel: string;
  /** A fine-tuned model's encoder file (its weights or its adapter); left out or null: the base encoder. */
  encoderFile?: string | null;
  texts: string[];
  /** Which tokens a text too long for the encoder loses (`'start'`: its first ones). Default `'end'`. */
  truncate?: TruncationSide;
  /**
   * Embed in the pool's prediction precision rather than training's fp32: an evaluation report scored in the
   * background then gives each text the probability predict answers (service/evaluation.ts).
   */
  asPredicted?: boolean;
}

/**
 * The heads of a merged batch, packed: head h owns `rows[h]` rows of `weights` (and `biases`) from
 * row `first[h]` on; `softmax[h]` is 1 when its rows are one softmax (multi-class), 0 when each row
 * is a sigmoid (binary: one row; multi-label: a row per label).
 */
export interface HeadTable {
  /** Total rows x dim, float64 as fitted. */
  weights: Float64Array;
  biases: Float64Array;
  rows: Int32Array;
  first: Int32Array;
  softmax: Uint8Array;
}

/**
 * Probabilities for a merged batch: `texts` in segments, segment s holds `counts[s]` texts
 * scored by head `heads[s]` of `table`.
 */
export interface PredictTask {
  kind: 'predict';
  baseModel: string;
  /** A fine-tuned model's encoder weights; null for the frozen base encoder. */
  encoderFile: string | null;
  texts: string[];
  counts: Int32Array;
  heads: Int32Array;
  table: HeadTable;
  /**
   * Per segment, the adapter model's adapter file its texts go through on the base encoder (null: the base alone);
   * left out when no segment has one. A batch then mixes adapter models (the segmented path).
   */
  adapters?: (string | null)[];
  /**
   * Per text, 1 where a text too long for the encoder keeps its last tokens (its call asked `truncate: 'start'`);
   * left out when every text keeps its first ones. Per text, not per batch: calls of either side share one batch.
   */
  fromStart?: Uint8Array;
}

/**
 * Reads and checks an adapter model's adapter in a worker, natively, and leaves it in that worker's cache: what
 * `Classifier.load` does instead of reading the values on the main thread.
 */
export interface AdapterTask {
  kind: 'adapter';
  baseModel: string;
  /** The model's adapter_model.safetensors (adapter_config.json beside it). */
  file: string;
}

/** A worker's adapter cache after a task that used it (counters since the worker started). */
export interface AdapterCacheReport {
  worker: number;
  hits: number;
  misses: number;
  evictions: number;
  bytes: number;
}

/**
 * A predict task's answer: per text, its head's rows of probabilities (binary: P(true)), one text
 * after the other; 1 where the text was cut to the encoder's length; and the share of the word pieces the
 * encoder read that were the unknown token (1 for a text that left none).
 */
export interface PredictResult {
  probabilities: Float32Array;
  truncated: Uint8Array;
  unknownShare: Float64Array;
  /** Set when the batch went through adapters. */
  adapterCache?: AdapterCacheReport;
  /** Set when the task did one-time work before its batch (the predict speed must not count it). */
  setup?: PredictSetup;
}

/**
 * What a predict task spent once before its batch: the worker starting up (on its first task), the tokenizer and the
 * encoder loading, and the loaded encoder's warm-up, which is timed: the speed measured before any batch.
 */
export interface PredictSetup {
  /** A worker's first task: when it reached the worker, in milliseconds since the epoch (`performance.timeOrigin + performance.now()`). */
  reachedAt: number | null;
  /** Milliseconds spent loading and warming up. */
  ms: number;
  /** The warm-up on the encoder just loaded (estimated tokens, milliseconds); null when none was loaded. */
  warmUp: { tokens: number; ms: number } | null;
}

/**
 * The head a task trains: `logistic` (binary, one row), `softmax` (multi-class, a row per class),
 * `one-vs-rest` (multi-label, an independent logistic regression per label).
 */
export type HeadKind = 'logistic' | 'softmax' | 'one-vs-rest';

/** Fits a head on embeddings (n x dim) and their targets, and measures it. */
export interface FitTask {
  kind: 'fit';
  head: HeadKind;
  embeddings: Float32Array;
  targets: ExampleTargets;
  dim: number;
  C: number;
  /** Weigh examples as scikit-learn's class_weight 'balanced' does (per label for one-vs-rest). */
  balanced: boolean;
  /** Held-out examples the fitted head is scored on. */
  validation: { embeddings: Float32Array; targets: ExampleTargets } | null;
  /** Cross-validate the head (k fits more); false when the estimate comes from another fit. */
  crossValidate: boolean;
  /**
   * The label words' template sentences embedded by the same body, their targets, and how the head
   * uses them (train/label-words.ts); every fold of the cross-validation uses them too. Absent: none.
   */
  labelWords?: { embeddings: Float32Array; targets: ExampleTargets; lever: LabelWordsLever } | null;
  /**
   * Unlabelled texts embedded by the same body: single-label heads self-train on them
   * (train/self-training.ts), in every fold of the cross-validation too. Absent: none.
   */
  unlabeled?: { embeddings: Float32Array; selfTraining: SelfTrainingOptions } | null;
}

/** Accuracy and macro-F1 on a set of examples. */
export interface Scores {
  accuracy: number;
  macroF1: number;
}

export interface FitResult {
  /** Rows x dim (binary: one row). */
  weights: Float64Array;
  biases: Float64Array;
  solver: 'newton-cholesky' | 'lbfgs';
  /** Solver steps (one-vs-rest: the most any label's fit took). */
  iterations: number;
  gradientNorm: number;
  /** Share of the training examples the fitted head labels correctly (multi-label: whole label set). */
  trainAccuracy: number;
  /** The same head's k-fold cross-validated quality on the examples; null when the task asked for none. */
  crossValidation: CrossValidation | null;
  /**
   * With `crossValidation`: each example's probabilities from the fold that held it out, one row per example (binary:
   * P(true); softmax: each class's; one-vs-rest: each label's). The evaluation report without a validation set.
   */
  outOfFold: Float64Array | null;
  /** The fitted head on the validation examples, when there were any. */
  validation: Scores | null;
}

/** Writes a complete model directory (manifest, head, config, tokenizer, ONNX). */
export interface SaveTask {
  kind: 'save';
  dir: string;
  manifest: Manifest;
  /** A fine-tuned model's encoder weights, copied into the directory; null for a frozen body. */
  encoderFile: string | null;
  head: Head;
  /** An adapter model's merged transformers.js files too (the others always have theirs). */
  transformersJs: boolean;
}

/** Writes an adapter model's transformers.js files (base + adapter merged, ONNX) into `outDir` (model/merged-export.ts). */
export interface ExportMergedTask {
  kind: 'export-merged';
  modelDir: string;
  outDir: string;
}

/**
 * Fine-tunes the base encoder on SetFit pairs of the examples, writes it to `outDir` as
 * `model.fp16.safetensors` with the base config.json, and embeds the examples with it. With
 * `adapter`, trains a LoRA adapter on the frozen base instead, writes nothing, and returns the
 * adapter's tensors with the examples embedded by base + adapter.
 */
export interface FinetuneTask {
  kind: 'finetune';
  baseModel: string;
  /** The examples' texts, then any more texts to embed with the fine-tuned encoder (validation). */
  texts: string[];
  /** Which tokens a text too long for the encoder loses (`'start'`: its first ones). Default `'end'`. */
  truncate?: TruncationSide;
  /** The examples' targets: the first `targetCount(targets)` texts are paired. */
  targets: ExampleTargets;
  /** Pair rounds per example. */
  iterations: number;
  seed: number;
  /** Engine threads for the training steps. */
  threads: number;
  /** Train this LoRA adapter instead of the whole encoder. Left out or null: full fine-tuning. */
  adapter?: AdapterOptions | null;
  /** Peak learning rate. Default: the method's, `kFinetuneRecipe.lr` (full) or `kAdapterRecipe.lr` (adapter). */
  lr?: number;
  /** After the contrastive steps, the end-to-end phase for this many epochs (single-label targets only). Left out or null: none. */
  endToEnd?: { epochs: number } | null;
  /** Where full fine-tuning writes the encoder (an adapter run writes nothing). */
  outDir: string;
  /** Receives a {@link FinetuneStepMessage} after every step. */
  progress: MessagePort;
  /** One Int32 over a SharedArrayBuffer: the caller stores 1 to stop between steps. */
  stop: Int32Array;
}

export interface FinetuneStepMessage {
  done: number;
  total: number;
  /** Mean loss over the last few steps. */
  loss: number;
}

/** What a finished fine-tuning task returns (a stopped one returns null). */
export interface FinetuneResult {
  /**
   * Every text embedded by the fine-tuned encoder as saved (texts x dim); with an adapter, by the
   * trainer's base + adapter in fp32 (the saved fp16 adapter merged at load embeds within 1e-4 in cosine).
   */
  embeddings: Float32Array;
  /** The fine-tuned encoder's weights in `outDir`; null when an adapter trained. */
  encoderFile: string | null;
  /** The trained adapter's A and B under PEFT's names (their buffers transferred); null for full fine-tuning. */
  adapter: AdapterTensor[] | null;
  pairs: number;
  steps: number;
  finalLoss: number;
  /** Steps of the end-to-end phase; 0 when none ran. */
  endToEndSteps: number;
  seconds: number;
}

/** Loads the addon and reports the worker's engine thread count. */
export interface PingTask {
  kind: 'ping';
}

export interface PingResult {
  threadId: number;
  engineThreads: number;
  predictThreads: number;
  cpuLevel: string;
  /** The precision the worker's predicting encoders run: the pool's setting, `'auto'` resolved on this CPU. */
  precision: EncoderPrecision;
  /** The measured kernel choice behind it; null for an explicit fp32 or int8, which need none. */
  kernels: KernelChoice | null;
}

/**
 * Which texts are longer than the base model reads (1: they would be cut), by its tokenizer alone:
 * what `truncate: 'none'` checks before a training job is accepted, without running the encoder.
 */
export interface FitsTask {
  kind: 'fits';
  baseModel: string;
  texts: string[];
}

/**
 * Explain's search: the `k` training examples nearest each input. The examples come from a model directory's kept
 * files (read once and kept by the worker, so a call parses nothing) or, for a model still in memory, as their
 * embeddings.
 */
export interface NearestTask {
  kind: 'nearest';
  /** The inputs' embeddings, inputs x dim, L2-normalized. */
  inputs: Float32Array;
  dim: number;
  k: number;
  bank: { kind: 'files'; dir: string; modelId: string; taskType: TaskType } | { kind: 'embeddings'; embeddings: Float32Array };
  /** Most characters of an example's text that a `files` answer carries. */
  textChars: number;
}

/**
 * Per input, its nearest examples, most similar first (ties: the earlier example): `count` of them each
 * (k, or fewer when the model has fewer examples), `indices` and `similarities` inputs x count.
 */
export interface NearestResult {
  count: number;
  indices: Int32Array;
  similarities: Float64Array;
  /** With a `files` bank: the examples `indices` names, in that order, each text cut to `textChars` (`cut` says so). */
  examples: NearestExample[] | null;
}

/** An example as a `files` search answers it: its label (binary, multi-class) or labels (multi-label), its text maybe cut. */
export interface NearestExample {
  text: string;
  label?: boolean | string;
  labels?: string[];
  /** The text is longer than the answer carries: `text` is its start. */
  cut: boolean;
}

export type PoolTask =
  EmbedTask | PredictTask | AdapterTask | FitTask | FinetuneTask | SaveTask | ExportMergedTask | PingTask | FitsTask | NearestTask;

/**
 * A task as it crosses to a worker: with the base model folders registered in the main thread, which the
 * worker registers on first sight (registrations made after the pool started reach it this way too).
 */
export type PooledTask = PoolTask & { baseModels?: readonly BaseModelRegistration[] };

/** What the worker is started with. */
export interface WorkerSettings {
  engineThreads: number;
  /**
   * Threads of the encoders that predict and embed: every core of the pool (workers x engineThreads).
   * A lone batch then has the whole machine; batches on several workers at once share it (the
   * engine's caller does the work its helpers are not scheduled for), and a training step, at a
   * lower priority, gives way to them.
   */
  predictThreads: number;
  /** Nice value for the worker's threads (Linux), so the host's event loop comes first. */
  niceness: number;
  /** Arithmetic of the encoders that predict (training embeds in fp32 whatever this says); `'auto'` as measured. */
  precision: PrecisionSetting;
  /** Bytes of LoRA adapters each worker keeps in memory (fp32), least recently used evicted first. */
  adapterCacheBytes: number;
}

/** The BroadcastChannel on which disposed fine-tuned encoders are announced to the workers. */
export const kEncoderChannel = 'svc-classify:forget-encoder';

/** Key of the value a worker returns in place of throwing an SvcError. */
export const kWorkerError = '__svcError';

export interface WorkerError {
  [kWorkerError]: { code: string; message: string; param: string | null };
}
