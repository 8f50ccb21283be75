import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { SvcError } from '../../src/errors.js';
import { closePool, configurePool, poolOptions, runTask } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';
import type { TrainProgress } from '../../src/train/train.js';

beforeAll(() => {
  // fp32, not the default 'auto': predictions equal to the head on the embed task's fp32 embeddings (and to
  // scikit-learn's fit on them) to 5-6 decimals is an fp32 statement; bf16 moves them within 1e-3.
  configurePool({ precision: 'fp32' });
});
afterAll(async () => {
  await closePool();
});

// 10 positive + 10 negative IMDB sentences (UCI), drawn with seed 1 as the accuracy report does.
const { trainSet, testSet } = split(uciSentences('imdb'), 1);
const request = {
  model: 'svc-small',
  task_type: 'binary-classification' as const,
  finetune: false,
  examples: trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' })),
};

describe('train', () => {
  it('trains on 20 UCI examples, reporting progress, and predicts', async () => {
    const events: TrainProgress[] = [];
    const classifier = await train(request, { onProgress: (event) => events.push(event) });
    // The examples are split evenly over the workers (two by default on 2 cores: 10 + 10).
    const chunk = Math.ceil(20 / poolOptions().workers);
    const embedded = Array.from({ length: Math.ceil(20 / chunk) }, (_, k) => Math.min(20, (k + 1) * chunk));
    expect(events).toEqual([
      { stage: 'embed', done: 0, total: 20 },
      ...embedded.map((done) => ({ stage: 'embed', done, total: 20 })),
      { stage: 'fit', done: 0, total: 1 },
      { stage: 'fit', done: 1, total: 1 },
    ]);
    expect(classifier.id).toMatch(/^svc-small-[0-9a-f]{12}$/);
    expect(classifier.labelText).toBe('positive');
    expect(classifier.baseModel).toBe('svc-small');
    expect(classifier.metrics.train_accuracy).toBe(1);
    // 10 examples a class: five folds of 2 + 2, 17 of the 20 held-out labels right, one class's
    // examples missed twice and the other's once: macro-F1 (16/19 + 18/21) / 2 = 0.849624060150376.
    // Measured on the encoder the model uses: a frozen model's is the base encoder.
    expect(classifier.metrics).toEqual({
      train_accuracy: 1,
      train_seconds: classifier.metrics.train_seconds,
      cv_accuracy: 0.85,
      cv_macro_f1: 0.849624060150376,
      cv_folds: 5,
      cv_encoder: 'trained',
    });
    // The same cross-validation's report, kept in the manifest: each example scored by the fold that held it out.
    const report = classifier.manifest.cross_validation_report!;
    expect([report.folds, report.encoder, report.examples, report.labels, report.accuracy]).toEqual([
      5,
      'trained',
      20,
      ['true', 'false'],
      0.85,
    ]);
    expect(report.confusion_matrix[0][0] + report.confusion_matrix[1][1]).toBe(17);
    expect(report.per_label.map((l) => l.support)).toEqual([10, 10]);
    expect(report.macro.f1).toBeCloseTo(0.849624060150376, 12);
    expect(report.thresholds).toHaveLength(19);
    expect(report.calibration!.bins.reduce((sum, b) => sum + b.count, 0)).toBe(20);
    // Newton from zero converges quadratically: after 4 steps the gradient norm sits at the
    // rounding floor around the 1e-14 tolerance, so whether a 5th step is taken depends on the
    // last bits of the embeddings. Those differ between kernel levels (each level's fp32 GEMM
    // sums in its own order; levels agree to 2e-6 per component, not bit for bit), so the count
    // is 4 or 5 on every level; the fitted head itself is checked against scikit-learn below.
    const { iterations, ...training } = classifier.manifest.training;
    expect([4, 5]).toContain(iterations);
    expect(training).toEqual({
      method: 'frozen-logistic',
      C: 1,
      solver: 'newton-cholesky',
      max_length: 256,
      examples: 20,
      true_examples: 10,
      false_examples: 10,
    });
    // scikit-learn 1.2.1 LogisticRegression(C=1, solver='newton-cholesky', tol=1e-14) fitted on the
    // same 20 embeddings gives intercept -0.013493926275392351 and these P(true) on the first test texts.
    expect(classifier.head.bias).toBeCloseTo(-0.0134939, 6);
    const predictions = await classifier.predict(testSet.slice(0, 4).map((row) => row.text));
    const sklearn = [0.51772739, 0.4619991, 0.50224029, 0.43255613];
    expect(predictions.map((p) => p.label)).toEqual([true, false, true, false]);
    predictions.forEach((p, i) => expect(p.probability).toBeCloseTo(sklearn[i], 5));
  });

  it('fits the head to a zero gradient, the same bits every time', async () => {
    const [a, b] = [await train(request), await train(request)];
    expect(a.head.weights).toEqual(b.head.weights);
    expect(a.head.bias).toBe(b.head.bias);
    expect(a.id).not.toBe(b.id);
    // The gradient of 0.5 |w|^2 + C sum log-loss, from the embeddings, in this test's own code.
    const embeddings = await runTask<Float32Array>({ kind: 'embed', baseModel: 'svc-small', texts: trainSet.map((r) => r.text) });
    const { weights, bias } = a.head;
    const gradient = [...weights, 0];
    trainSet.forEach((row, i) => {
      let z = bias;
      for (let j = 0; j < 384; j++) z += weights[j] * embeddings[i * 384 + j];
      const residual = 1 / (1 + Math.exp(-z)) - (row.label ? 1 : 0);
      for (let j = 0; j < 384; j++) gradient[j] += residual * embeddings[i * 384 + j];
      gradient[384] += residual;
    });
    expect(Math.hypot(...gradient)).toBeLessThan(1e-8);
  });

  it('scores a binary model on its validation set, and leaves model_id to the service', async () => {
    const validation = testSet.slice(0, 10).map((row) => ({ text: row.text, label: row.label, label_text: 'positive' }));
    const classifier = await train({ ...request, validation });
    const right = (await classifier.predict(validation.map((v) => v.text))).filter((p, i) => p.label === validation[i].label).length;
    expect(classifier.metrics).toMatchObject({ cv_accuracy: 0.85, validation_examples: 10 });
    // The head scored on the validation embeddings the training run made: what predict says of the same texts.
    expect(Math.abs(classifier.metrics.validation_accuracy! - right / 10)).toBeLessThanOrEqual(0.1);
    expect(classifier.metrics.validation_macro_f1).toEqual(expect.any(Number));
    await expect(train({ ...request, model_id: 'svc-small-1a2b3c4d5e6f' })).rejects.toMatchObject({
      code: 'invalid_request',
      param: 'model_id',
      message:
        'model_id adds a version to a classifier the service keeps (POST /v2/train); train() makes a new classifier: name it with options.id',
    });
  });

  it('passes validation errors on as SvcError', async () => {
    await expect(train({ ...request, examples: request.examples.slice(0, 12) })).rejects.toMatchObject({
      code: 'invalid_request',
      param: 'examples',
      message:
        'at least 20 examples are required (got 12); to label texts from fewer without training a model, classify needs only 2 ' +
        'examples per label (POST /v2/classify, svc classify, or classify() in the library)',
    });
  });

  it('stops when aborted', async () => {
    const controller = new AbortController();
    const training = train(request, {
      signal: controller.signal,
      onProgress: (event) => {
        if (event.stage === 'embed' && event.done === 0) controller.abort();
      },
    });
    await expect(training).rejects.toEqual(new SvcError('aborted', 'training was aborted'));
    await expect(train(request, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'aborted' });
  });

  it('checks its options', async () => {
    await expect(train(request, { onProgress: 1 as never })).rejects.toThrow(new TypeError('options.onProgress must be a function'));
    await expect(train(request, { hub: { publish: async () => {} } as never })).rejects.toThrow(
      new TypeError('options.id is required with options.hub'),
    );
    await expect(train(request, { threads: 0 })).rejects.toThrow(new RangeError('options.threads must be a positive integer'));
    await expect(train(request, { threads: 1.5 })).rejects.toThrow(new TypeError('options.threads must be a positive integer'));
  });
});
