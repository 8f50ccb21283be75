import { callNative, SvcError } from '../errors.js';
import type { NativeTrainer } from './binding.js';
import { kernelChoice } from './kernel-choice.js';
import { loadAddon } from './load.js';
import * as is from '../is.js';
import { kDefaultSeed } from '../random.js';

/** A packed batch: the token ids of every text back to back, and the pairs the loss compares. */
export interface PairBatch {
  /** All texts' token ids, concatenated. */
  readonly ids: Int32Array;
  /** Tokens per text; sums to `ids.length`. */
  readonly lengths: Int32Array;
  /** Index (into the texts) of each pair's first text. */
  readonly pairA: Int32Array;
  /** Index of each pair's second text. */
  readonly pairB: Int32Array;
  /** 1 for a same-label pair, 0 otherwise. */
  readonly labels: Float32Array;
}

/**
 * A linear layer of every encoder layer that an adapter may adapt: the attention's query, key and
 * value projections, its output projection, and the feed-forward block's two layers (PEFT's module
 * paths `attention.self.query`, ..., `attention.output.dense`, `intermediate.dense`, `output.dense`).
 */
export type AdapterTarget = 'query' | 'key' | 'value' | 'attention.output.dense' | 'intermediate.dense' | 'output.dense';

/** Every {@link AdapterTarget}, in the order the trainer lays them out. */
export const kAdapterTargets: readonly AdapterTarget[] = Object.freeze([
  'query',
  'key',
  'value',
  'attention.output.dense',
  'intermediate.dense',
  'output.dense',
] as const);

/**
 * LoRA adapter training: the base encoder stays frozen; each target layer W gains
 * `(alpha / rank) · B·A` with A (rank x in) and B (out x rank, starting at zero), and only A and B train.
 */
export interface AdapterOptions {
  /** r, the adapter's rank: 1 to the encoder's hidden size. */
  rank: number;
  /** lora_alpha: the low-rank path is scaled by alpha / rank. */
  alpha: number;
  /** The layers adapted, in every encoder layer; at least one, each once. */
  targets: readonly AdapterTarget[];
}

/** The adapter a fine-tune trains unless told otherwise: rank 8, alpha 16, on every linear layer. */
export const kDefaultAdapter: AdapterOptions = Object.freeze({ rank: 8, alpha: 16, targets: kAdapterTargets });

/** One trained adapter matrix under its PEFT name: A is [rank, in], B [out, rank], row-major. */
export interface AdapterTensor {
  name: string;
  shape: [number, number];
  data: Float32Array;
}

export interface EncoderTrainerOptions {
  /** Optimizer steps the learning-rate schedule spans (warm-up, then linear decay to 0). Required. */
  totalSteps: number;
  /** Threads for the step's matrix products. Default 1. */
  threads?: number;
  /** Seeds the dropout masks; same seed and threads give bitwise the same run. Default 42. */
  seed?: number;
  /** Peak learning rate. Default 2e-5. */
  lr?: number;
  /** AdamW decoupled weight decay (not on biases and LayerNorm). Default 0.01. */
  weightDecay?: number;
  /** Share of steps spent warming up. Default 0.1. */
  warmupRatio?: number;
  /** AdamW's epsilon (added to the root of the second moment). Default 1e-6. */
  eps?: number;
  /** Dropout in training. Default: the model's `hidden_dropout_prob` (0.1). */
  dropout?: number;
  /** Clip the gradient to this global L2 norm before each update (SetFit uses 1); 0: no clipping. Default 0. */
  maxGradNorm?: number;
  /** Train the embedding tables and their LayerNorm too (as sentence-transformers does). Default false. */
  trainEmbeddings?: boolean;
  /**
   * Train a LoRA adapter instead of the whole encoder (no weight decay exemption: A and B decay as
   * `weightDecay` says). Left out: full fine-tuning. Cannot be combined with `trainEmbeddings`.
   */
  adapter?: AdapterOptions;
  /**
   * How the base model pools a text's token states, as its `1_Pooling/config.json` says: `'mean'` (default) or
   * `'cls'`, the first token's state. The loss, the head phase and {@link EncoderTrainer.embed} all see that pooling.
   */
  pooling?: 'mean' | 'cls';
  /**
   * Whether the base model L2-normalizes its embeddings (a `2_Normalize` module). Default `true`. The cosine pair loss
   * is the same either way; the head phase and `embed` see the embeddings as the base gives them.
   */
  normalize?: boolean;
}

