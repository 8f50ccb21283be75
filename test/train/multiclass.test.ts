// Multi-class and multi-label classifiers through the library: trained on real UCI review
// sentences (which site a review came from; whether it is about a film and whether it is
// positive), checked against the fit this test makes itself from the same embeddings, saved,
// loaded and predicted again.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences, uciSites } from '../../fixtures/corpora.js';
import { splitClasses, split } from '../../fixtures/draw.js';
import { SvcError } from '../../src/errors.js';
import { closePool, configurePool, runTask } from '../../src/pool/pool.js';
import { Classifier } from '../../src/predict/classifier.js';
import { fitLogisticRegression, sigmoid } from '../../src/train/logistic.js';
import { balancedWeights, fitSoftmaxRegression } from '../../src/train/softmax.js';
import { train } from '../../src/train/train.js';

beforeAll(() => {
  // fp32, not the default 'auto': predictions equal to the head on the embed task's fp32 embeddings (and to
  // scikit-learn's fit on them) to 5-6 decimals is an fp32 statement; bf16 moves them within 1e-3.
  configurePool({ precision: 'fp32' });
});
afterAll(async () => {
  await closePool();
});

const sites = uciSites().map((row) => ({ text: row.text, label: row.label as string }));
const { trainSet, testSet } = splitClasses(sites, 1, 8);
const heldOut = [0, 400, 1000, 1400, 2000, 2400].map((i) => testSet[i]);
const classRequest = {
  model: 'svc-small',
  task_type: 'multi-class-classification' as const,
  finetune: false,
  examples: trainSet,
};

// Multi-label: 'film' for IMDB sentences, 'positive' for positive ones; a negative Yelp sentence has none.
const labelled = (task: 'imdb' | 'yelp', seed: number) =>
  split(uciSentences(task), seed, 6).trainSet.map((row) => ({
    text: row.text,
    labels: [...(task === 'imdb' ? ['film'] : []), ...(row.label ? ['positive'] : [])],
  }));
const labelSetExamples = [...labelled('imdb', 1), ...labelled('yelp', 1)];
const labelRequest = {
  model: 'svc-small',
  task_type: 'multi-label-classification' as const,
  finetune: false,
  examples: labelSetExamples,
};

const embed = (texts: string[]) => runTask<Float32Array>({ kind: 'embed', baseModel: 'svc-small', texts });

