// Applies heads to a batch of embeddings. Runs inside pool workers.
import type { HeadTable } from '../pool/tasks.js';
import { sigmoid, softmaxInto } from './link.js';

/**
 * Probabilities for each row of `embeddings` (n x dim): rows are taken in segments, segment s has
 * `counts[s]` rows scored by head `heads[s]` of `table`, which gives each text as many values as
 * the head has rows (binary: P(true); multi-class: P(class), summing to 1; multi-label: P(label)),
 * one text after the other. Sums run in float64 in a fixed order, so a text gets the same
 * probabilities in any batch.
 *
 * @example
 * ```ts
 * // Two texts, one binary head w = [1, 0], b = 0, embeddings [1, 0] and [0, 1]:
 * scoreSegments(new Float32Array([1, 0, 0, 1]), 2, new Int32Array([2]), new Int32Array([0]), {
 *   weights: new Float64Array([1, 0]), biases: new Float64Array([0]),
 *   rows: Int32Array.of(1), first: Int32Array.of(0), softmax: Uint8Array.of(0),
 * });
 * // Float32Array [0.7310585975646973, 0.5]
 * ```
 */
export function scoreSegments(
  embeddings: Float32Array,
  dim: number,
  counts: Int32Array,
  heads: Int32Array,
  table: HeadTable,
): Float32Array {
  const n = embeddings.length / dim;
  let size = 0;
  for (let s = 0; s < counts.length; s++) size += counts[s] * table.rows[heads[s]];
  const out = new Float32Array(size);
  const z = new Float64Array(Math.max(1, ...table.rows));
  let row = 0;
  let at = 0;
  for (let s = 0; s < counts.length; s++) {
    const head = heads[s];
    const rows = table.rows[head];
    const first = table.first[head];
    for (let end = row + counts[s]; row < end; row++) {
      const e = row * dim;
      for (let k = 0; k < rows; k++) {
        const w = (first + k) * dim;
        let sum = table.biases[first + k];
        for (let j = 0; j < dim; j++) sum += table.weights[w + j] * embeddings[e + j];
        z[k] = sum;
      }
      if (table.softmax[head]) {
        softmaxInto(z, 0, rows, z);
        for (let k = 0; k < rows; k++) out[at++] = z[k];
      } else {
        for (let k = 0; k < rows; k++) out[at++] = sigmoid(z[k]);
      }
    }
  }
  if (row !== n) throw new RangeError(`segments cover ${row} texts, the batch has ${n}`);
  return out;
}
