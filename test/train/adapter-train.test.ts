// Training with finetune: { method: 'adapter' }: the trainer's LoRA tensors become the model's PEFT adapter files, the
// head is fitted on the base + saved adapter's embeddings, and the published directory is the adapter, the head and
// the manifest: under a megabyte, loading and predicting like the classifier train() returned.
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { Classifier, Encoder } from '../../src/index.js';
import { DirectoryHub } from '../../src/model/hub.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';
import { kAdapterFolderFiles } from '../_support/adapter-files.js';

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive review',
}));
const heldOut = imdb.slice(200, 210).map((r) => r.text);
let root: string;

beforeAll(async () => {
  // fp32, not the default 'auto': the saved adapter is checked by the classifier's predictions (the pool's low-rank
  // path) equalling the head on the encoder with the adapter merged in, to 5 decimals. Only fp32 rounds the two alike
  // (bf16 rounds W + BA in the merged copy, W alone in the pool's path), and the 5 steps of rank 4 below move these
  // probabilities by 1.4e-3 at most, about bf16's bound of 1e-3, which could not tell a saved adapter from a lost one.
  configurePool({ precision: 'fp32' });
  root = await mkdtemp(join(tmpdir(), 'svc-adapter-train-'));
});
afterAll(async () => {
  await closePool();
  await rm(root, { recursive: true, force: true });
});

describe("train() with finetune: { method: 'adapter' }", () => {
  it('publishes a PEFT adapter, the head and the manifest, and predicts as the head on base + adapter', async () => {
    const hub = new DirectoryHub(root);
    const id = 'acme/svc-small-adapter0000a';
    const stages = new Set<string>();
    const classifier = await train(
      { model: 'svc-small', task_type: 'binary-classification', examples, finetune: { method: 'adapter', rank: 4 }, num_iterations: 2 },
      { hub, id, threads: 2, onProgress: (p) => stages.add(p.stage) },
    );
    expect([...stages]).toEqual(['finetune', 'embed', 'fit', 'save']);
    expect(classifier.body).toBe('adapter');
    const { manifest } = classifier;
    expect(manifest).toMatchObject({
      body: 'adapter',
      adapter_file: 'adapter_model.safetensors',
      adapter_config_file: 'adapter_config.json',
      base_model: 'svc-small',
    });
    expect(manifest.training.finetune).toMatchObject({ method: 'adapter', rank: 4, lora_alpha: 8, learning_rate: 3e-4, steps: 5 });

    const dir = hub.pathOf(id);
    expect((await readdir(dir)).sort()).toEqual([...kAdapterFolderFiles]);
    let bytes = 0;
    for (const name of await readdir(dir)) bytes += (await stat(join(dir, name))).size;
    expect(bytes).toBeLessThan(1_000_000);
    const config = JSON.parse(await readFile(join(dir, 'adapter_config.json'), 'utf8'));
    expect(config).toMatchObject({
      peft_type: 'LORA',
      r: 4,
      lora_alpha: 8,
      base_model_name_or_path: 'sentence-transformers/all-MiniLM-L6-v2',
    });

    const ours = await classifier.predict(heldOut);
    const loaded = await Classifier.load(id, { hub });
    expect((await loaded.predict(heldOut)).map((p) => p.probability)).toEqual(ours.map((p) => p.probability));
    loaded.dispose();

    // The head on the encoder with the saved adapter merged in gives the same probabilities (fp32, see beforeAll), and
    // at the default precision ('auto': bf16 where it measured faster) within bf16's bound of them.
    const { weights, bias } = classifier.head;
    const probabilitiesOn = (embeddings: Float32Array) =>
      heldOut.map((_, i) => {
        let z = bias;
        for (let j = 0; j < 384; j++) z += weights[j] * embeddings[i * 384 + j];
        return 1 / (1 + Math.exp(-z));
      });
    const embedWith = (options: { precision?: 'fp32' }) => {
      const encoder = Encoder.fromPretrained('svc-small', { adapter: dir, threads: 1, ...options });
      try {
        return encoder.embedSync(heldOut);
      } finally {
        encoder.dispose();
      }
    };
    const merged = probabilitiesOn(embedWith({ precision: 'fp32' }));
    const mergedDefault = probabilitiesOn(embedWith({}));
    heldOut.forEach((_, i) => {
      expect(ours[i].probability).toBeCloseTo(merged[i], 5);
      expect(Math.abs(mergedDefault[i] - merged[i])).toBeLessThan(1e-3);
    });
    classifier.dispose();
  });
});
