import { callNative, SvcError } from '../errors.js';
import type { NativeTrainer } from './binding.js';
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
  };
}

/**
 * Contrastive fine-tuning of a BERT encoder in the native core (SetFit's first
 * stage): fp32 master weights, AdamW, cosine-similarity loss over pairs of texts.
 * Synchronous: run it inside a pool worker, never on the main thread.
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

  private constructor(native: NativeTrainer) {
    this.#native = native;
  }

  /**
   * Loads fp32 master weights from a BERT safetensors file and its config.json (read by the native
   * core, which checks every tensor against it).
   */
  static open(weightsFile: string, configFile: string, options: EncoderTrainerOptions): EncoderTrainer {
    const resolved = resolve(options);
    const { Trainer } = loadAddon();
    return callNative(() => {
      return new EncoderTrainer(
        new Trainer(configFile, weightsFile, {
          ...(resolved.dropout === undefined ? {} : { dropout: resolved.dropout }),
          lr: resolved.lr,
          ...kAdam,
          eps: resolved.eps,
          maxGradNorm: resolved.maxGradNorm,
          trainEmbeddings: resolved.trainEmbeddings ? 1 : 0,
          weightDecay: resolved.weightDecay,
          warmupRatio: resolved.warmupRatio,
          totalSteps: resolved.totalSteps,
          seed: resolved.seed,
          threads: resolved.threads,
        }),
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

  /** Writes the trained encoder as fp16 safetensors (same tensor names as the base checkpoint). */
  save(path: string): void {
    this.#call(() => this.#native.save(path));
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
