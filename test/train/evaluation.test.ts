import { describe, expect, it } from 'vitest';

import { evaluateBinary, evaluateMultiClass, evaluateMultiLabel, evaluateOutOfFold, kThresholds } from '../../src/train/evaluation.js';
import { fitAndMeasure } from '../../src/train/fit-head.js';
import type { ExampleTargets } from '../../src/train/pairs.js';
import type { HeadKind } from '../../src/pool/tasks.js';

describe('the evaluation report', () => {
  it('binary: confusion matrix, per-label and averaged scores, the threshold table and the calibration', () => {
    const truth = [true, true, true, false, false, false, false, true];
    const probability = [0.95, 0.7, 0.3, 0.6, 0.2, 0.05, 0.1, 0.55];
    const report = evaluateBinary(truth, probability);
    // true: 3 of 4 found (0.95, 0.7, 0.55), one false (0.6) called true.
    expect(report.confusion_matrix).toEqual([
      [3, 1],
      [1, 3],
    ]);
    expect(report.per_label).toEqual([
      { label: 'true', precision: 0.75, recall: 0.75, f1: 0.75, support: 4 },
      { label: 'false', precision: 0.75, recall: 0.75, f1: 0.75, support: 4 },
    ]);
    expect([report.accuracy, report.macro, report.micro]).toEqual([
      0.75,
      { precision: 0.75, recall: 0.75, f1: 0.75 },
      { precision: 0.75, recall: 0.75, f1: 0.75 },
    ]);
    expect(report.thresholds!.map((r) => r.threshold)).toEqual(kThresholds);
    expect(kThresholds[0]).toBe(0.05);
    expect(kThresholds[18]).toBe(0.95);
    // At 0.05 every text is true: recall 1, precision 4 of 8; at 0.95 only the 0.95 one.
    expect(report.thresholds![0]).toEqual({ threshold: 0.05, precision: 0.5, recall: 1, f1: 2 / 3 });
    expect(report.thresholds![18]).toEqual({ threshold: 0.95, precision: 1, recall: 0.25, f1: 0.4 });
    const bins = report.calibration!.bins;
    expect(bins.map((b) => b.count)).toEqual([1, 1, 1, 1, 0, 1, 1, 1, 0, 1]);
    expect(bins[9]).toEqual({ lower: 0.9, upper: 1, count: 1, mean_probability: 0.95, fraction_true: 1 });
    expect(bins[4]).toEqual({ lower: 0.4, upper: 0.5, count: 0, mean_probability: null, fraction_true: null });
    // |p - truth| per text, each its own bin, averaged: (0.05 + 0.3 + 0.7 + 0.6 + 0.2 + 0.05 + 0.1 + 0.45) / 8.
    expect(report.calibration!.ece).toBeCloseTo(2.45 / 8, 12);
    expect(report.hamming_loss).toBeUndefined();
  });

  it('multi-class: rows are the truth, columns the prediction; macro and micro differ on skewed classes', () => {
    const labels = ['a', 'b', 'c'];
    const report = evaluateMultiClass(labels, ['a', 'a', 'a', 'a', 'b', 'c'], ['a', 'a', 'a', 'b', 'b', 'b']);
    expect(report.confusion_matrix).toEqual([
      [3, 1, 0],
      [0, 1, 0],
      [0, 1, 0],
    ]);
    expect(report.per_label).toEqual([
      { label: 'a', precision: 1, recall: 0.75, f1: 6 / 7, support: 4 },
      { label: 'b', precision: 1 / 3, recall: 1, f1: 0.5, support: 1 },
      { label: 'c', precision: 0, recall: 0, f1: 0, support: 1 },
    ]);
    expect(report.accuracy).toBeCloseTo(4 / 6, 12);
    expect(report.micro).toEqual({ precision: 4 / 6, recall: 4 / 6, f1: 4 / 6 });
    expect(report.macro.f1).toBeCloseTo((6 / 7 + 0.5) / 3, 12);
    expect(report.thresholds).toBeUndefined();
  });

  it('multi-label: per-label counts, exact-set accuracy and the Hamming loss', () => {
    const report = evaluateMultiLabel(['x', 'y'], [['x'], ['x', 'y'], []], [['x'], ['x'], ['y']]);
    expect(report.confusion_matrix).toEqual([
      [1, 0, 0, 2],
      [1, 1, 1, 0],
    ]);
    expect(report.accuracy).toBeCloseTo(1 / 3, 12);
    // Two of six (text, label) pairs wrong.
    expect(report.hamming_loss).toBeCloseTo(2 / 6, 12);
    expect(report.per_label[1]).toEqual({ label: 'y', precision: 0, recall: 0, f1: 0, support: 1 });
    expect(report.micro).toEqual({ precision: 2 / 3, recall: 2 / 3, f1: 2 / 3 });
  });
});

