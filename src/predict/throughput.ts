// How fast predict batches run on this machine now: the batcher sizes its batches by it (so that one
// tenant's batch never holds another's call up for long) and admission sizes the queue by it (so that a
// call either ends within its deadline or is refused at once). Measured, not assumed: the same pool runs
// at very different speeds on an idle machine, beside a training job, or beside other processes.
// Speed is counted in estimated tokens, not texts: a review of 256 tokens costs as much as 25 tweets.
//
// How the estimate starts: a worker that loads an encoder to predict runs one short warm-up text through it and
// times it; that time is the first sample (the speed before any batch was timed, on the warm encoder). What a task
// spends once (the worker starting up, the tokenizer and encoder loading, the warm-up) is taken off its batch's
// time: a restarted service's first call, 'hi', once measured its start-up as 4 tokens/s and refused every
// e-mail after it.
import { performance } from 'node:perf_hooks';

import type { PredictSetup } from '../pool/tasks.js';

/** Batches the rate is measured over: recent enough to follow a training job starting, enough to smooth one slow batch. */
export const kRateSamples = 16;

/** A batch sent to the pool and not back yet. */
export interface RunningBatch {
  readonly tokens: number;
  /** When it left, on the meter's clock. */
  readonly startedAt: number;
}

/** Milliseconds since the epoch, as precise as `performance.now()`, and the same on every thread (a worker says when a task reached it). */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

export class ThroughputMeter {
  // Ring buffers of the last kRateSamples batches.
  readonly #tokens = new Float64Array(kRateSamples);
  readonly #ms = new Float64Array(kRateSamples);
  #samples = 0;
  readonly #running = new Set<RunningBatch>();
  readonly #now: () => number;

  /** `now`: the clock, in milliseconds since the epoch (tests pass their own). */
  constructor(now: () => number = epochNow) {
    this.#now = now;
  }

  /** Notes a batch leaving for the pool; give the handle to {@link end}. */
  start(tokens: number): RunningBatch {
    const batch = { tokens, startedAt: this.#now() };
    this.#running.add(batch);
    return batch;
  }

  /**
   * The batch came back; a failed one tells nothing about speed. `setup`, from the worker, is what the task spent
   * once (see the top of this file): it is not counted, and its warm-up is a sample of its own.
   */
  end(batch: RunningBatch, ok: boolean, setup?: PredictSetup): void {
    this.#running.delete(batch);
    if (!ok) return;
    if (setup?.warmUp) this.record(setup.warmUp.tokens, setup.warmUp.ms);
    const startingUp = setup?.reachedAt == null ? 0 : Math.max(0, setup.reachedAt - batch.startedAt);
    this.record(batch.tokens, this.#now() - batch.startedAt - startingUp - (setup?.ms ?? 0));
  }

  /** One sample: `tokens` estimated tokens took `ms`. */
  record(tokens: number, ms: number): void {
    const at = this.#samples % kRateSamples;
    this.#tokens[at] = tokens;
    // A batch never takes 0 ms: timer resolution aside, that would be an infinite rate.
    this.#ms[at] = Math.max(0.1, ms);
    this.#samples++;
  }

  /** Whether a batch is running. */
  get busy(): boolean {
    return this.#running.size > 0;
  }

  /** Estimated tokens per millisecond over the recent batches, or null before the first one came back. */
  tokensPerMs(): number | null {
    const n = Math.min(this.#samples, kRateSamples);
    if (n === 0) return null;
    let tokens = 0;
    let ms = 0;
    for (let i = 0; i < n; i++) {
      tokens += this.#tokens[i];
      ms += this.#ms[i];
    }
    return tokens / ms;
  }

  /**
   * Milliseconds until the running batches end, at `rate`; a batch already slower than the rate
   * says counts as ending now (it cannot be known better).
   */
  busyMs(rate: number): number {
    const now = this.#now();
    let ms = 0;
    for (const batch of this.#running) ms = Math.max(ms, batch.tokens / rate - (now - batch.startedAt));
    return ms;
  }
}
