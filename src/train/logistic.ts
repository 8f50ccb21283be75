// L2-regularized logistic regression, solved to convergence by Newton's method.
//
// Objective, as scikit-learn's LogisticRegression defines it (the intercept is not penalized):
//   f(w, b) = 0.5 * ||w||^2 + C * sum_i v_i log(1 + exp(-s_i * (x_i . w + b))),  s_i = +1 / -1,
// with v_i the example's weight (1 unless `sampleWeights` says otherwise).
// The problem is strictly convex, so Newton's method (iteratively reweighted least squares)
// with a Cholesky solve of the (d+1) x (d+1) system reaches the unique minimum in a handful
// of steps. With fewer examples than features (a few-shot head: 20 x 384) the same step comes
// from an n x n system instead (`lowRankStep`), a hundred times less work. Everything is float64
// and sequential, so the same input gives the same bits.

import { sigmoid } from '../predict/link.js';

// The head's link, re-exported for the code that fits heads through it (fit-head, cross-validation).
export { sigmoid };

/** Options of {@link fitLogisticRegression}; all optional. */
export interface LogisticOptions {
  /** Inverse regularization strength, as scikit-learn's `C`. */
  C?: number;
  /** Per-example weights, as scikit-learn's `sample_weight` (default 1 each; see `balancedWeights`). */
  sampleWeights?: ArrayLike<number>;
  /** Stop when the gradient's Euclidean norm is below this. */
  tolerance?: number;
  maxIterations?: number;
}

export interface LogisticFit {
  /** d coefficients. */
  weights: Float64Array;
  bias: number;
  /** Newton steps taken. */
  iterations: number;
  /** Euclidean norm of the objective's gradient at the returned point. */
  gradientNorm: number;
  /** The objective's value at the returned point. */
  objective: number;
}

const kDefaults: Readonly<Required<Omit<LogisticOptions, 'sampleWeights'>>> = Object.freeze({
  C: 1,
  tolerance: 1e-14,
  maxIterations: 100,
});

/** log(1 + exp(t)) without overflow. */
function softplus(t: number): number {
  return t > 0 ? t + Math.log1p(Math.exp(-t)) : Math.log1p(Math.exp(t));
}

function margins(x: ArrayLike<number>, n: number, d: number, theta: Float64Array, out: Float64Array): void {
  const b = theta[d];
  for (let i = 0; i < n; i++) {
    let z = b;
    const row = i * d;
    for (let j = 0; j < d; j++) z += x[row + j] * theta[j];
    out[i] = z;
  }
}

// `scales[i]` is C times example i's weight.
function objective(theta: Float64Array, d: number, z: Float64Array, y: ArrayLike<number>, scales: Float64Array): number {
  let penalty = 0;
  for (let j = 0; j < d; j++) penalty += theta[j] * theta[j];
  let loss = 0;
  for (let i = 0; i < z.length; i++) loss += scales[i] * softplus(y[i] ? -z[i] : z[i]);
  return 0.5 * penalty + loss;
}

/** Examples per block of the Hessian's accumulation. */
const kBlock = 32;

/**
 * Adds the log-loss gradient and the Hessian's upper triangle (X~' S D X~, X~ = [X 1], S = C * weights) over
 * all examples. Examples go in blocks of kBlock, stored feature-major, so each Hessian entry
 * is read and written once per block (not once per example) and the inner loop is a
 * contiguous dot product: the O(n d^2) part runs several times faster. Fixed order, so
 * deterministic.
 */
function accumulate(
  x: ArrayLike<number>,
  n: number,
  d: number,
  z: Float64Array,
  labels: Float64Array,
  scales: Float64Array,
  gradient: Float64Array,
  hessian: Float64Array,
  block: Float64Array,
  weighted: Float64Array,
): void {
  const m = d + 1;
  for (let start = 0; start < n; start += kBlock) {
    const count = Math.min(kBlock, n - start);
    block.fill(0);
    weighted.fill(0);
    for (let b = 0; b < count; b++) {
      const i = start + b;
      const p = sigmoid(z[i]);
      const residual = scales[i] * (p - labels[i]);
      const weight = scales[i] * p * (1 - p);
      const row = i * d;
      for (let j = 0; j < d; j++) {
        const xj = x[row + j];
        gradient[j] += residual * xj;
        block[j * kBlock + b] = xj;
        weighted[j * kBlock + b] = weight * xj;
      }
      gradient[d] += residual;
      block[d * kBlock + b] = 1;
      weighted[d * kBlock + b] = weight;
    }
    for (let j = 0; j < m; j++) {
      const wj = j * kBlock;
      const hRow = j * m;
      let k = j;
      // Four columns at a time: each weighted value is loaded once for four products.
      for (; k + 3 < m; k += 4) {
        const x0 = k * kBlock;
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        let s3 = 0;
        for (let b = 0; b < count; b++) {
          const w = weighted[wj + b];
          s0 += w * block[x0 + b];
          s1 += w * block[x0 + kBlock + b];
          s2 += w * block[x0 + 2 * kBlock + b];
          s3 += w * block[x0 + 3 * kBlock + b];
        }
        hessian[hRow + k] += s0;
        hessian[hRow + k + 1] += s1;
        hessian[hRow + k + 2] += s2;
        hessian[hRow + k + 3] += s3;
      }
      for (; k < m; k++) {
        const xk = k * kBlock;
        let sum = 0;
        for (let b = 0; b < count; b++) sum += weighted[wj + b] * block[xk + b];
        hessian[hRow + k] += sum;
      }
    }
  }
}

