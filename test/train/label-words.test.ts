// The label words as a prior for the head (src/train/label-words.ts): the template sentences each
// request's names give, the weighted-rows lever equal to fitting those rows by hand, the direction
// lever folded back into a head of the usual shape, and both used in every cross-validation fold.
import { afterAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { closePool, runTask } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';
import { fitAndMeasure } from '../../src/train/fit-head.js';
import { foldDirections, labelDirections, labelWordTexts, withDirectionFeatures } from '../../src/train/label-words.js';
import type { LabelWords, LabelWordsLever } from '../../src/train/label-words.js';
import { fitLogisticRegression } from '../../src/train/logistic.js';
import type { FitTask } from '../../src/pool/tasks.js';

// Four examples whose labels follow the second coordinate, and two validation points whose labels
// follow the first one, as the label words do: the examples alone get both validation points wrong.
const x = new Float32Array([1, 1, -0.2, 1, -1, -1, 0.2, -1]);
const y = Int32Array.from([1, 1, 0, 0]);
const words: LabelWords = {
  embeddings: new Float32Array([1, 0, -1, 0]),
  targets: { kind: 'classes', classes: Int32Array.from([1, 0]), count: 2 },
};
const validation = {
  embeddings: new Float32Array([1, -0.6, -1, 0.6]),
  targets: { kind: 'classes' as const, classes: Int32Array.from([1, 0]), count: 2 },
};

function task(lever: LabelWordsLever): FitTask {
  return {
    kind: 'fit',
    head: 'logistic',
    embeddings: x,
    targets: { kind: 'classes', classes: y, count: 2 },
    dim: 2,
    C: 1,
    balanced: false,
    validation,
    crossValidate: false,
    labelWords: { ...words, lever },
  };
}

describe('labelWordTexts', () => {
  it('puts a binary label_text into the templates, true, and negated, false', () => {
    const { texts, targets } = labelWordTexts('binary-classification', 'positive review');
    expect(texts.length).toBe(12);
    expect(texts[0]).toBe('This sentence is about positive review.');
    expect(texts[6]).toBe('This sentence is not about positive review.');
    expect(targets).toEqual({ kind: 'classes', classes: Int32Array.from([1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]), count: 2 });
  });

  it('gives each class its templates in the head order of the names', () => {
    const { texts, targets } = labelWordTexts('multi-class-classification', ['amazon', 'imdb', 'yelp']);
    expect(texts.length).toBe(18);
    expect(texts[6]).toBe('This sentence is about imdb.');
    expect(Array.from((targets as { classes: Int32Array }).classes)).toEqual([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
  });

  it('gives each multi-label template one label', () => {
    const { targets } = labelWordTexts('multi-label-classification', ['film', 'food']);
    expect(targets.kind).toBe('label-sets');
    expect(Array.from((targets as { sets: Uint8Array }).sets.subarray(10, 14))).toEqual([1, 0, 0, 1]);
  });
});

describe('label words in the head', () => {
  it('leaves the head as before with the none lever', () => {
    const plain = fitAndMeasure({ ...task({ kind: 'none' }), labelWords: null });
    const none = fitAndMeasure(task({ kind: 'none' }));
    expect(Array.from(none.weights)).toEqual(Array.from(plain.weights));
    expect(none.validation!.accuracy).toBe(0);
  });

  it('fits the weighted template rows exactly as a fit on those rows by hand', () => {
    const fit = fitAndMeasure(task({ kind: 'examples', weight: 8 }));
    // One template per side here: each weighs 8 examples.
    const byHand = fitLogisticRegression(new Float64Array([...x, 1, 0, -1, 0]), [1, 1, 0, 0, 1, 0], 2, {
      C: 1,
      sampleWeights: [1, 1, 1, 1, 8, 8],
    });
    expect(Array.from(fit.weights)).toEqual(Array.from(byHand.weights));
    expect(fit.biases[0]).toBe(byHand.bias);
    expect(fit.validation!.accuracy).toBe(1);
  });

  it('folds the direction feature back into a head of dim columns with the same scores', () => {
    const fit = fitAndMeasure(task({ kind: 'direction', scale: 10 }));
    expect(fit.weights.length).toBe(2);
    const directions = labelDirections(words, 2);
    expect(Array.from(directions)).toEqual([2, 0]);
    const wide = fitLogisticRegression(withDirectionFeatures(x, 2, directions, 10), y, 3, { C: 1 });
    expect(Array.from(fit.weights)).toEqual(Array.from(foldDirections(wide.weights, 1, 2, directions, 10)));
    // Scores on the examples agree with the wide head's to rounding.
    for (let i = 0; i < 4; i++) {
      const folded = fit.weights[0] * x[2 * i] + fit.weights[1] * x[2 * i + 1];
      const unfolded = wide.weights[0] * x[2 * i] + wide.weights[1] * x[2 * i + 1] + wide.weights[2] * 10 * 2 * x[2 * i];
      expect(Math.abs(folded - unfolded)).toBeLessThan(1e-12);
    }
  });

  it('uses the label words in every cross-validation fold', () => {
    const none = fitAndMeasure({ ...task({ kind: 'none' }), validation: null, crossValidate: true });
    const withWords = fitAndMeasure({ ...task({ kind: 'examples', weight: 100 }), validation: null, crossValidate: true });
    // Two folds of two: the examples alone read their held-out pair off the second coordinate; with
    // overwhelming words every fold's head follows the first one and labels 2 of the 4 held-out rows right.
    expect(none.crossValidation).toEqual({ accuracy: 1, macroF1: 1, folds: 2 });
    expect(withWords.crossValidation!.accuracy).toBe(0.5);
  });
});

describe('train with options.labelWords', () => {
  afterAll(async () => {
    await closePool();
  });

  // 10 positive + 10 negative IMDB sentences (UCI), the accuracy bench's first draw.
  const examples = split(uciSentences('imdb'), 1).trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' }));
  const request = { model: 'svc-small' as const, task_type: 'binary-classification' as const, finetune: false, examples };

  it('fits the head on the examples and the weighted label words, and records it', async () => {
    const withWords = await train(request, { labelWords: { kind: 'examples', weight: 2 } });
    const plain = await train(request);
    const { texts, targets } = labelWordTexts('binary-classification', 'positive');
    const embed = (t: string[]) => runTask<Float32Array>({ kind: 'embed', baseModel: 'svc-small', texts: t });
    const expected = fitAndMeasure({
      kind: 'fit',
      head: 'logistic',
      embeddings: await embed(examples.map((e) => e.text)),
      targets: { kind: 'classes', classes: Int32Array.from(examples, (e) => (e.label ? 1 : 0)), count: 2 },
      dim: 384,
      C: 1,
      balanced: false,
      validation: null,
      crossValidate: true,
      labelWords: { embeddings: await embed(texts), targets, lever: { kind: 'examples', weight: 2 } },
    });
    // Embedded in other batches than train()'s chunks: equal to the GEMM's rounding at every kernel level.
    withWords.head.weights.forEach((w, j) => expect(Math.abs(w - expected.weights[j]!)).toBeLessThan(1e-5));
    expect(Math.abs(withWords.head.bias - expected.biases[0]!)).toBeLessThan(1e-5);
    expect(withWords.metrics.cv_accuracy).toBe(expected.crossValidation!.accuracy);
    expect(withWords.manifest.training.label_words).toEqual({ kind: 'examples', weight: 2, sentences: 12 });
    // Without the option the head is the examples' alone, and the manifest says nothing of label words.
    expect(Array.from(plain.head.weights)).not.toEqual(Array.from(withWords.head.weights));
    expect(plain.manifest.training.label_words).toBeUndefined();
    withWords.dispose();
    plain.dispose();
  });

  it('checks the option', async () => {
    await expect(train(request, { labelWords: { kind: 'examples', weight: 0 } })).rejects.toThrow(
      'options.labelWords.weight must be a positive number',
    );
    await expect(train(request, { labelWords: { kind: 'prior' } as never })).rejects.toThrow(
      "options.labelWords.kind must be 'none', 'examples' or 'direction'",
    );
  });
});
