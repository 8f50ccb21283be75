// Synthetic LoRA adapters for the format, encoder and hub tests: PEFT tensor names, seeded values.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { kAdapterConfigFile, kAdapterFile, kLoraModules, loraTensorName, writeAdapter } from '../../src/model/adapter.js';
import type { AdapterTensor, LoraModule } from '../../src/model/adapter.js';
import { resolveBaseModel } from '../../src/model/base-models.js';
import type { Head } from '../../src/model/directory.js';
import { kHeadFile, kManifestFormatVersion } from '../../src/contract/manifest.js';
import type { Manifest } from '../../src/contract/manifest.js';
import { parseBertConfig } from '../../src/model/onnx/bert-weights.js';
import { writeModelDir } from '../../src/model/write.js';
import { seededRandom } from '../../src/random.js';
import type { TaskType } from '../../src/contract/train-request.js';

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

/** A binary, multi-class or multi-label adapter model directory with a synthetic adapter and head, written by the library. */
export async function writeAdapterModel(
  dir: string,
  options: { taskType?: TaskType; seed?: number; scaleB?: number; rank?: number } = {},
): Promise<{ manifest: Manifest; head: Head }> {
  const { taskType = 'binary-classification', seed = 21, scaleB = 0.05, rank = 4 } = options;
  const base = resolveBaseModel('svc-small');
  const config = parseBertConfig(JSON.parse(readFileSync(base.configFile, 'utf8')) as Record<string, unknown>);
  const scratch = mkdtempSync(join(tmpdir(), 'svc-adapter-src-'));
  try {
    await writeAdapter(
      scratch,
      randomAdapter(kSmallShape, { rank, seed, scaleB }),
      { rank, alpha: 2 * rank, modules: kLoraModules },
      base,
      config,
    );
    const random = seededRandom(seed + 1);
    const labels = taskType === 'binary-classification' ? null : ['film', 'food', 'site'];
    const rows = labels?.length ?? 1;
    const weights = Float64Array.from({ length: rows * 384 }, () => (random() - 0.5) * 8);
    const head: Head = labels
      ? Object.freeze({
          kind: taskType === 'multi-class-classification' ? ('softmax' as const) : ('one-vs-rest' as const),
          weights,
          biases: Float64Array.from(labels, () => random() - 0.5),
        })
      : Object.freeze({ weights, bias: random() - 0.5 });
    const manifest: Manifest = {
      format_version: kManifestFormatVersion,
      id: 'svc-small-adapter00001',
      created_at: 1763769600,
      task_type: taskType,
      base_model: 'svc-small',
      ...(labels ? { labels } : { label_text: 'positive review' }),
      body: 'adapter',
      adapter_file: kAdapterFile,
      adapter_config_file: kAdapterConfigFile,
      head_file: kHeadFile,
      training: { method: 'setfit', C: 1, solver: 'newton-cholesky', iterations: 7, max_length: 256, examples: 20 },
      metrics: { train_accuracy: 1, train_seconds: 1 },
      library_version: 'test',
    };
    await writeModelDir(dir, manifest, head, join(scratch, kAdapterFile));
    return { manifest, head };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
