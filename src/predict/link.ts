// The link functions that turn a head's scores into probabilities. Prediction applies them
// (head.ts); training fits through the same ones (train/logistic.ts, train/softmax.ts), so a
// trained head scores the same at fit time and at predict time.

/** Logistic function without overflow for large |z|. */
export function sigmoid(z: number): number {
  if (z >= 0) return 1 / (1 + Math.exp(-z));
  const e = Math.exp(z);
  return e / (1 + e);
}

/** Writes the softmax of `z[offset .. offset+k)` to `out[offset ..]`; returns logsumexp. */
export function softmaxInto(z: ArrayLike<number>, offset: number, k: number, out: Float64Array | Float32Array): number {
  let max = -Infinity;
  for (let c = 0; c < k; c++) max = Math.max(max, z[offset + c]);
  let sum = 0;
  for (let c = 0; c < k; c++) {
    const e = Math.exp(z[offset + c] - max);
    out[offset + c] = e;
    sum += e;
  }
  for (let c = 0; c < k; c++) out[offset + c] /= sum;
  return max + Math.log(sum);
}
