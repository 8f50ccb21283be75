// How fast predict batches run on this machine now: the batcher sizes its batches by it (so that one
// tenant's batch never holds another's call up for long) and admission sizes the queue by it (so that a
// call either ends within its deadline or is refused at once). Measured, not assumed: the same pool runs
// at very different speeds on an idle machine, beside a training job, or beside other processes.
// Speed is counted in estimated tokens, not texts: a review of 256 tokens costs as much as 25 tweets.
import { performance } from 'node:perf_hooks';

/** Batches the rate is measured over: recent enough to follow a training job starting, enough to smooth one slow batch. */
export const kRateSamples = 16;

/** A batch sent to the pool and not back yet. */
export interface RunningBatch {
  readonly tokens: number;
  readonly startedAt: number;
}

export class ThroughputMeter {
  // Ring buffers of the last kRateSamples batches.
  readonly #tokens = new Float64Array(kRateSamples);
  readonly #ms = new Float64Array(kRateSamples);
  #samples = 0;
  readonly #running = new Set<RunningBatch>();

  /** Notes a batch leaving for the pool; give the handle to {@link end}. */
  start(tokens: number): RunningBatch {
    const batch = { tokens, startedAt: performance.now() };
    this.#running.add(batch);
    return batch;
  }

  /** The batch came back; a failed one tells nothing about speed. */
  end(batch: RunningBatch, ok: boolean): void {
    this.#running.delete(batch);
    if (!ok) return;
    const at = this.#samples % kRateSamples;
    this.#tokens[at] = batch.tokens;
    // A batch never takes 0 ms: timer resolution aside, that would be an infinite rate.
    this.#ms[at] = Math.max(0.1, performance.now() - batch.startedAt);
    this.#samples++;
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
    const now = performance.now();
    let ms = 0;
    for (const batch of this.#running) ms = Math.max(ms, batch.tokens / rate - (now - batch.startedAt));
    return ms;
  }
}
