// Synthetic LoRA adapters for the format, encoder and hub tests: PEFT tensor names, seeded values.
import { kLoraModules, loraTensorName } from '../../src/model/adapter.js';
import type { AdapterTensor, LoraModule } from '../../src/model/adapter.js';
import { seededRandom } from '../../src/random.js';

export interface AdapterShape {
  hidden: number;
  intermediate: number;
  layers: number;
}

export const kSmallShape: AdapterShape = Object.freeze({ hidden: 384, intermediate: 1536, layers: 6 });

/** A's and B's for every layer and module, uniform in +-scaleA / +-scaleB (scaleB 0: the adapter changes nothing). */
export function randomAdapter(
  shape: AdapterShape,
  options: { rank?: number; modules?: readonly LoraModule[]; scaleA?: number; scaleB?: number; seed?: number } = {},
): AdapterTensor[] {
  const { rank = 8, modules = kLoraModules, scaleA = 0.05, scaleB = 0.05, seed = 11 } = options;
  const random = seededRandom(seed);
  const values = (n: number, scale: number) => Float32Array.from({ length: n }, () => (random() * 2 - 1) * scale);
  const out: AdapterTensor[] = [];
  for (let layer = 0; layer < shape.layers; layer++) {
    for (const module of modules) {
      const inF = module === 'output.dense' ? shape.intermediate : shape.hidden;
      const outF = module === 'intermediate.dense' ? shape.intermediate : shape.hidden;
      out.push({ name: loraTensorName(layer, module, 'A'), shape: [rank, inF], data: values(rank * inF, scaleA) });
      out.push({ name: loraTensorName(layer, module, 'B'), shape: [outF, rank], data: values(outF * rank, scaleB) });
    }
  }
  return out;
}
