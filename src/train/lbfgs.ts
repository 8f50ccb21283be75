// Limited-memory BFGS for smooth convex objectives (the softmax head's). Two-loop recursion over
// the last `memory` steps, a backtracking (Armijo) line search from the unit step, and a pair kept
// only when its curvature s . y is positive, so the implied Hessian stays positive definite and
// every direction is a descent direction. Sequential float64 arithmetic: the same input gives the
// same bits.

export interface LbfgsOptions {
  /** Stop when the gradient's Euclidean norm is below this. */
  tolerance: number;
  maxIterations: number;
  /** Steps remembered. Default 10. */
  memory?: number;
}

export interface LbfgsResult {
  x: Float64Array;
  value: number;
  gradientNorm: number;
  iterations: number;
}

/** `evaluate(x, gradient)` returns f(x) and writes its gradient. */
export type Objective = (x: Float64Array, gradient: Float64Array) => number;

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

export function minimizeLbfgs(evaluate: Objective, start: Float64Array, options: LbfgsOptions): LbfgsResult {
  const memory = options.memory ?? 10;
  const m = start.length;
  let x = Float64Array.from(start);
  let gradient = new Float64Array(m);
  let value = evaluate(x, gradient);
  const steps: Float64Array[] = [];
  const changes: Float64Array[] = [];
  const rhos: number[] = [];
  const alphas = new Float64Array(memory);
  const direction = new Float64Array(m);
  let trial = new Float64Array(m);
  let trialGradient = new Float64Array(m);
  let iterations = 0;
  let gradientNorm = Math.sqrt(dot(gradient, gradient));

  while (gradientNorm >= options.tolerance && iterations < options.maxIterations) {
    // direction = -H g by the two-loop recursion; H0 = (s . y / y . y) I from the newest pair.
    direction.set(gradient);
    for (let k = steps.length - 1; k >= 0; k--) {
      alphas[k] = rhos[k] * dot(steps[k], direction);
      for (let i = 0; i < m; i++) direction[i] -= alphas[k] * changes[k][i];
    }
    const last = steps.length - 1;
    // With no curvature yet, a first step of unit length.
    const gamma = last >= 0 ? dot(steps[last], changes[last]) / dot(changes[last], changes[last]) : 1 / gradientNorm;
    for (let i = 0; i < m; i++) direction[i] *= gamma;
    for (let k = 0; k < steps.length; k++) {
      const beta = rhos[k] * dot(changes[k], direction);
      for (let i = 0; i < m; i++) direction[i] += (alphas[k] - beta) * steps[k][i];
    }
    for (let i = 0; i < m; i++) direction[i] = -direction[i];
    const slope = dot(gradient, direction);
    if (!(slope < 0)) break;

    let step = 1;
    let trialValue = Infinity;
    for (let halvings = 0; halvings < 60; halvings++) {
      for (let i = 0; i < m; i++) trial[i] = x[i] + step * direction[i];
      trialValue = evaluate(trial, trialGradient);
      if (trialValue <= value + 1e-4 * step * slope) break;
      step /= 2;
    }
    // Rounding is all that is left: no step lowers the objective (near the minimum its changes,
    // about |g|^2, fall below the value's last bit before |g| reaches any tolerance).
    if (!(trialValue < value)) break;

    const s = new Float64Array(m);
    const yv = new Float64Array(m);
    for (let i = 0; i < m; i++) {
      s[i] = trial[i] - x[i];
      yv[i] = trialGradient[i] - gradient[i];
    }
    const curvature = dot(s, yv);
    if (curvature > 1e-300) {
      if (steps.length === memory) {
        steps.shift();
        changes.shift();
        rhos.shift();
      }
      steps.push(s);
      changes.push(yv);
      rhos.push(1 / curvature);
    }
    [x, trial] = [trial, x];
    [gradient, trialGradient] = [trialGradient, gradient];
    value = trialValue;
    gradientNorm = Math.sqrt(dot(gradient, gradient));
    iterations++;
  }
  return { x, value, gradientNorm, iterations };
}