/**
 * Solves A x = b in place for symmetric positive definite A (m x m, row-major, upper
 * triangle read). A is overwritten by its Cholesky factor; b by the solution.
 */
export function choleskySolve(a: Float64Array, b: Float64Array, m: number): void {
  for (let j = 0; j < m; j++) {
    let diagonal = a[j * m + j];
    for (let k = 0; k < j; k++) diagonal -= a[j * m + k] * a[j * m + k];
    if (!(diagonal > 0)) throw new RangeError('the Newton system is not positive definite');
    const ljj = Math.sqrt(diagonal);
    a[j * m + j] = ljj;
    for (let i = j + 1; i < m; i++) {
      // L[i][j] from the upper triangle's A[j][i].
      let sum = a[j * m + i];
      for (let k = 0; k < j; k++) sum -= a[i * m + k] * a[j * m + k];
      a[i * m + j] = sum / ljj;
    }
  }
  for (let i = 0; i < m; i++) {
    let sum = b[i];
    for (let k = 0; k < i; k++) sum -= a[i * m + k] * b[k];
    b[i] = sum / a[i * m + i];
  }
  for (let i = m - 1; i >= 0; i--) {
    let sum = b[i];
    for (let k = i + 1; k < m; k++) sum -= a[k * m + i] * b[k];
    b[i] = sum / a[i * m + i];
  }
}

/**
 * The Newton step H⁻¹g for n < d without forming H. With W = diag(w) the curvature weights
 * (C · weight · p(1 − p)), H = [[M, c], [cᵀ, Σw]] where M = I + XᵀWX and c = Xᵀw (the bias is not
 * penalized). Woodbury with S = diag(√w) and K = I + S·XXᵀ·S (n x n, positive definite) gives
 * M⁻¹v = v − XᵀS·K⁻¹·SXv; the bias comes out through its Schur complement Σw − cᵀM⁻¹c.
 * `gram` is XXᵀ (n x n), computed once per fit.
 */
function lowRankStep(
  x: ArrayLike<number>,
  n: number,
  d: number,
  gram: Float64Array,
  w: Float64Array,
  gradient: Float64Array,
): Float64Array {
  const root = w.map(Math.sqrt);
  const kernel = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let k = 0; k < n; k++) kernel[i * n + k] = (i === k ? 1 : 0) + root[i] * gram[i * n + k] * root[k];
  const inverseM = (v: Float64Array): Float64Array => {
    const r = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      let dot = 0;
      for (let j = 0; j < d; j++) dot += x[i * d + j] * v[j];
      r[i] = root[i] * dot;
    }
    choleskySolve(Float64Array.from(kernel), r, n);
    const out = Float64Array.from(v);
    for (let i = 0; i < n; i++) {
      const coefficient = root[i] * r[i];
      for (let j = 0; j < d; j++) out[j] -= x[i * d + j] * coefficient;
    }
    return out;
  };
  const c = new Float64Array(d);
  let total = 0;
  for (let i = 0; i < n; i++) {
    total += w[i];
    for (let j = 0; j < d; j++) c[j] += x[i * d + j] * w[i];
  }
  const u = inverseM(gradient.subarray(0, d));
  const t = inverseM(c);
  let cu = 0;
  let ct = 0;
  for (let j = 0; j < d; j++) {
    cu += c[j] * u[j];
    ct += c[j] * t[j];
  }
  const schur = total - ct;
  if (!(schur > 0)) throw new RangeError('the Newton system is not positive definite');
  const step = new Float64Array(d + 1);
  step[d] = (gradient[d] - cu) / schur;
  for (let j = 0; j < d; j++) step[j] = u[j] - t[j] * step[d];
  return step;
}

/**
 * Fits the head: `x` holds n rows of d features (row-major), `y` n labels (truthy = class 1).
 *
 * @example
 * ```ts
 * // Two points on a line, one per class: by symmetry b = 0 and w solves w = 2 / (1 + e^w).
 * const fit = fitLogisticRegression(new Float64Array([1, -1]), [1, 0], 1);
 * fit.weights[0]; // 0.6748...
 * fit.bias;       // 0
 * ```
 */
