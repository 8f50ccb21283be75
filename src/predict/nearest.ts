// Explanations of an answer (classify, and predict with a model's kept examples): for each text, the examples nearest to it in the encoder's
// space (cosine similarity: the embeddings are L2-normalized, so a dot product), with their labels,
// and for binary and multi-class answers whether each one carries the label answered, so pulls the
// head toward that answer (a logistic or softmax head fitted on these examples moves toward the
// labels of the examples around a text). Computed only when a call asks (`explain: k`).
import type { ClassExample, LabelSetExample, TaskType, TrainExample } from '../contract/train-request.js';

/** One neighbour of a text: an example, its label (binary: boolean; multi-class: class; multi-label: labels), its cosine similarity. */
export interface Neighbour {
  text: string;
  label?: boolean | string;
  labels?: string[];
  similarity: number;
  /** Binary and multi-class: the example carries the label answered for the text. */
  supports?: boolean;
}

/**
 * The `k` examples nearest each input, most similar first (ties: the earlier example first).
 *
 * @example
 * ```ts
 * // 'What a great film' against four short reviews (see `classify`'s example):
 * nearest('binary-classification', examples, exampleEmbeddings, inputEmbeddings, 384, [true], 1);
 * // [[{ text: 'Wonderful acting', label: true, similarity: 0.6311201505086397, supports: true }]]
 * ```
 */
export function nearest(
  taskType: TaskType,
  examples: readonly (TrainExample | ClassExample | LabelSetExample)[],
  exampleEmbeddings: Float32Array,
  inputEmbeddings: Float32Array,
  dim: number,
  answers: readonly (boolean | string | null)[],
  k: number,
): Neighbour[][] {
  const n = examples.length;
  return answers.map((answer, t) => {
    const similarity = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      let dot = 0;
      for (let j = 0; j < dim; j++) dot += exampleEmbeddings[i * dim + j] * inputEmbeddings[t * dim + j];
      similarity[i] = dot;
    }
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => similarity[b] - similarity[a] || a - b);
    return order.slice(0, k).map((i) => {
      const example = examples[i];
      if (taskType === 'multi-label-classification') {
        return { text: example.text, labels: (example as LabelSetExample).labels, similarity: similarity[i] };
      }
      const label = (example as TrainExample | ClassExample).label;
      return { text: example.text, label, similarity: similarity[i], supports: label === answer };
    });
  });
}