export interface TrainStep {
  /** The batch's cosine-similarity loss before the update. */
  loss: number;
  /** The learning rate the update used. */
  lr: number;
  /** Steps done, this one included. */
  step: number;
  /** Global L2 norm of the batch's gradient, before any clipping. */
  gradNorm: number;
}

/** The end-to-end phase's settings ({@link EncoderTrainer.startHeadPhase}); SetFit's names in brackets. */
export interface HeadPhaseOptions {
  /** Peak rate of the encoder's (or the adapter's) updates (`body_learning_rate`). */
  bodyLr: number;
  /** Peak rate of the head's updates (`head_learning_rate`, 1e-2). */
  headLr: number;
  /** AdamW decay of the body and of the head's weights (`l2_weight`, 0.01). */
  weightDecay: number;
  /** Steps the phase runs: its rates decay linearly to 0 over them, without warm-up. */
  totalSteps: number;
}

/** A batch of the end-to-end phase: packed texts and each one's class. */
export interface HeadBatch {
  ids: Int32Array;
  lengths: Int32Array;
  targets: Int32Array;
}

interface ResolvedTrainerOptions {
  totalSteps: number;
  threads: number;
  seed: number;
  lr: number;
  weightDecay: number;
  warmupRatio: number;
  eps: number;
  maxGradNorm: number;
  trainEmbeddings: boolean;
  dropout: number | undefined;
  adapter: AdapterOptions | undefined;
  pooling: 'mean' | 'cls';
  normalize: boolean;
}

const kDefaults = Object.freeze({ threads: 1, seed: kDefaultSeed, lr: 2e-5, weightDecay: 0.01, warmupRatio: 0.1 });
const kAdam = Object.freeze({ beta1: 0.9, beta2: 0.999, eps: 1e-6 });

function resolve(options: EncoderTrainerOptions): ResolvedTrainerOptions {
  is.object(options, 'options');
  const number = (key: 'lr' | 'weightDecay' | 'warmupRatio' | 'dropout' | 'eps' | 'maxGradNorm', min: number, max: number) =>
    options[key] === undefined ? undefined : is.numberInRange(options[key], `options.${key}`, min, max);
  const seed = is.nonNegativeInteger(options.seed ?? kDefaults.seed, 'options.seed');
  return {
    totalSteps: is.positiveInteger(options.totalSteps, 'options.totalSteps'),
    threads: is.positiveInteger(options.threads ?? kDefaults.threads, 'options.threads'),
    seed,
    lr: number('lr', 0, 1) ?? kDefaults.lr,
    weightDecay: number('weightDecay', 0, 1) ?? kDefaults.weightDecay,
    warmupRatio: number('warmupRatio', 0, 1) ?? kDefaults.warmupRatio,
    eps: number('eps', 0, 1) ?? kAdam.eps,
    maxGradNorm: number('maxGradNorm', 0, Infinity) ?? 0,
    trainEmbeddings: is.boolean(options.trainEmbeddings ?? false, 'options.trainEmbeddings'),
    dropout: number('dropout', 0, 1),
    adapter: options.adapter === undefined ? undefined : resolveAdapter(options.adapter, options.trainEmbeddings === true),
    pooling: resolvePooling(options.pooling),
    normalize: is.boolean(options.normalize ?? true, 'options.normalize'),
  };
}

function resolvePooling(pooling: unknown): 'mean' | 'cls' {
  if (pooling === undefined) return 'mean';
  if (pooling !== 'mean' && pooling !== 'cls') throw new TypeError("options.pooling must be 'mean' or 'cls'");
  return pooling;
}

