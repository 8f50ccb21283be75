// The predict speed meter on a clock the test sets: what a batch's time counts, and how the estimate starts.
import { describe, expect, it } from 'vitest';

import { kRateSamples, ThroughputMeter } from '../../src/predict/throughput.js';

/** A meter and the clock it reads, in milliseconds since the epoch. */
function metered() {
  const clock = { now: 1_700_000_000_000 };
  return { clock, meter: new ThroughputMeter(() => clock.now) };
}

describe('ThroughputMeter', () => {
  it('knows no speed before a batch or a warm-up came back', () => {
    const { meter } = metered();
    expect(meter.tokensPerMs()).toBeNull();
    expect(meter.busy).toBe(false);
  });

  it('counts a batch from leaving to coming back', () => {
    const { clock, meter } = metered();
    const batch = meter.start(300);
    expect(meter.busy).toBe(true);
    clock.now += 30;
    meter.end(batch, true);
    expect(meter.busy).toBe(false);
    expect(meter.tokensPerMs()).toBe(10);
  });

  it("leaves out a cold first task's start-up and loading, and starts from its warm-up", () => {
    const { clock, meter } = metered();
    const batch = meter.start(4);
    // 'hi' on a worker that took 900 ms to start, then 400 ms to load the tokenizer and the encoder and warm it up
    // (64 tokens in 8 ms), then 2 ms for the batch itself: 1,302 ms in all, 3 tokens a second if counted whole.
    const reachedAt = clock.now + 900;
    clock.now += 1302;
    meter.end(batch, true, { reachedAt, ms: 400, warmUp: { tokens: 64, ms: 8 } });
    // The warm-up (64 tokens in 8 ms) and the batch (4 tokens in 2 ms).
    expect(meter.tokensPerMs()).toBe(68 / 10);
  });

  it('leaves out an encoder loaded for a later task, with no start-up to count', () => {
    const { clock, meter } = metered();
    const batch = meter.start(100);
    clock.now += 310;
    meter.end(batch, true, { reachedAt: null, ms: 300, warmUp: null });
    expect(meter.tokensPerMs()).toBe(10);
  });

  it('learns nothing from a failed batch', () => {
    const { clock, meter } = metered();
    const batch = meter.start(100);
    clock.now += 10;
    meter.end(batch, false, { reachedAt: null, ms: 1, warmUp: { tokens: 64, ms: 8 } });
    expect(meter.tokensPerMs()).toBeNull();
    expect(meter.busy).toBe(false);
  });

  it('follows the recent batches: the warm-up leaves after as many samples as the rate keeps', () => {
    const { meter } = metered();
    meter.record(64, 1);
    for (let i = 1; i < kRateSamples; i++) meter.record(10, 1);
    expect(meter.tokensPerMs()).toBe((64 + 10 * (kRateSamples - 1)) / kRateSamples);
    meter.record(10, 1);
    expect(meter.tokensPerMs()).toBe(10);
  });

  it('says how long the running batches still take at a rate', () => {
    const { clock, meter } = metered();
    meter.start(100);
    clock.now += 4;
    expect(meter.busyMs(10)).toBe(6);
    // Slower than the rate says: counted as ending now.
    clock.now += 20;
    expect(meter.busyMs(10)).toBe(0);
  });
});