describe('multi-class classifiers', () => {
  it('fit a softmax head on the frozen embeddings and predict every class score', async () => {
    const classifier = await train(classRequest);
    expect(classifier.taskType).toBe('multi-class-classification');
    expect(classifier.labels).toEqual(['amazon', 'imdb', 'yelp']);
    const { iterations, ...training } = classifier.manifest.training;
    expect(iterations).toBeGreaterThan(0);
    expect(training).toEqual({
      method: 'frozen-logistic',
      head: 'softmax-regression',
      C: 1,
      solver: 'lbfgs',
      max_length: 256,
      examples: 24,
      label_examples: { amazon: 8, imdb: 8, yelp: 8 },
    });
    expect(classifier.manifest.label_text).toBeUndefined();
    // 24 examples in five folds of 4 or 5: 18 of the 24 held-out classes right, on the base encoder (frozen).
    expect(classifier.metrics).toEqual({
      train_accuracy: 1,
      train_seconds: classifier.metrics.train_seconds,
      cv_accuracy: 0.75,
      cv_macro_f1: 0.7478991596638656,
      cv_folds: 5,
      cv_encoder: 'trained',
    });

    // The head is the softmax regression of the embeddings, as this test fits it.
    const x = await embed(trainSet.map((row) => row.text));
    const y = trainSet.map((row) => ['amazon', 'imdb', 'yelp'].indexOf(row.label));
    const expected = fitSoftmaxRegression(x, y, 384, 3);
    const head = classifier.head;
    expect(head.kind).toBe('softmax');
    expect(Array.from(head.weights)).toEqual(Array.from(expected.weights));
    expect(Array.from(head.biases)).toEqual(Array.from(expected.biases));

    const predictions = await classifier.predict(heldOut.map((row) => row.text));
    const e = await embed(heldOut.map((row) => row.text));
    predictions.forEach((prediction, i) => {
      const z = [0, 1, 2].map(
        (k) => expected.biases[k] + expected.weights.subarray(k * 384, (k + 1) * 384).reduce((s, w, j) => s + w * e[i * 384 + j], 0),
      );
      const top = Math.max(...z);
      const p = z.map((v) => Math.exp(v - top) / z.reduce((s, u) => s + Math.exp(u - top), 0));
      expect(Object.keys(prediction.scores)).toEqual(['amazon', 'imdb', 'yelp']);
      Object.values(prediction.scores).forEach((score, k) => expect(score).toBeCloseTo(p[k], 6));
      expect(Object.values(prediction.scores).reduce((s, v) => s + v, 0)).toBeCloseTo(1, 6);
      expect(prediction.label).toBe(['amazon', 'imdb', 'yelp'][p.indexOf(Math.max(...p))]);
      expect(prediction.probability).toBe(prediction.scores[prediction.label]);
      expect(prediction.truncated).toBe(false);
    });
    // One text gives one prediction, the same as in a batch.
    expect(await classifier.predict(heldOut[0].text)).toEqual(predictions[0]);
    await expect(classifier.predict('x', { threshold: 0.3 })).rejects.toMatchObject({
      code: 'invalid_request',
      param: 'threshold',
      message: `threshold is only used by multi-label models; ${classifier.id} is multi-class-classification`,
    });

    // Saved and loaded: the same head, the same predictions.
    const dir = await mkdtemp(join(tmpdir(), 'svc-multiclass-'));
    try {
      await classifier.save(dir);
      const loaded = await Classifier.load<'multi-class-classification'>(dir);
      expect(loaded.labels).toEqual(['amazon', 'imdb', 'yelp']);
      expect(loaded.manifest).toEqual(classifier.manifest);
      expect(await loaded.predict(heldOut.map((row) => row.text))).toEqual(predictions);
      const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
      expect(config).toMatchObject({
        problem_type: 'single_label_classification',
        num_labels: 3,
        id2label: { 0: 'amazon', 1: 'imdb', 2: 'yelp' },
        label2id: { amazon: 0, imdb: 1, yelp: 2 },
      });
      const headFile = JSON.parse(await readFile(join(dir, 'head.json'), 'utf8')) as {
        kind: string;
        dim: number;
        weights: number[][];
        biases: number[];
      };
      expect([headFile.kind, headFile.dim, headFile.weights.length, headFile.biases]).toEqual([
        'softmax-regression',
        384,
        3,
        Array.from(expected.biases),
      ]);
      loaded.dispose();
    } finally {
      classifier.dispose();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("weighs skewed classes with class_weight 'balanced' and scores a validation set", async () => {
    // 8 Amazon, 8 IMDB and 16 Yelp sentences.
    const yelp = splitClasses(
      sites.filter((row) => row.label === 'yelp'),
      2,
      16,
    ).trainSet;
    const examples = [...trainSet.filter((row) => row.label !== 'yelp'), ...yelp];
    const validation = heldOut;
    const classifier = await train({ ...classRequest, examples, class_weight: 'balanced', validation });
    expect(classifier.manifest.training).toMatchObject({ class_weight: 'balanced', label_examples: { amazon: 8, imdb: 8, yelp: 16 } });
    const x = await embed(examples.map((row) => row.text));
    const y = examples.map((row) => ['amazon', 'imdb', 'yelp'].indexOf(row.label));
    const weights = balancedWeights(y, 3);
    expect([weights[0], weights[examples.length - 1]]).toEqual([32 / 24, 32 / 48]);
    const expected = fitSoftmaxRegression(x, y, 384, 3, { sampleWeights: weights });
    expect(Array.from(classifier.head.weights)).toEqual(Array.from(expected.weights));
    // The validation figures are the head's own predictions on the validation texts.
    const predictions = await classifier.predict(validation.map((row) => row.text));
    const right = predictions.filter((p, i) => p.label === validation[i].label).length;
    expect(classifier.metrics.validation_accuracy).toBe(right / validation.length);
    expect(classifier.metrics.validation_examples).toBe(6);
    expect(classifier.metrics.validation_macro_f1).toBeGreaterThanOrEqual(0);
    classifier.dispose();
  });

  it('fine-tunes the encoder on pairs of same and other classes', async () => {
    const classifier = await train({ ...classRequest, finetune: true, num_iterations: 2, validation: heldOut.slice(0, 3) });
    // finetune: true is the default method, a LoRA adapter on the frozen base.
    expect(classifier.body).toBe('adapter');
    // 24 examples x 2 rounds x (one same-class and one other-class pair) = 96 pairs, 6 steps of 16.
    expect(classifier.manifest.training.finetune).toMatchObject({ num_iterations: 2, pairs: 96, steps: 6 });
    const predictions = await classifier.predict(heldOut.slice(0, 3).map((row) => row.text));
    const right = predictions.filter((p, i) => p.label === heldOut[i].label).length;
    expect(classifier.metrics.validation_accuracy).toBe(right / 3);
    // The estimate is the frozen model's above: cross-validated on the base encoder, which never saw the examples.
    expect(classifier.metrics).toMatchObject({ cv_accuracy: 0.75, cv_macro_f1: 0.7478991596638656, cv_folds: 5, cv_encoder: 'base' });
    // Its cross-validation report is the same run's, on the same base-encoder embeddings: no second fine-tune.
    const report = classifier.manifest.cross_validation_report!;
    expect([report.encoder, report.folds, report.accuracy, report.labels]).toEqual(['base', 5, 0.75, classifier.labels]);
    expect(report.macro.f1).toBeCloseTo(0.7478991596638656, 12);
    expect(report.confusion_matrix.flat().reduce((sum, n) => sum + n, 0)).toBe(report.examples);
    for (const p of predictions) expect(Object.values(p.scores).reduce((s, v) => s + v, 0)).toBeCloseTo(1, 6);
    classifier.dispose();
    // Six training steps: seconds alone, minutes beside other busy processes on two cores.
  }, 180_000);
});

describe('multi-label classifiers', () => {
  it('fit a logistic regression per label and predict the labels over their thresholds', async () => {
    // Held out: two IMDB and two Yelp sentences the examples do not have.
    const validation = [...labelled('imdb', 9).slice(0, 2), ...labelled('yelp', 9).slice(0, 2)].filter(
      (row) => !labelSetExamples.some((example) => example.text === row.text),
    );
    const classifier = await train({ ...labelRequest, validation });
    expect(classifier.taskType).toBe('multi-label-classification');
    // The cross-validation report: per label [tn, fp, fn, tp] over all 24 examples, and the Hamming loss.
    const report = classifier.manifest.cross_validation_report!;
    expect(report.confusion_matrix.map((row) => row.reduce((sum, n) => sum + n, 0))).toEqual([24, 24]);
    expect(report.accuracy).toBe(classifier.metrics.cv_accuracy);
    const wrong = report.confusion_matrix.reduce((sum, [, fp, fn]) => sum + fp + fn, 0);
    expect(report.hamming_loss).toBe(wrong / 48);
    expect(report.thresholds).toBeUndefined();
    expect(classifier.labels).toEqual(['film', 'positive']);
    expect(classifier.manifest.training).toMatchObject({
      head: 'one-vs-rest-logistic-regression',
      solver: 'newton-cholesky',
      examples: 24,
      label_examples: { film: 12, positive: 12 },
    });
    const x = await embed(labelSetExamples.map((row) => row.text));
    const expected = ['film', 'positive'].map((label) =>
      fitLogisticRegression(
        x,
        labelSetExamples.map((row) => row.labels.includes(label)),
        384,
      ),
    );
    const head = classifier.head;
    expect(head.kind).toBe('one-vs-rest');
    expect(Array.from(head.weights)).toEqual([...expected[0].weights, ...expected[1].weights]);
    expect(Array.from(head.biases)).toEqual([expected[0].bias, expected[1].bias]);

    const texts = ['A wonderful, moving film.', 'The food was cold and the waiter rude.', 'Great phone, the battery lasts.'];
    const e = await embed(texts);
    const predictions = await classifier.predict(texts);
    predictions.forEach((prediction, i) => {
      const p = expected.map((fit) => sigmoid(fit.bias + fit.weights.reduce((s, w, j) => s + w * e[i * 384 + j], 0)));
      expect(prediction.scores.film).toBeCloseTo(p[0], 6);
      expect(prediction.scores.positive).toBeCloseTo(p[1], 6);
      expect(prediction.labels).toEqual(['film', 'positive'].filter((_, k) => prediction.scores[['film', 'positive'][k]] >= 0.5));
    });
    // Thresholds: one for every label, or per label (the others keep 0.5).
    const all = await classifier.predict(texts, { threshold: 0 });
    expect(all.map((p) => p.labels)).toEqual([
      ['film', 'positive'],
      ['film', 'positive'],
      ['film', 'positive'],
    ]);
    const none = await classifier.predict(texts, { threshold: 1 });
    expect(none.map((p) => p.labels).flat().length).toBe(predictions.flatMap((p) => Object.values(p.scores).filter((s) => s >= 1)).length);
    const filmOnly = await classifier.predict(texts, { threshold: { film: 0 } });
    filmOnly.forEach((p, i) => expect(p.labels).toEqual(['film', ...(predictions[i].scores.positive >= 0.5 ? ['positive'] : [])]));
    await expect(classifier.predict(texts, { threshold: 1.5 })).rejects.toMatchObject({
      code: 'invalid_request',
      param: 'threshold',
      message: 'threshold must be a number from 0 to 1',
    });
    await expect(classifier.predict(texts, { threshold: { colour: 0.2 } })).rejects.toMatchObject({
      code: 'invalid_request',
      param: 'threshold.colour',
      message: "threshold names the label 'colour', which the model does not have (film, positive)",
    });
    await expect(classifier.predict(texts, { threshold: { film: -1 } })).rejects.toBeInstanceOf(SvcError);

    // Exact-set accuracy on the training examples, cross-validated macro-F1 over the two labels.
    const train1 = await classifier.predict(labelSetExamples.map((row) => row.text));
    const exact = train1.filter((p, i) => p.labels.join() === labelSetExamples[i].labels.join()).length;
    expect(classifier.metrics.train_accuracy).toBe(exact / 24);
    expect(classifier.metrics.cv_folds).toBe(5);
    const held = await classifier.predict(validation.map((row) => row.text));
    const heldExact = held.filter((p, i) => p.labels.join() === validation[i].labels.join()).length;
    expect([classifier.metrics.validation_accuracy, classifier.metrics.validation_examples]).toEqual([
      heldExact / validation.length,
      validation.length,
    ]);

    const dir = await mkdtemp(join(tmpdir(), 'svc-multilabel-'));
    try {
      await classifier.save(dir);
      const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
      expect(config).toMatchObject({ problem_type: 'multi_label_classification', num_labels: 2, id2label: { 0: 'film', 1: 'positive' } });
      const loaded = await Classifier.load<'multi-label-classification'>(dir);
      expect(await loaded.predict(texts)).toEqual(predictions);
      loaded.dispose();
    } finally {
      classifier.dispose();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
