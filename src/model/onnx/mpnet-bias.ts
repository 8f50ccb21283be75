import { type GraphBuilder, OnnxType } from './graph.js';
import type { BertWeights } from './bert-weights.js';

// Upstream's MPNetEncoder calls relative_position_bucket with its defaults whatever config.json says: 32 buckets
// (16 per direction), distances up to 128 (8 exact, then logarithmic). The engine uses the same constants
// (native/core/encoder/relative_position.h).
const kBuckets = 32;
const kMaxDistance = 128;

/**
 * The bucket of `relative = key - query`, as MPNetEncoder.relative_position_bucket computes it: the logarithm and
 * the products in float32, as torch does on a float tensor (and as the engine does), so a distance on a bucket's
 * edge lands where theirs does.
 *
 * @example
 * ```ts
 * [0, 1, -1, 7, 8, 20, 200].map(mpnetRelativeBucket); // [0, 17, 1, 23, 24, 26, 31]
 * ```
 */
export function mpnetRelativeBucket(relative: number): number {
  const half = kBuckets / 2;
  const maxExact = half / 2;
  let n = -relative;
  const bucket = n < 0 ? half : 0;
  n = Math.abs(n);
  if (n < maxExact) return bucket + n;
  const f = Math.fround;
  const ratio = f(f(Math.log(f(n / maxExact))) / f(Math.log(kMaxDistance / maxExact)));
  const large = maxExact + Math.trunc(f(ratio * (half - maxExact)));
  return bucket + Math.min(large, half - 1);
}

/**
 * MPNet's relative position bias, `[1, heads, seq, seq]`: for query i and key j, the learned per-head value of the
 * bucket of j - i (encoder.relative_attention_bias). It depends on the distance alone, so the buckets of every
 * distance the position table allows are a constant and the graph gathers the `seq x seq` of this batch from them.
 * Every layer adds the same bias to its attention scores.
 */
export function addRelativePositionBias(g: GraphBuilder, weights: BertWeights): string {
  const { maxPositions, numHeads } = weights.config;
  const buckets = Array.from({ length: 2 * maxPositions - 1 }, (_, t) => mpnetRelativeBucket(t - (maxPositions - 1)));
  const byDistance = g.int64s('relative_position_buckets', buckets);
  const [rows] = weights.shape('encoder.relative_attention_bias.weight');
  const table = g.constant(
    'encoder.relative_attention_bias.weight',
    OnnxType.FLOAT,
    [rows, numHeads],
    weights.tensor('encoder.relative_attention_bias.weight'),
  );
  const seqLength = g.op('Squeeze', [
    g.op('Shape', ['input_ids'], { start: { int: 1 }, end: { int: 2 } }),
    g.int64s('bias_squeeze_axes', [0]),
  ]);
  const positions = g.op('Range', [g.int64s('bias_range_start', [0], []), seqLength, g.int64s('bias_range_step', [1], [])]);
  // (key - query) + maxPositions - 1 indexes the distance table: [seq (query), seq (key)].
  const relative = g.op('Sub', [
    g.op('Unsqueeze', [positions, g.int64s('bias_key_axis', [0])]),
    g.op('Unsqueeze', [positions, g.int64s('bias_query_axis', [1])]),
  ]);
  const index = g.op('Add', [relative, g.int64s('bias_distance_offset', [maxPositions - 1], [])]);
  const bucket = g.op('Gather', [byDistance, index], { axis: { int: 0 } });
  const values = g.op('Gather', [table, bucket], { axis: { int: 0 } }); // [seq, seq, heads]
  return g.op('Unsqueeze', [g.op('Transpose', [values], { perm: { ints: [2, 0, 1] } }), g.int64s('bias_batch_axis', [0])]);
}