function resolveAdapter(adapter: AdapterOptions, trainEmbeddings: boolean): AdapterOptions {
  is.object(adapter, 'options.adapter');
  const rank = is.positiveInteger(adapter.rank, 'options.adapter.rank');
  if (typeof adapter.alpha !== 'number' || !Number.isFinite(adapter.alpha))
    throw new TypeError('options.adapter.alpha must be a positive number');
  if (!(adapter.alpha > 0)) throw new RangeError('options.adapter.alpha must be a positive number');
  const names = kAdapterTargets.map((t) => `'${t}'`).join(', ');
  const targets = adapter.targets;
  if (!Array.isArray(targets) || targets.length === 0 || targets.some((t) => !kAdapterTargets.includes(t as AdapterTarget)))
    throw new TypeError(`options.adapter.targets must be a non-empty array of ${names}`);
  if (new Set(targets).size !== targets.length) throw new RangeError('options.adapter.targets must name each layer once');
  if (trainEmbeddings) throw new RangeError('options.trainEmbeddings cannot be combined with options.adapter');
  return Object.freeze({ rank, alpha: adapter.alpha, targets: Object.freeze([...targets]) });
}

/**
 * Contrastive fine-tuning of a BERT encoder in the native core (SetFit's first
 * stage): fp32 master weights, AdamW, cosine-similarity loss over pairs of texts.
 * With `adapter`, the encoder stays frozen and a LoRA adapter trains instead
 * ({@link adapterTensors}). Synchronous: run it inside a pool worker, never on the main thread.
 *
 * @example
 * ```ts
 * const base = resolveBaseModel('svc-small');
 * const trainer = EncoderTrainer.open(base.weightsFile, base.configFile, { totalSteps: 50, threads: 2 });
 * const ids = Int32Array.of(101, 2023, 2003, 2019, 2742, 6251, 102, 101, 7592, 102);
 * trainer.step({ ids, lengths: Int32Array.of(7, 3), pairA: Int32Array.of(0),
 *   pairB: Int32Array.of(1), labels: Float32Array.of(0) });
 * // { loss: 0.0123..., lr: 0, step: 1, gradNorm: 0.04... }
 * trainer.save('/tmp/model/model.fp16.safetensors');
 * ```
 */
export class EncoderTrainer {
  readonly #native: NativeTrainer;
  readonly #adapter: boolean;

  private constructor(native: NativeTrainer, adapter: boolean) {
    this.#native = native;
    this.#adapter = adapter;
  }

  /**
   * Loads fp32 master weights from a BERT safetensors file and its config.json (read by the native
   * core, which checks every tensor against it).
   */
  static open(weightsFile: string, configFile: string, options: EncoderTrainerOptions): EncoderTrainer {
    const resolved = resolve(options);
    const { Trainer, cpuInfo } = loadAddon();
    // bf16 products only where they measured faster than fp32 on this CPU (kernel-choice.ts); a CPU without them is
    // not measured.
    const bf16 = cpuInfo().bf16 ? { bf16Products: kernelChoice(resolved.threads).trainBf16 ? 1 : 0 } : {};
    return callNative(() => {
      return new EncoderTrainer(
        new Trainer(configFile, weightsFile, {
          ...(resolved.dropout === undefined ? {} : { dropout: resolved.dropout }),
          lr: resolved.lr,
          ...kAdam,
          eps: resolved.eps,
          maxGradNorm: resolved.maxGradNorm,
          trainEmbeddings: resolved.trainEmbeddings ? 1 : 0,
          ...(resolved.adapter === undefined ? {} : { adapter: resolved.adapter }),
          weightDecay: resolved.weightDecay,
          warmupRatio: resolved.warmupRatio,
          totalSteps: resolved.totalSteps,
          seed: resolved.seed,
          threads: resolved.threads,
          ...bf16,
          clsPooling: resolved.pooling === 'cls' ? 1 : 0,
          normalize: resolved.normalize ? 1 : 0,
        }),
        resolved.adapter !== undefined,
      );
    });
  }

  /** Embedding width. */
  get dim(): number {
    return this.#call(() => this.#native.dim);
  }

  get stepsDone(): number {
    return this.#call(() => this.#native.stepsDone);
  }

