import { describe, expect, it } from 'vitest';

import { choleskySolve, fitLogisticRegression, sigmoid } from '../../src/train/logistic.js';

/** The objective's gradient, computed directly from its definition. */
function gradient(x: ArrayLike<number>, y: number[], d: number, w: ArrayLike<number>, b: number, C: number): number[] {
  const g = [...Array.from({ length: d }, (_, j) => w[j]), 0];
  for (let i = 0; i < y.length; i++) {
    let z = b;
    for (let j = 0; j < d; j++) z += x[i * d + j] * w[j];
    const r = C * (sigmoid(z) - y[i]);
    for (let j = 0; j < d; j++) g[j] += r * x[i * d + j];
    g[d] += r;
  }
  return g;
}

const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

/** 30 points in 5 dimensions with a noisy linear rule: no perfect separation. */
function dataset(): { x: Float64Array; y: number[] } {
  const n = 30;
  const d = 5;
  const beta = [1, -2, 0.5, 0, 1];
  const x = new Float64Array(n * d);
  const y: number[] = [];
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < d; j++) {
      x[i * d + j] = Math.sin(i * 7 + j * 3 + 1);
      s += x[i * d + j] * beta[j];
    }
    y.push(s + 0.8 * Math.cos(i * 5) > 0 ? 1 : 0);
  }
  return { x, y };
}

describe('fitLogisticRegression', () => {
  it('solves the two-point case: b = 0 and w = 2 / (1 + e^w)', () => {
    const fit = fitLogisticRegression(new Float64Array([1, -1]), [1, 0], 1);
    // The scalar fixed point, found by bisection of w - 2 / (1 + e^w) on [0, 2].
    let lo = 0;
    let hi = 2;
    for (let k = 0; k < 200; k++) {
      const mid = (lo + hi) / 2;
      if (mid - 2 / (1 + Math.exp(mid)) > 0) hi = mid;
      else lo = mid;
    }
    expect(fit.weights[0]).toBeCloseTo(lo, 12);
    expect(fit.weights[0]).toBeCloseTo(0.6748316143, 10);
    expect(Math.abs(fit.bias)).toBeLessThan(1e-15);
  });

  it('matches scikit-learn (C = 1, newton-cholesky, tol 1e-14) and reaches a zero gradient', () => {
    const { x, y } = dataset();
    expect(y.join('')).toBe('111100001111000001111000001111');
    const fit = fitLogisticRegression(x, y, 5);
    // sklearn.linear_model.LogisticRegression(C=1.0, solver='newton-cholesky', tol=1e-14).fit(X, y), sklearn 1.2.1
    const sklearn = [1.080563977218436, -1.011903091286009, 0.9229889581014532, -0.8156011946449941, 0.6918891677323543];
    for (let j = 0; j < 5; j++) expect(fit.weights[j]).toBeCloseTo(sklearn[j], 11);
    expect(fit.bias).toBeCloseTo(-0.28958463481113195, 11);
    expect(norm(gradient(x, y, 5, fit.weights, fit.bias, 1))).toBeLessThan(1e-8);
    expect(fit.gradientNorm).toBeLessThan(1e-13);
    expect(fit.iterations).toBe(7);
  });

  it('follows C: a weaker penalty gives larger weights, still at a zero gradient', () => {
    const { x, y } = dataset();
    const fit = fitLogisticRegression(x, y, 5, { C: 10 });
    expect(norm(gradient(x, y, 5, fit.weights, fit.bias, 10))).toBeLessThan(1e-8);
    expect(norm(Array.from(fit.weights))).toBeGreaterThan(norm(Array.from(fitLogisticRegression(x, y, 5).weights)));
  });

  it('converges on separable data (the penalty bounds the weights)', () => {
    const x = new Float64Array([2, 1, 3, -1, -2, -4]);
    const fit = fitLogisticRegression(x, [1, 1, 1, 0, 0, 0], 1);
    expect(norm(gradient(x, [1, 1, 1, 0, 0, 0], 1, fit.weights, fit.bias, 1))).toBeLessThan(1e-8);
    expect(fit.weights[0]).toBeGreaterThan(0);
  });

  it('with fewer examples than features (the n x n Newton step) reaches the optimum the full Hessian finds', () => {
    // 12 points in 40 dimensions, C = 1. The same objective with every point repeated 4 times at
    // C = 1/4 has 48 > 40 rows, which the (d+1) x (d+1) Hessian path solves: the same minimum.
    const n = 12;
    const d = 40;
    const x = Float64Array.from({ length: n * d }, (_, k) => Math.sin(k * 1.7 + 0.3) + 0.3 * Math.cos(k * 0.11));
    const y = Array.from({ length: n }, (_, i) => (Math.sin(i * 2.3) + 0.4 * x[i * d] > 0 ? 1 : 0));
    const few = fitLogisticRegression(x, y, d);
    const repeats = 4;
    const xs = new Float64Array(n * repeats * d);
    const ys: number[] = [];
    for (let r = 0; r < repeats; r++) {
      xs.set(x, r * n * d);
      ys.push(...y);
    }
    const many = fitLogisticRegression(xs, ys, d, { C: 1 / repeats });
    expect(norm(gradient(x, y, d, few.weights, few.bias, 1))).toBeLessThan(1e-10);
    expect(few.iterations).toBeGreaterThan(1);
    for (let j = 0; j < d; j++) expect(few.weights[j]).toBeCloseTo(many.weights[j], 10);
    expect(few.bias).toBeCloseTo(many.bias, 10);
    expect(Math.abs(few.objective - many.objective)).toBeLessThan(1e-10);
  });

  it('is deterministic to the bit', () => {
    const { x, y } = dataset();
    const a = fitLogisticRegression(x, y, 5);
    const b = fitLogisticRegression(x, y, 5);
    expect(Array.from(a.weights)).toEqual(Array.from(b.weights));
    expect(a.bias).toBe(b.bias);
  });

  it('checks its arguments', () => {
    expect(() => fitLogisticRegression(new Float64Array(3), [1, 0], 2)).toThrow(new RangeError('x must hold n * d = 4 values (got 3)'));
    expect(() => fitLogisticRegression(new Float64Array(2), [1, 0], 1, { C: 0 })).toThrow(
      new RangeError('options.C must be a positive number'),
    );
  });
});

describe('choleskySolve', () => {
  it('solves a 3 x 3 system exactly', () => {
    // A = [[4, 2, 0], [2, 5, 3], [0, 3, 6]], x = [1, -1, 2] => b = A x = [2, 3, 9]
    const a = new Float64Array([4, 2, 0, 2, 5, 3, 0, 3, 6]);
    const b = new Float64Array([2, 3, 9]);
    choleskySolve(a, b, 3);
    expect(Array.from(b).map((v) => Math.round(v * 1e12) / 1e12)).toEqual([1, -1, 2]);
  });
});

describe('sigmoid', () => {
  it('stays finite for large inputs', () => {
    expect(sigmoid(0)).toBe(0.5);
    expect(sigmoid(800)).toBe(1);
    expect(sigmoid(-800)).toBe(0);
  });
});
