// Multinomial (softmax) logistic regression with an L2 penalty, for heads of more than two classes.
//
// Objective, as scikit-learn's LogisticRegression (lbfgs, multinomial) defines it up to a constant
// factor (the intercepts are not penalized):
//   f(W, b) = 0.5 * sum_k ||w_k||^2 + C * sum_i s_i * (logsumexp_k(z_ik) - z_i,y_i),  z_ik = w_k . x_i + b_k
// with s_i the sample weight of example i (1, or n / (K * n_class) for class_weight 'balanced').
// Newton's method would need a K(d+1)-square Hessian (1.5e9 entries for 100 classes of 384
// features), so this minimizes with L-BFGS instead: each step costs O(n K d). The W that minimizes
// f is unique; the intercepts are unique up to a shared shift (softmax ignores it), and every
// gradient's intercept part sums to zero over the classes, so starting from b = 0 keeps them
// centred (sum_k b_k = 0) and the answer is unique too. Float64, sequential: same input, same bits.

import { softmaxInto } from '../predict/link.js';
import { minimizeLbfgs } from './lbfgs.js';

/** Options of {@link fitSoftmaxRegression}; all optional. */
export interface SoftmaxOptions {
  /** Inverse regularization strength, as scikit-learn's `C`. Default 1. */
  C?: number;
  /** Per-example weights (default 1 each). */
  sampleWeights?: ArrayLike<number>;
  /** Stop when the gradient's Euclidean norm is below this. Default 1e-10. */
  tolerance?: number;
  /** Default 2,000. */
  maxIterations?: number;
}

export interface SoftmaxFit {
  /** K x d coefficients, class-major. */
  weights: Float64Array;
  /** K intercepts, summing to zero. */
  biases: Float64Array;
  classes: number;
  iterations: number;
  gradientNorm: number;
  objective: number;
}

/**
 * Fits a softmax head: `x` holds n rows of d features (row-major), `y` n class indices in [0, K).
 *
 * @example
 * ```ts
 * // Three points on a line, one per class.
 * const fit = fitSoftmaxRegression(new Float64Array([-1, 0, 1]), [0, 1, 2], 1, 3);
 * Array.from(fit.weights, (w) => +w.toFixed(4)); // [-0.5, 0, 0.5] (rounded)
 * ```
 */
export function fitSoftmaxRegression(
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  d: number,
  classes: number,
  options: SoftmaxOptions = {},
): SoftmaxFit {
  const C = options.C ?? 1;
  const n = y.length;
  if (!Number.isInteger(d) || d < 1) throw new RangeError('d must be a positive integer');
  if (!Number.isInteger(classes) || classes < 2) throw new RangeError('classes must be an integer of at least 2');
  if (x.length !== n * d) throw new RangeError(`x must hold n * d = ${n * d} values (got ${x.length})`);
  if (!(C > 0)) throw new RangeError('options.C must be a positive number');
  for (let i = 0; i < n; i++) {
    if (!Number.isInteger(y[i]) || y[i] < 0 || y[i] >= classes) throw new RangeError(`y[${i}] must be a class index in [0, ${classes})`);
  }
  const weights = options.sampleWeights ?? new Float64Array(n).fill(1);
  if (weights.length !== n) throw new RangeError(`options.sampleWeights must hold ${n} values`);

  const stride = d + 1;
  const z = new Float64Array(n * classes);
  const p = new Float64Array(n * classes);
  // theta: class k's row is [w_k (d values), b_k].
  const evaluate = (theta: Float64Array, gradient: Float64Array): number => {
    let value = 0;
    gradient.fill(0);
    for (let k = 0; k < classes; k++) {
      const row = k * stride;
      for (let j = 0; j < d; j++) {
        value += 0.5 * theta[row + j] * theta[row + j];
        gradient[row + j] = theta[row + j];
      }
    }
    for (let i = 0; i < n; i++) {
      const xi = i * d;
      for (let k = 0; k < classes; k++) {
        const row = k * stride;
        let s = theta[row + d];
        for (let j = 0; j < d; j++) s += theta[row + j] * x[xi + j];
        z[i * classes + k] = s;
      }
      const lse = softmaxInto(z, i * classes, classes, p);
      const scale = C * weights[i];
      value += scale * (lse - z[i * classes + y[i]]);
      for (let k = 0; k < classes; k++) {
        const residual = scale * (p[i * classes + k] - (k === y[i] ? 1 : 0));
        if (residual === 0) continue;
        const row = k * stride;
        for (let j = 0; j < d; j++) gradient[row + j] += residual * x[xi + j];
        gradient[row + d] += residual;
      }
    }
    return value;
  };
  const result = minimizeLbfgs(evaluate, new Float64Array(classes * stride), {
    tolerance: options.tolerance ?? 1e-10,
    maxIterations: options.maxIterations ?? 2000,
  });
  const out = new Float64Array(classes * d);
  const biases = new Float64Array(classes);
  for (let k = 0; k < classes; k++) {
    out.set(result.x.subarray(k * stride, k * stride + d), k * d);
    biases[k] = result.x[k * stride + d];
  }
  return {
    weights: out,
    biases,
    classes,
    iterations: result.iterations,
    gradientNorm: result.gradientNorm,
    objective: result.value,
  };
}

/** Sample weights for class_weight 'balanced', as scikit-learn computes them: n / (K * count(class)). */
export function balancedWeights(y: ArrayLike<number>, classes: number): Float64Array {
  const counts = new Float64Array(classes);
  for (let i = 0; i < y.length; i++) counts[y[i]]++;
  return Float64Array.from({ length: y.length }, (_, i) => y.length / (classes * counts[y[i]]));
}
