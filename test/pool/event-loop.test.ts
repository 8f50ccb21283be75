import { monitorEventLoopDelay } from 'node:perf_hooks';

import { afterAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { allUciTexts, uciSentences } from '../../fixtures/corpora.js';
import { closePool } from '../../src/pool/pool.js';
import { batchStats } from '../../src/predict/batcher.js';
import { train } from '../../src/train/train.js';

afterAll(async () => {
  await closePool();
});

// Seed 1 warms up with the frozen body; seed 2, measured, fine-tunes the encoder (10 steps on
// every pool core) while the predictions run.
const request = (seed: number) => ({
  model: 'svc-small',
  task_type: 'binary-classification' as const,
  ...(seed === 1 ? { finetune: false } : { num_iterations: 4 }),
  examples: split(uciSentences('yelp'), seed).trainSet.map((row) => ({
    text: row.text,
    label: row.label,
    label_text: 'positive',
  })),
});

describe('the host event loop', () => {
  it('stays responsive (p99 delay < 50 ms) while a training job and 1,000 concurrent predictions run', async () => {
    // Start the worker and load the encoder first: that start-up is not what is measured.
    const classifier = await train(request(1));
    const texts = allUciTexts().slice(0, 1000);
    const before = batchStats();

    const histogram = monitorEventLoopDelay({ resolution: 5 });
    histogram.enable();
    const [trained, predictions] = await Promise.all([train(request(2)), Promise.all(texts.map((text) => classifier.predict(text)))]);
    histogram.disable();

    expect(trained.metrics.train_accuracy).toBe(1);
    expect(predictions).toHaveLength(1000);
    for (const p of predictions) expect(p.label).toBe(p.probability >= 0.5);
    // 1,000 calls went out as a few engine batches.
    expect(batchStats().requests - before.requests).toBe(1000);
    expect(batchStats().batches - before.batches).toBeLessThan(100);
    const p99 = histogram.percentile(99) / 1e6;
    expect(p99).toBeLessThan(50);
  });
});
