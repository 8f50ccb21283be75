// What a predict task tells the main thread it spent once (worker start-up, loading, the warm-up), so that the
// speed estimate never counts it: reported by the task that did it, and by no later one.
import { afterAll, describe, expect, it } from 'vitest';

import { closePool, configurePool, runTask } from '../../src/pool/pool.js';
import type { PredictResult, PredictTask } from '../../src/pool/tasks.js';
import { packHeads } from '../../src/predict/call.js';
import { kWarmUpTokens } from '../../src/worker/warm-up.js';

const head = { weights: new Float64Array(384), bias: 0 };

function task(texts: string[]): PredictTask {
  return {
    kind: 'predict',
    baseModel: 'svc-small',
    encoderFile: null,
    texts,
    counts: Int32Array.of(texts.length),
    heads: Int32Array.of(0),
    table: packHeads([head]),
  };
}

afterAll(async () => {
  await closePool();
});

describe("a predict task's one-time work", () => {
  it("is reported by the worker's first task, timed apart from its batch, and by no later one", async () => {
    // One worker: both tasks run on it.
    configurePool({ workers: 1 });
    const sentAt = performance.timeOrigin + performance.now();
    const first = await runTask<PredictResult>(task(['hi']));
    const returnedAt = performance.timeOrigin + performance.now();
    // The zero head answers 0.5 for every text.
    expect(Array.from(first.probabilities)).toEqual([0.5]);
    const setup = first.setup!;
    expect(setup.reachedAt).toBeGreaterThanOrEqual(sentAt);
    expect(setup.reachedAt).toBeLessThanOrEqual(returnedAt);
    expect(setup.warmUp).toEqual({ tokens: kWarmUpTokens, ms: expect.any(Number) });
    // The warm-up is part of the one-time work, which is part of the task.
    expect(setup.ms).toBeGreaterThanOrEqual(setup.warmUp!.ms);
    expect(setup.reachedAt! + setup.ms).toBeLessThanOrEqual(returnedAt);

    const second = await runTask<PredictResult>(task(['hi', 'there']));
    expect(Array.from(second.probabilities)).toEqual([0.5, 0.5]);
    expect(second.setup).toBeUndefined();
  });
});