describe('the report of a cross-validation', () => {
  it('reads out-of-fold probabilities as predict does: binary at 0.5, the most probable class, labels at 0.5', () => {
    const binary = evaluateOutOfFold(
      { kind: 'classes', classes: Int32Array.of(1, 1, 0, 0), count: 2 },
      null,
      Float64Array.of(0.9, 0.4, 0.6, 0.1),
    );
    expect(binary).toEqual(evaluateBinary([true, true, false, false], [0.9, 0.4, 0.6, 0.1]));
    const classes = evaluateOutOfFold(
      { kind: 'classes', classes: Int32Array.of(0, 1, 2), count: 3 },
      ['a', 'b', 'c'],
      Float64Array.of(0.5, 0.3, 0.2, 0.6, 0.3, 0.1, 0.1, 0.2, 0.7),
    );
    expect(classes).toEqual(evaluateMultiClass(['a', 'b', 'c'], ['a', 'b', 'c'], ['a', 'a', 'c']));
    const sets = evaluateOutOfFold(
      { kind: 'label-sets', sets: Uint8Array.of(1, 0, 1, 1, 0, 0), count: 2 },
      ['x', 'y'],
      Float64Array.of(0.8, 0.2, 0.9, 0.4, 0.3, 0.5),
    );
    expect(sets).toEqual(evaluateMultiLabel(['x', 'y'], [['x'], ['x', 'y'], []], [['x'], ['x'], ['y']]));
  });

  // 30 points in 4-D, noisy around three directions, so that some are held out wrong.
  const dim = 4;
  const n = 30;
  const noise = (i: number, j: number) => Math.sin(12.9898 * i + 78.233 * j) * 1.1;
  const classOf = (i: number) => i % 3;
  const embeddings = Float32Array.from({ length: n * dim }, (_, k) => {
    const [i, j] = [Math.floor(k / dim), k % dim];
    return (j === classOf(i) ? 1 : 0) + noise(i, j);
  });
  const cases: [string, HeadKind, ExampleTargets, string[] | null][] = [
    [
      'binary',
      'logistic',
      { kind: 'classes', classes: Int32Array.from({ length: n }, (_, i) => (classOf(i) === 0 ? 1 : 0)), count: 2 },
      null,
    ],
    [
      'multi-class',
      'softmax',
      { kind: 'classes', classes: Int32Array.from({ length: n }, (_, i) => classOf(i)), count: 3 },
      ['a', 'b', 'c'],
    ],
    [
      'multi-label',
      'one-vs-rest',
      { kind: 'label-sets', sets: Uint8Array.from({ length: n * 2 }, (_, k) => (classOf(k >> 1) === (k & 1) ? 1 : 0)), count: 2 },
      ['x', 'y'],
    ],
  ];
  const fitTask = (head: HeadKind, targets: ExampleTargets, crossValidate: boolean) =>
    fitAndMeasure({ kind: 'fit', head, embeddings, targets, dim, C: 1, balanced: false, validation: null, crossValidate });
  it.each(cases)(
    '%s: the report of the fit task out-of-fold probabilities has its cv accuracy and macro-F1',
    (_, head, targets, labels) => {
      const fit = fitTask(head, targets, true);
      const outputs = head === 'logistic' ? 1 : targets.count;
      expect(fit.outOfFold).toHaveLength(n * outputs);
      const report = evaluateOutOfFold(targets, labels, fit.outOfFold!);
      expect(report.examples).toBe(n);
      expect(report.accuracy).toBe(fit.crossValidation!.accuracy);
      expect(report.macro.f1).toBeCloseTo(fit.crossValidation!.macroF1, 12);
      // Held out, so not every example is right: the report measures what the scores measure, not the training fit.
      expect(report.accuracy).toBeLessThan(1);
      expect(report.accuracy).toBeLessThan(fit.trainAccuracy + 1e-12);
    },
  );

  it('is absent when the fit task cross-validates nothing', () => {
    const [, head, targets] = cases[0];
    const fit = fitTask(head, targets, false);
    expect([fit.crossValidation, fit.outOfFold]).toEqual([null, null]);
  });
});
