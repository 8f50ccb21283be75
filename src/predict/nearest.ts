// Explanations of an answer (classify, and predict with a model's kept examples): for each text, the examples nearest to it in the encoder's
// space (cosine similarity: the embeddings are L2-normalized, so a dot product), with their labels,
// and for binary and multi-class answers whether each one carries the label answered, so pulls the
// head toward that answer (a logistic or softmax head fitted on these examples moves toward the
// labels of the examples around a text). Computed only when a call asks (`explain: k`), in a pool
// worker as background work (its tenant's turn, within the call's deadline), never on the main thread;
// each example's text is cut to `kExplainTextChars`, so an answer stays small.
import { explainBoundsError, explainedText, kExplainTextChars } from '../contract/long-texts.js';
import type { TaskType } from '../contract/train-request.js';
import { runTask } from '../pool/pool.js';
import type { NearestExample, NearestResult, NearestTask } from '../pool/tasks.js';
import { predictBounds } from './admission.js';
import type { KeptExample } from './example-bank.js';

/** One neighbour of a text: an example, its label (binary: boolean; multi-class: class; multi-label: labels), its cosine similarity. */
export interface Neighbour {
  /** The example's text, or its first `kExplainTextChars` characters (`text_truncated`). */
  text: string;
  /** Present (true) when `text` is only the start of the example's text. */
  text_truncated?: true;
  label?: boolean | string;
  labels?: string[];
  similarity: number;
  /** Binary and multi-class: the example carries the label answered for the text. */
  supports?: boolean;
}

/**
 * Where a search finds the examples: a stored model's directory (its worker reads the kept files once and keeps
 * them), or examples still in memory with their embeddings (a model `train()` just returned, a classify call's).
 */
export type NeighbourSource =
  | { kind: 'files'; dir: string; modelId: string; taskType: TaskType; examples: number }
  | { kind: 'memory'; examples: readonly KeptExample[]; embeddings: Float32Array };

/** How many examples a search looks through. */
export function exampleCount(source: NeighbourSource): number {
  return source.kind === 'files' ? source.examples : source.examples.length;
}

/** Whose call it is and its signal: the search takes that tenant's turn, within the predict deadline. */
export interface NearestCall {
  tenant?: string;
  signal?: AbortSignal;
}

function fromMemory(example: KeptExample): NearestExample {
  const { text, cut } = explainedText(example.text, kExplainTextChars);
  return 'labels' in example ? { text, labels: [...example.labels], cut } : { text, label: example.label, cut };
}

/**
 * Finds the `k` examples nearest each input (`inputs`: t x dim embeddings) and returns the function that names
 * them, most similar first (ties: the earlier example first), once the answers (for `supports`) are known.
 * Throws the 400 of {@link explainBoundsError} before any search over the bounds.
 *
 * @example
 * ```ts
 * // 'What a great film' against four short reviews (see `classify`'s example):
 * const name = await findNearest({ kind: 'memory', examples, embeddings }, 'binary-classification', inputEmbeddings, 384, 1);
 * name([true]);
 * // [[{ text: 'Wonderful acting', label: true, similarity: 0.6311201505086397, supports: true }]]
 * ```
 */
export async function findNearest(
  source: NeighbourSource,
  taskType: TaskType,
  inputs: Float32Array,
  dim: number,
  k: number,
  call: NearestCall = {},
): Promise<(answers: readonly (boolean | string | null)[]) => Neighbour[][]> {
  const refused = explainBoundsError(inputs.length / dim, exampleCount(source));
  if (refused) throw refused;
  const bank: NearestTask['bank'] =
    source.kind === 'files'
      ? { kind: 'files', dir: source.dir, modelId: source.modelId, taskType: source.taskType }
      : { kind: 'embeddings', embeddings: source.embeddings };
  const { deadlineMs } = predictBounds();
  const found = await runTask<NearestResult>(
    { kind: 'nearest', inputs, dim, k, bank, textChars: kExplainTextChars },
    call.signal,
    undefined,
    { tenant: call.tenant, startWithinMs: deadlineMs },
  );
  const { count, indices, similarities } = found;
  const named = found.examples ?? Array.from(indices, (i) => fromMemory((source as { examples: readonly KeptExample[] }).examples[i]));
  return (answers) =>
    answers.map((answer, q) =>
      Array.from({ length: count }, (_, r): Neighbour => {
        const at = q * count + r;
        const { text, cut, label, labels } = named[at];
        const shown = cut ? { text, text_truncated: true as const } : { text };
        const similarity = similarities[at];
        if (taskType === 'multi-label-classification') return { ...shown, labels, similarity };
        return { ...shown, label, similarity, supports: label === answer };
      }),
    );
}