  /** One forward, backward and AdamW update on a batch of pairs. */
  step(batch: PairBatch): TrainStep {
    return this.#call(() => {
      const [loss, lr, step, gradNorm] = this.#native.step(batch.ids, batch.lengths, batch.pairA, batch.pairB, batch.labels);
      return { loss: loss!, lr: lr!, step: step!, gradNorm: gradNorm! };
    });
  }

  /**
   * Starts the end-to-end phase (SetFit's `end_to_end`): after the contrastive steps, a softmax head
   * over the normalized embeddings (`head.weights`, classes x dim; `head.bias`, one per class) trains
   * together with the encoder, or with only the adapter, on the examples' cross-entropy. Each has an
   * AdamW of its own; the embedding tables stay as they are.
   *
   * @example
   * ```ts
   * trainer.startHeadPhase({ weights: new Float32Array(2 * trainer.dim), bias: new Float32Array(2) },
   *   { bodyLr: 1e-5, headLr: 1e-2, weightDecay: 0.01, totalSteps: 10 });
   * trainer.headStep({ ids, lengths: Int32Array.of(7, 3), targets: Int32Array.of(1, 0) });
   * // { loss: 0.693..., lr: 1e-5, step: 1, gradNorm: ... }
   * ```
   */
  startHeadPhase(head: { weights: Float32Array; bias: Float32Array }, options: HeadPhaseOptions): void {
    is.object(options, 'options');
    const settings = {
      bodyLr: is.numberInRange(options.bodyLr, 'options.bodyLr', 0, 1),
      headLr: is.numberInRange(options.headLr, 'options.headLr', 0, 10),
      weightDecay: is.numberInRange(options.weightDecay, 'options.weightDecay', 0, 1),
      totalSteps: is.positiveInteger(options.totalSteps, 'options.totalSteps'),
    };
    this.#call(() => this.#native.startHeadPhase(head.weights, head.bias, settings));
  }

  /** One forward, backward and update of the end-to-end phase: the head's cross-entropy over the batch's texts. */
  headStep(batch: HeadBatch): TrainStep {
    return this.#call(() => {
      const [loss, lr, step, gradNorm] = this.#native.headStep(batch.ids, batch.lengths, batch.targets);
      return { loss: loss!, lr: lr!, step: step!, gradNorm: gradNorm! };
    });
  }

  /** The batch's loss with dropout off, without updating the weights. */
  evaluate(batch: PairBatch): number {
    return this.#call(() => this.#native.evaluate(batch.ids, batch.lengths, batch.pairA, batch.pairB, batch.labels));
  }

  /** Normalized embeddings of the texts under the current weights, `lengths.length x dim`. */
  embed(ids: Int32Array, lengths: Int32Array): Float32Array {
    return this.#call(() => {
      const out = new Float32Array(lengths.length * this.#native.dim);
      this.#native.embed(ids, lengths, out);
      return out;
    });
  }

  #disposed = false;

  #call<T>(fn: () => T): T {
    // Same error and message as a disposed Encoder.
    if (this.#disposed) throw new SvcError('invalid_request', 'the trainer has been disposed');
    return callNative(fn);
  }

  /** Frees the native weights, optimizer state and threads now rather than at garbage collection. */
  dispose(): void {
    this.#disposed = true;
    this.#native.dispose();
  }

  /**
   * Writes the trained encoder as fp16 safetensors (same tensor names as the base checkpoint). An
   * adapter trainer has no encoder of its own to write: take {@link adapterTensors} instead.
   */
  save(path: string): void {
    if (this.#adapter)
      throw new SvcError('invalid_request', 'an adapter trainer keeps the base encoder as loaded: take adapterTensors(), not save()');
    this.#call(() => this.#native.save(path));
  }

  /**
   * The adapter's A and B of every adapted layer, copied out, layer by layer and in
   * {@link kAdapterTargets} order, named as PEFT's LoRA state dict of a BertModel; [] when the
   * whole encoder trains.
   *
   * @example
   * ```ts
   * const trainer = EncoderTrainer.open(base.weightsFile, base.configFile,
   *   { totalSteps: 50, adapter: { rank: 8, alpha: 16, targets: ['query', 'value'] } });
   * trainer.adapterTensors()[0];
   * // { name: 'base_model.model.encoder.layer.0.attention.self.query.lora_A.weight', shape: [8, 384], data: Float32Array(3072) }
   * ```
   */
  adapterTensors(): AdapterTensor[] {
    return this.#call(() => this.#native.adapterTensors());
  }
}

/**
 * Runs the training core's gradient checks (each backward kernel and a
 * two-layer toy encoder against double-precision finite differences).
 *
 * @example
 * ```ts
 * trainSelfTest().toy_encoder_2_layers; // 4.3e-7
 * ```
 */
export function trainSelfTest(): Record<string, number> {
  return loadAddon().trainSelfTest();
}