export function fitLogisticRegression(
  x: ArrayLike<number>,
  y: ArrayLike<number | boolean>,
  d: number,
  options: LogisticOptions = {},
): LogisticFit {
  const { C, tolerance, maxIterations } = { ...kDefaults, ...options };
  const n = y.length;
  if (!Number.isInteger(d) || d < 1) throw new RangeError('d must be a positive integer');
  if (x.length !== n * d) throw new RangeError(`x must hold n * d = ${n * d} values (got ${x.length})`);
  if (!(C > 0)) throw new RangeError('options.C must be a positive number');
  const labels = Float64Array.from({ length: n }, (_, i) => (y[i] ? 1 : 0));
  const weights = options.sampleWeights;
  if (weights !== undefined && weights.length !== n) throw new RangeError(`options.sampleWeights must hold ${n} values`);
  const scales = Float64Array.from({ length: n }, (_, i) => C * (weights === undefined ? 1 : weights[i]));

  const m = d + 1;
  let theta = new Float64Array(m);
  const z = new Float64Array(n);
  const trialZ = new Float64Array(n);
  const gradient = new Float64Array(m);
  // Fewer examples than features: Newton steps through the n x n system (lowRankStep), no Hessian.
  const lowRank = n < d;
  const hessian = new Float64Array(lowRank ? 0 : m * m);
  const block = new Float64Array(lowRank ? 0 : kBlock * m);
  const weighted = new Float64Array(lowRank ? 0 : kBlock * m);
  const gram = lowRank ? new Float64Array(n * n) : null;
  if (gram)
    for (let i = 0; i < n; i++)
      for (let k = 0; k < n; k++) {
        let dot = 0;
        for (let j = 0; j < d; j++) dot += x[i * d + j] * x[k * d + j];
        gram[i * n + k] = dot;
      }
  const curvature = new Float64Array(n);
  margins(x, n, d, theta, z);
  let value = objective(theta, d, z, labels, scales);
  let gradientNorm: number;
  let previousNorm = Infinity;
  let iterations = 0;

  for (;;) {
    // Gradient and Hessian (upper triangle) at theta.
    gradient.fill(0);
    if (gram) {
      for (let i = 0; i < n; i++) {
        const p = sigmoid(z[i]);
        const residual = scales[i] * (p - labels[i]);
        curvature[i] = scales[i] * p * (1 - p);
        for (let j = 0; j < d; j++) gradient[j] += residual * x[i * d + j];
        gradient[d] += residual;
      }
    } else {
      hessian.fill(0);
      accumulate(x, n, d, z, labels, scales, gradient, hessian, block, weighted);
    }
    let squared = 0;
    for (let j = 0; j < m; j++) {
      if (j < d) {
        gradient[j] += theta[j];
        if (!gram) hessian[j * m + j] += 1;
      }
      squared += gradient[j] * gradient[j];
    }
    gradientNorm = Math.sqrt(squared);
    if (gradientNorm < tolerance || iterations >= maxIterations) break;
    // Newton converges quadratically; when the norm stops halving near zero, rounding is all
    // that is left (large n), and further steps only shuffle the last bits.
    if (gradientNorm < 1e-8 && gradientNorm > previousNorm / 2) break;
    previousNorm = gradientNorm;

    let step: Float64Array;
    if (gram) {
      step = lowRankStep(x, n, d, gram, curvature, gradient);
    } else {
      step = Float64Array.from(gradient);
      choleskySolve(hessian, step, m);
    }
    let decrement = 0;
    for (let j = 0; j < m; j++) decrement += gradient[j] * step[j];
    // Rounding alone is left: no step can lower the objective any further.
    if (decrement < 1e-30 * Math.max(1, Math.abs(value))) break;

    // Backtracking (Armijo) keeps every step a descent step; near the minimum alpha = 1.
    let alpha = 1;
    const trial = new Float64Array(m);
    let trialValue = Infinity;
    for (let halvings = 0; halvings < 60; halvings++) {
      for (let j = 0; j < m; j++) trial[j] = theta[j] - alpha * step[j];
      margins(x, n, d, trial, trialZ);
      trialValue = objective(trial, d, trialZ, labels, scales);
      if (trialValue <= value - 1e-4 * alpha * decrement) break;
      alpha /= 2;
    }
    if (!(trialValue <= value)) break;
    theta = trial;
    z.set(trialZ);
    value = trialValue;
    iterations++;
  }
  return { weights: theta.slice(0, d), bias: theta[d], iterations, gradientNorm, objective: value };
}
