// Applies logistic-regression heads to a batch of embeddings. Runs inside pool workers.
import { sigmoid } from '../train/logistic.js';

/**
 * P(true) for each row of `embeddings` (n x dim): rows are taken in segments, segment s has
 * `counts[s]` rows scored by head `heads[s]` (a row of `weights`, with its bias). Sums run in
 * float64 in a fixed order, so a text gets the same probability in any batch.
 *
 * @example
 * ```ts
 * // Two texts, one head w = [1, 0], b = 0, embeddings [1, 0] and [0, 1]:
 * scoreSegments(new Float32Array([1, 0, 0, 1]), 2, new Int32Array([2]), new Int32Array([0]),
 *   new Float64Array([1, 0]), new Float64Array([0]));
 * // Float32Array [0.7310585975646973, 0.5]
 * ```
 */
export function scoreSegments(
  embeddings: Float32Array,
  dim: number,
  counts: Int32Array,
  heads: Int32Array,
  weights: Float64Array,
  biases: Float64Array,
): Float32Array {
  const n = embeddings.length / dim;
  const out = new Float32Array(n);
  let row = 0;
  for (let s = 0; s < counts.length; s++) {
    const head = heads[s];
    const w = head * dim;
    for (let end = row + counts[s]; row < end; row++) {
      let z = biases[head];
      const e = row * dim;
      for (let j = 0; j < dim; j++) z += weights[w + j] * embeddings[e + j];
      out[row] = sigmoid(z);
    }
  }
  if (row !== n) throw new RangeError(`segments cover ${row} texts, the batch has ${n}`);
  return out;
}
