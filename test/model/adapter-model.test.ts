// An adapter model through the library: its directory (adapter, head, manifest, no encoder copy), loading with the
// adapter checked, and predictions equal to the head on the base + adapter encoder's embeddings.
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Classifier, Encoder } from '../../src/index.js';
import { loraTensorName } from '../../src/model/adapter.js';
import { encodeSafetensors, SafetensorsFile } from '../../src/model/safetensors.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { writeAdapterModel } from '../_support/adapter.js';

const kTexts = ['A wonderful, moving film.', 'The battery died after a week.', 'Two hours I will never get back'];
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-adapter-model-'));
  // Predictions equal to the head on the merged encoder's embeddings to 1e-5: an fp32 statement. In bf16 the merged
  // copy rounds W + BA, the pool's base-plus-low-rank path rounds W alone, and this random adapter is large.
  configurePool({ precision: 'fp32' });
});
afterAll(async () => {
  await closePool();
  rmSync(root, { recursive: true, force: true });
});

function dirBytes(dir: string): number {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((sum, e) => sum + statSync(join(e.parentPath, e.name)).size, 0);
}

describe('an adapter model', () => {
  it('is a directory of under a megabyte with no encoder of its own', async () => {
    const dir = join(root, 'binary');
    await writeAdapterModel(dir, { rank: 8 });
    expect(readdirSync(dir).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors', 'head.json', 'manifest.json']);
    expect(dirBytes(dir)).toBeLessThan(1_000_000);
  });

  it('predicts what its head gives on the base + adapter embeddings', async () => {
    const dir = join(root, 'predict');
    const { head } = await writeAdapterModel(dir, { seed: 5 });
    const classifier = await Classifier.load(dir);
    expect(classifier.body).toBe('adapter');
    const predictions = await classifier.predict(kTexts);
    const encoder = Encoder.fromPretrained('svc-small', { adapter: dir, threads: 1, precision: 'fp32' });
    const base = Encoder.fromPretrained('svc-small', { threads: 1, precision: 'fp32' });
    const embeddings = encoder.embedSync(kTexts);
    const baseEmbeddings = base.embedSync(kTexts);
    encoder.dispose();
    base.dispose();
    const w = (head as { weights: Float64Array; bias: number }).weights;
    const b = (head as { weights: Float64Array; bias: number }).bias;
    const probability = (e: Float32Array, i: number) => {
      let z = b;
      for (let j = 0; j < 384; j++) z += w[j] * e[i * 384 + j];
      return 1 / (1 + Math.exp(-z));
    };
    kTexts.forEach((_, i) => {
      expect(predictions[i].probability).toBeCloseTo(probability(embeddings, i), 5);
      // ... and not what the base encoder alone would give.
      expect(Math.abs(predictions[i].probability - probability(baseEmbeddings, i))).toBeGreaterThan(1e-3);
    });

    // Saved again elsewhere without the transformers.js files (test/model/transformers-saved-adapter.test.ts has
    // them): the same files, the same predictions.
    const copy = join(root, 'copy');
    await classifier.save(copy, { transformersJs: false });
    classifier.dispose();
    expect(readdirSync(copy).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors', 'head.json', 'manifest.json']);
    const again = await Classifier.load(copy);
    expect((await again.predict(kTexts)).map((p) => p.probability)).toEqual(predictions.map((p) => p.probability));
    again.dispose();
  });

  it('fails to load when its adapter is damaged, naming the tensor', async () => {
    const dir = join(root, 'damaged');
    await writeAdapterModel(dir);
    const file = join(dir, 'adapter_model.safetensors');
    const stored = SafetensorsFile.open(file);
    const bad = loraTensorName(4, 'output.dense', 'B');
    const tensors = stored.names.map((name) => {
      const data = stored.float32(name);
      if (name === bad) data[3] = NaN;
      return { name, shape: stored.info(name).shape, data, dtype: 'F16' as const };
    });
    writeFileSync(file, encodeSafetensors(tensors));
    await expect(Classifier.load(dir)).rejects.toThrow(`${file}: tensor '${bad}' holds a non-finite value at element 3`);
  });

  it('fails to load when its adapter lacks a tensor its config adapts, naming it (checked in a pool worker)', async () => {
    const dir = join(root, 'lacking');
    await writeAdapterModel(dir);
    const file = join(dir, 'adapter_model.safetensors');
    const stored = SafetensorsFile.open(file);
    const gone = loraTensorName(2, 'attention.self.value', 'A');
    const tensors = stored.names
      .filter((name) => name !== gone)
      .map((name) => ({ name, shape: stored.info(name).shape, data: stored.float32(name), dtype: 'F16' as const }));
    writeFileSync(file, encodeSafetensors(tensors));
    await expect(Classifier.load(dir)).rejects.toMatchObject({
      code: 'invalid_request',
      message: `${file}: tensor '${gone}' is missing (adapter_config.json adapts this module)`,
    });
    rmSync(file);
    await expect(Classifier.load(dir)).rejects.toMatchObject({ code: 'not_found' });
  });
});
