// Base + adapter as one full encoder: what transformers.js, which cannot apply adapters, loads from the hub.
// The native encoder merges the same way at load (native/core/encoder/adapter.cc); this copy exists because the
// ONNX export reads weights in TypeScript.
import { writeFile } from 'node:fs/promises';

import type { Adapter } from './adapter.js';
import type { BaseModel } from './base-models.js';
import { encodeSafetensors, SafetensorsFile } from './safetensors.js';
import type { TensorToWrite } from './safetensors.js';

/**
 * W + scale B A for every adapted linear layer, in place on `w` (out x in, row-major, fp32), summed in fp32 as the
 * native encoder sums it.
 */
export function mergeLora(
  w: Float32Array,
  a: Float32Array,
  b: Float32Array,
  rank: number,
  out: number,
  inFeatures: number,
  scale: number,
): void {
  const row = new Float32Array(inFeatures);
  for (let o = 0; o < out; o++) {
    row.fill(0);
    for (let r = 0; r < rank; r++) {
      const coefficient = b[o * rank + r];
      const ar = r * inFeatures;
      for (let k = 0; k < inFeatures; k++) row[k] += coefficient * a[ar + k];
    }
    const wo = o * inFeatures;
    for (let k = 0; k < inFeatures; k++) w[wo + k] += scale * row[k];
  }
}

/**
 * The base's float tensors with the adapter merged into its linear layers, as fp32 under the base checkpoint's
 * names (prefix included); non-float tensors (`position_ids`) are left out, as the encoders never read them.
 */
export function mergedTensors(baseModel: Pick<BaseModel, 'weightsFile'>, adapter: Adapter): TensorToWrite[] {
  const file = SafetensorsFile.open(baseModel.weightsFile);
  const out: TensorToWrite[] = [];
  for (const name of file.names) {
    const info = file.info(name);
    if (info.dtype !== 'F32' && info.dtype !== 'F16' && info.dtype !== 'BF16') continue;
    const data = file.float32(name);
    const linear = /(encoder\.layer\.\d+\..+)\.weight$/.exec(name)?.[1];
    const pair = linear === undefined ? undefined : adapter.pairs.get(linear);
    if (pair) mergeLora(data, pair.a, pair.b, adapter.settings.rank, pair.out, pair.in, adapter.settings.scale);
    out.push({ name, shape: info.shape, data, dtype: 'F32' });
  }
  return out;
}

/** Writes {@link mergedTensors} as a safetensors file (about 90 MB for svc-small). */
export async function writeMergedWeights(baseModel: Pick<BaseModel, 'weightsFile'>, adapter: Adapter, outFile: string): Promise<void> {
  await writeFile(outFile, encodeSafetensors(mergedTensors(baseModel, adapter), { format: 'pt' }));
}
