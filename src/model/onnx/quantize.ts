import { OnnxType } from './graph.js';
import { type LinearEmitter, transposeMatrix } from './bert-graph.js';

/** Symmetric int8 range: -127..127, so that a weight and its negation quantize alike. */
const kInt8Max = 127;

/** A `[inFeatures, outFeatures]` weight quantized per output column: `w ≈ values · scales[col]`. */
export interface QuantizedWeight {
  /** Row-major `[inFeatures, outFeatures]`. */
  readonly values: Int8Array;
  /** One scale per output feature. */
  readonly scales: Float32Array;
}

/**
 * Quantizes a PyTorch Linear weight `[outFeatures, inFeatures]` to int8, symmetric, one scale per
 * output channel (what onnxruntime's `quantize_dynamic(per_channel=True, weight_type=QInt8)`
 * does), laid out `[inFeatures, outFeatures]` for MatMul.
 *
 * @example
 * ```ts
 * quantizePerOutputChannel(new Float32Array([0.5, -1, 2, 0.25]), 2, 2);
 * // { values: Int8Array [64, 127, -127, 16], scales: Float32Array [0.007874016, 0.015748031] }
 * ```
 */
export function quantizePerOutputChannel(weight: Float32Array, outFeatures: number, inFeatures: number): QuantizedWeight {
  const transposed = transposeMatrix(weight, outFeatures, inFeatures);
  const scales = new Float32Array(outFeatures);
  for (let o = 0; o < outFeatures; o++) {
    let maxAbs = 0;
    for (let i = 0; i < inFeatures; i++) maxAbs = Math.max(maxAbs, Math.abs(weight[o * inFeatures + i]));
    scales[o] = maxAbs > 0 ? maxAbs / kInt8Max : 1;
  }
  const values = new Int8Array(transposed.length);
  for (let i = 0; i < inFeatures; i++) {
    for (let o = 0; o < outFeatures; o++) {
      const q = Math.round(transposed[i * outFeatures + o] / scales[o]);
      values[i * outFeatures + o] = Math.max(-kInt8Max, Math.min(kInt8Max, q));
    }
  }
  return { values, scales };
}

/**
 * int8 Linear in the node pattern `quantize_dynamic` writes: DynamicQuantizeLinear on the
 * activation (uint8, per tensor), MatMulInteger against the int8 weight, Cast to fp32, Mul by
 * activation scale × weight scales, Add bias. onnxruntime fuses this into its
 * DynamicQuantizeMatMul kernel when it loads the graph.
 */
export const int8Linear: LinearEmitter = (g, x, weight, bias, outFeatures, inFeatures, name) => {
  const { values, scales } = quantizePerOutputChannel(weight, outFeatures, inFeatures);
  const wq = g.constant(`${name}.weight_quantized`, OnnxType.INT8, [inFeatures, outFeatures], values);
  const wScale = g.constant(`${name}.weight_scale`, OnnxType.FLOAT, [outFeatures], scales);
  const wZero = g.constant(`${name}.weight_zero_point`, OnnxType.INT8, [outFeatures], new Int8Array(outFeatures));
  const b = g.constant(`${name}.bias`, OnnxType.FLOAT, [outFeatures], bias);
  const [xq, xScale, xZero] = g.opN('DynamicQuantizeLinear', [x], 3);
  const product = g.op('MatMulInteger', [xq, wq, xZero, wZero]);
  const scale = g.op('Mul', [xScale, wScale]);
  const y = g.op('Mul', [g.op('Cast', [product], { to: { int: OnnxType.FLOAT } }), scale]);
  return g.op('Add', [y, b]);
};
