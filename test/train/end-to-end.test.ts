// train() with options.endToEnd: SetFit's end-to-end phase after the contrastive steps moves the
// adapter and the manifest records the phase (the native trainer's tests check its steps and determinism).
import { afterAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { closePool } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';

afterAll(async () => {
  await closePool();
});

// 10 positive + 10 negative IMDB sentences (UCI), the accuracy bench's first draw.
const examples = split(uciSentences('imdb'), 1).trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' }));
const request = {
  model: 'svc-small' as const,
  task_type: 'binary-classification' as const,
  finetune: { method: 'adapter' as const, rank: 4 },
  num_iterations: 1,
  examples,
};
const probe = ['A wonderful, moving film.', 'Dull and far too long.'];

describe('train with options.endToEnd', () => {
  it('runs the phase after the contrastive steps and records it', async () => {
    const plain = await train(request, { threads: 2 });
    const e2e = await train(request, { threads: 2, endToEnd: { epochs: 1 } });
    // 20 examples, two a step, one epoch; the body at half the adapter's contrastive rate.
    expect(e2e.manifest.training.finetune?.end_to_end).toEqual({
      epochs: 1,
      batch: 2,
      steps: 10,
      body_learning_rate: 1.5e-4,
      head_learning_rate: 1e-2,
      weight_decay: 0.01,
    });
    expect(plain.manifest.training.finetune?.end_to_end).toBeUndefined();
    // The contrastive steps are the same; the phase moved the adapter, so the head and scores differ.
    expect(e2e.manifest.training.finetune?.steps).toBe(plain.manifest.training.finetune?.steps);
    expect(e2e.manifest.training.finetune?.final_loss).toBe(plain.manifest.training.finetune?.final_loss);
    expect(Array.from(e2e.head.weights)).not.toEqual(Array.from(plain.head.weights));
    const [withPhase, without] = await Promise.all([e2e.predict(probe), plain.predict(probe)]);
    expect(withPhase.map((p) => p.label)).toEqual([true, false]);
    expect(withPhase.map((p) => p.probability)).not.toEqual(without.map((p) => p.probability));
    e2e.dispose();
    plain.dispose();
    // Two fine-tuning runs (a few seconds each on a quiet machine).
  }, 300_000);

  it('checks the option', async () => {
    await expect(train(request, { endToEnd: { epochs: 0 } })).rejects.toThrow('options.endToEnd.epochs must be a positive integer');
    await expect(train(request, { endToEnd: 3 as never })).rejects.toThrow('options.endToEnd must be an object');
  });
});
