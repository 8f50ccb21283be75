import { describe, expect, it } from 'vitest';

import { crossValidate, multiLabelScores, singleLabelScores, stratifiedFolds, takeRows } from '../../src/train/cross-validate.js';
import { fitLogisticRegression, sigmoid } from '../../src/train/logistic.js';

describe('stratifiedFolds', () => {
  it('deals each class over the folds in a seeded order, as many folds as the rarest class allows (at most 5)', () => {
    const y = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1];
    const { fold, folds } = stratifiedFolds(y, 2);
    expect(folds).toBe(4);
    expect(Array.from(fold)).toEqual([1, 0, 0, 1, 2, 3, 0, 3, 1, 2]);
    // Per fold: [class 0, class 1] counts differ by at most one across folds.
    const counts = Array.from({ length: folds }, (_, f) => [0, 1].map((c) => y.filter((label, i) => label === c && fold[i] === f).length));
    expect(counts).toEqual([
      [2, 1],
      [2, 1],
      [1, 1],
      [1, 1],
    ]);
    expect(
      stratifiedFolds(
        Array.from({ length: 40 }, (_, i) => i % 2),
        2,
      ).folds,
    ).toBe(5);
    // Two examples of a class still give two folds; the same seed gives the same folds.
    expect(stratifiedFolds([0, 0, 0, 1, 1], 2).folds).toBe(2);
    expect(Array.from(stratifiedFolds(y, 2, 5, 7).fold)).toEqual(Array.from(stratifiedFolds(y, 2, 5, 7).fold));
  });
});

describe('scores', () => {
  it('single label: accuracy and the unweighted mean of per-class F1', () => {
    // class 0: tp 1, fp 1, fn 1 -> 0.5; class 1: tp 2, fp 1 -> 0.8; class 2: fn 1 -> 0.
    expect(singleLabelScores([0, 0, 1, 1, 2], [0, 1, 1, 1, 0], 3)).toEqual({ accuracy: 0.6, macroF1: 1.3 / 3 });
    // A class neither present nor predicted has nothing wrong: F1 1.
    expect(singleLabelScores([0, 1], [0, 1], 3)).toEqual({ accuracy: 1, macroF1: 1 });
  });

  it('multi label: exact label sets for accuracy, per-label F1 averaged', () => {
    const truth = Uint8Array.of(1, 0, 1, 1, 0, 0);
    const predicted = Uint8Array.of(1, 0, 0, 1, 1, 0);
    // Rows (truth ~ predicted): (1,0)~(1,0), (1,1)~(0,1), (0,0)~(1,0): one exact.
    // label 0: truth 1 1 0, predicted 1 0 1 -> tp 1, fp 1, fn 1 -> 0.5; label 1: 0 1 0 both -> 1.
    expect(multiLabelScores(truth, predicted, 2)).toEqual({ accuracy: 1 / 3, macroF1: 0.75 });
  });
});

describe('crossValidate', () => {
  it('fits once per fold on the other folds and scores the pooled held-out predictions', () => {
    // One feature: the class is its sign, except one example on the wrong side.
    const values = [-3, -2, -1.5, -1, 0.5, 1, 1.5, 2, 3, -0.5];
    const y = [0, 0, 0, 0, 1, 1, 1, 1, 1, 1];
    const { fold, folds } = stratifiedFolds(y, 2);
    const seen: number[][] = [];
    const result = crossValidate(y, 2, fold, folds, (train, test) => {
      seen.push(Array.from(test));
      expect(Array.from(train).some((i) => fold[i] === fold[test[0]])).toBe(false);
      const head = fitLogisticRegression(
        takeRows(values, 1, train),
        Array.from(train, (i) => y[i]),
        1,
      );
      return Array.from(test, (i) => (sigmoid(head.weights[0] * values[i] + head.bias) >= 0.5 ? 1 : 0));
    });
    expect(seen.flat().sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Only the example at -0.5 with class 1 is wrong: class 0 tp 4 fp 1 -> 8/9, class 1 tp 5 fn 1 -> 10/11.
    expect(result).toEqual({ accuracy: 0.9, macroF1: (8 / 9 + 10 / 11) / 2, folds: 4 });
  });
});
