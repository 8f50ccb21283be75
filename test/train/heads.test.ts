// The heads against scikit-learn's LogisticRegression: the expected values below were computed
// with scikit-learn 1.2.1 (solver newton-cg, tol 1e-14) on the same points; the multinomial
// intercepts are shown centred (sum zero), the form our solver returns.
import { describe, expect, it } from 'vitest';

import { fitLogisticRegression } from '../../src/train/logistic.js';
import { balancedWeights, fitSoftmaxRegression } from '../../src/train/softmax.js';

// 12 points in 2-D, 3 classes of 5, 4 and 3: x_i = r_i (cos t_i, sin t_i), t_i = 2.1 c_i + 0.37 i, r_i = 1 + 0.1 (i mod 3).
const y = [0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2];
const x = new Float64Array(
  y.flatMap((c, i) => {
    const t = 2.1 * c + 0.37 * i;
    const r = 1 + 0.1 * (i % 3);
    return [r * Math.cos(t), r * Math.sin(t)];
  }),
);

function expectClose(actual: ArrayLike<number>, expected: number[], tolerance: number): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) expect(Math.abs(actual[i] - expected[i])).toBeLessThan(tolerance);
}

describe('fitSoftmaxRegression', () => {
  it('matches scikit-learn multinomial logistic regression to 1e-6', () => {
    const fit = fitSoftmaxRegression(x, y, 2, 3, { C: 0.5 });
    expectClose(fit.weights, [0.667993981, 0.333914596, -0.337240228, -0.937173193, -0.330753752, 0.603258597], 1e-6);
    expectClose(fit.biases, [0.118979575, 0.143053762, -0.262033336], 1e-6);
    expect(fit.gradientNorm).toBeLessThan(1e-7);
  });

  it("matches scikit-learn with class_weight 'balanced' to 1e-6", () => {
    expect(Array.from(balancedWeights(y, 3))).toEqual([0.8, 0.8, 0.8, 0.8, 0.8, 1, 1, 1, 1, 4 / 3, 4 / 3, 4 / 3]);
    const fit = fitSoftmaxRegression(x, y, 2, 3, { C: 0.5, sampleWeights: balancedWeights(y, 3) });
    expectClose(fit.weights, [0.649222586, 0.27621734, -0.309825336, -0.949062011, -0.339397249, 0.672844671], 1e-6);
    expectClose(fit.biases, [-0.057943925, 0.13069311, -0.072749185], 1e-6);
  });

  it('gives the same bits for the same input, and the symmetric answer on a symmetric problem', () => {
    const a = fitSoftmaxRegression(x, y, 2, 3, { C: 0.5 });
    const b = fitSoftmaxRegression(x, y, 2, 3, { C: 0.5 });
    expect(Array.from(b.weights)).toEqual(Array.from(a.weights));
    // Three points on a line, one per class: w = (-w1, 0, w1), intercepts (-b1, 2 b1, -b1).
    const line = fitSoftmaxRegression(new Float64Array([-1, 0, 1]), [0, 1, 2], 1, 3);
    expectClose(line.weights, [-0.6234261, 0, 0.6234261], 1e-6);
    expectClose(line.biases, [-0.040242, 0.0804841, -0.040242], 1e-6);
  });

  it('rejects bad arguments', () => {
    expect(() => fitSoftmaxRegression(x, y, 2, 1)).toThrow(new RangeError('classes must be an integer of at least 2'));
    expect(() => fitSoftmaxRegression(x, [...y.slice(0, 11), 3], 2, 3)).toThrow(new RangeError('y[11] must be a class index in [0, 3)'));
    expect(() => fitSoftmaxRegression(x, y, 3, 3)).toThrow(new RangeError('x must hold n * d = 36 values (got 24)'));
    expect(() => fitSoftmaxRegression(x, y, 2, 3, { sampleWeights: [1] })).toThrow(
      new RangeError('options.sampleWeights must hold 12 values'),
    );
  });
});

describe('fitLogisticRegression with sample weights', () => {
  it('matches scikit-learn sample_weight to 1e-6', () => {
    const labels = y.map((c) => (c === 1 ? 1 : 0));
    const sampleWeights = y.map((_, i) => 1 + (i % 4));
    const fit = fitLogisticRegression(x, labels, 2, { C: 2, sampleWeights });
    expectClose(fit.weights, [-1.023055159, -2.761842845], 1e-6);
    expect(Math.abs(fit.bias - -0.584835734)).toBeLessThan(1e-6);
    expect(() => fitLogisticRegression(x, labels, 2, { sampleWeights: [1, 2] })).toThrow(
      new RangeError('options.sampleWeights must hold 12 values'),
    );
  });
});
