// What training makes of a valid train request: the fine-tuning plan and pair rounds with their
// defaults applied, and the order of the head's labels. The request itself (schema, limits, types)
// is contract/train-request.ts.
import {
  kDefaultAdapterRank,
  kDefaultFinetuneMethod,
  kDefaultMaxPairs,
  kDefaultNumIterations,
  type MultiClassTrainRequest,
  type MultiLabelTrainRequest,
  type TrainRequest,
} from '../contract/train-request.js';
import { pairCount } from './pairs.js';

/** How a request fine-tunes, defaults applied; null for a frozen encoder (`finetune: false`). */
export type FinetunePlan = { method: 'full' } | { method: 'adapter'; rank: number } | null;

/**
 * What a request's `finetune` asks for, with the defaults: `true` or absent is {@link kDefaultFinetuneMethod}, an
 * adapter's rank {@link kDefaultAdapterRank}.
 *
 * @example
 * ```ts
 * finetunePlan({ ...request, finetune: { method: 'adapter' } }); // { method: 'adapter', rank: 8 }
 * finetunePlan({ ...request, finetune: false });                 // null
 * ```
 */
export function finetunePlan(request: Pick<TrainRequest, 'finetune'>): FinetunePlan {
  const finetune = request.finetune ?? true;
  if (finetune === false) return null;
  const method = finetune === true ? kDefaultFinetuneMethod : finetune.method;
  if (method === 'full') return { method };
  return { method, rank: (typeof finetune === 'object' ? finetune.rank : undefined) ?? kDefaultAdapterRank };
}

/**
 * Pair rounds per example for a fine-tuning request: `num_iterations` when given, else 20,
 * lowered for large example sets so that the pairs stay within {@link kDefaultMaxPairs}.
 *
 * @example
 * ```ts
 * numIterations({ ...request, examples: twentyExamples }); // 20 (800 pairs)
 * numIterations({ ...request, examples: thousandExamples }); // 2 (4,000 pairs)
 * ```
 */
export function numIterations(request: TrainRequest): number {
  if (request.num_iterations !== undefined) return request.num_iterations;
  const rounds = Math.floor(kDefaultMaxPairs / pairCount(request.examples.length, 1));
  return Math.max(1, Math.min(kDefaultNumIterations, rounds));
}

/**
 * The class (multi-class) or label (multi-label) names of a request in the order the head's rows
 * take: sorted by code unit, as scikit-learn orders classes, so the order does not depend on the
 * order of the examples.
 *
 * @example
 * ```ts
 * labelNames({ ...request, task_type: 'multi-class-classification', examples: [{ text: 'a', label: 'yelp' }, { text: 'b', label: 'amazon' }] });
 * // ['amazon', 'yelp']
 * ```
 */
export function labelNames(request: MultiClassTrainRequest | MultiLabelTrainRequest): string[] {
  const names =
    request.task_type === 'multi-class-classification'
      ? request.examples.map((example) => example.label)
      : request.examples.flatMap((example) => example.labels);
  return [...new Set(names)].sort();
}
