// The native encoder with a LoRA adapter merged at load, against the same merge done in TypeScript and written as
// a full safetensors file: the two must embed alike in every precision, and an adapter whose B is zero must change
// nothing at all.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { allUciTexts } from '../../fixtures/corpora.js';
import { Encoder } from '../../src/index.js';
import { loadedWeightSets } from '../../src/native/encoder.js';
import { kLoraModules, readAdapter, writeAdapter } from '../../src/model/adapter.js';
import { writeMergedWeights } from '../../src/model/adapter-merge.js';
import { resolveBaseModel } from '../../src/model/base-models.js';
import { parseBertConfig } from '../../src/model/onnx/bert-weights.js';
import { kSmallShape, randomAdapter } from '../_support/adapter.js';

const base = resolveBaseModel('svc-small');
const config = parseBertConfig(JSON.parse(readFileSync(base.configFile, 'utf8')) as Record<string, unknown>);
const kTexts = allUciTexts().filter((_, i) => i % 150 === 0);
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-adapter-encoder-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function embed(model: string, options: { adapter?: string; precision?: 'fp32' | 'int8' | 'bf16' } = {}): Float32Array {
  const encoder = Encoder.fromPretrained(model, { threads: 2, ...options });
  try {
    return encoder.embedSync(kTexts);
  } finally {
    encoder.dispose();
  }
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

function lowestCosine(a: Float32Array, b: Float32Array, dim: number): number {
  let lowest = 1;
  for (let r = 0; r < a.length / dim; r++) {
    let dot = 0;
    let na = 0;
    let nb = 0;
    for (let j = r * dim; j < (r + 1) * dim; j++) {
      dot += a[j] * b[j];
      na += a[j] * a[j];
      nb += b[j] * b[j];
    }
    lowest = Math.min(lowest, dot / Math.sqrt(na * nb));
  }
  return lowest;
}

describe('Encoder with a LoRA adapter', () => {
  it('embeds exactly as the base when B is zero', async () => {
    const dir = join(root, 'zero');
    await writeAdapter(dir, randomAdapter(kSmallShape, { scaleB: 0 }), { rank: 8, alpha: 16, modules: kLoraModules }, base, config);
    expect(embed('svc-small', { adapter: dir })).toEqual(embed('svc-small'));
  });

  it('embeds as the weights merged in TypeScript, in fp32, int8 and bf16', async () => {
    const dir = join(root, 'random');
    const modules = ['attention.self.query', 'attention.self.value', 'intermediate.dense', 'output.dense'] as const;
    await writeAdapter(dir, randomAdapter(kSmallShape, { rank: 4, modules, seed: 3 }), { rank: 4, alpha: 8, modules }, base, config);
    const adapter = await readAdapter(join(dir, 'adapter_config.json'), join(dir, 'adapter_model.safetensors'), config);
    expect(adapter.settings.scale).toBe(2);
    const merged = join(root, 'merged');
    mkdirSync(merged);
    copyFileSync(base.configFile, join(merged, 'config.json'));
    copyFileSync(base.tokenizerFile, join(merged, 'tokenizer.json'));
    await writeMergedWeights(base, adapter, join(merged, 'model.safetensors'));

    const viaAdapter = embed('svc-small', { adapter: join(dir, 'adapter_model.safetensors') });
    const viaMerged = embed(merged);
    const baseline = embed('svc-small');
    expect(maxAbsDiff(viaAdapter, viaMerged)).toBeLessThan(1e-5);
    expect(lowestCosine(viaAdapter, viaMerged, 384)).toBeGreaterThan(1 - 1e-5);
    // The adapter does change the embeddings (else the comparison above would prove nothing).
    expect(maxAbsDiff(viaAdapter, baseline)).toBeGreaterThan(1e-2);

    // Merged before quantizing (int8) or packing in bf16 (fp32 on CPUs without AMX): the same packed weights.
    for (const precision of ['int8', 'bf16'] as const) {
      const viaAdapterP = embed('svc-small', { adapter: dir, precision });
      const viaMergedP = embed(merged, { precision });
      expect(lowestCosine(viaAdapterP, viaMergedP, 384)).toBeGreaterThan(1 - 1e-5);
    }
  });

  it('shares one merged copy between the encoders of one adapter', async () => {
    const dir = join(root, 'shared');
    const modules = ['attention.self.query'] as const;
    await writeAdapter(dir, randomAdapter(kSmallShape, { rank: 2, modules, seed: 5 }), { rank: 2, alpha: 4, modules }, base, config);
    const before = loadedWeightSets();
    const a = Encoder.fromPretrained('svc-small', { adapter: dir, threads: 1 });
    const b = Encoder.fromPretrained('svc-small', { adapter: dir, threads: 1 });
    expect(loadedWeightSets()).toBe(before + 1);
    a.dispose();
    b.dispose();
    expect(loadedWeightSets()).toBe(before);
  });
});
