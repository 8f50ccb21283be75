// A saved adapter model (the default fine-tune) in transformers.js, from the folder `Classifier.save(dir)` wrote:
// the adapter for the library beside config.json, the tokenizer files and onnx/model.onnx of base + adapter merged
// for transformers.js. Both read the same folder and give the same probabilities; the library still serves it as an
// adapter. The hub's copy of the same model is test/model/transformers-adapter.test.ts.
import { readdirSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

import { env, pipeline } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { Classifier } from '../../src/predict/classifier.js';
import { train } from '../../src/train/train.js';
import { kAdapterFolderFiles } from '../_support/adapter-files.js';
import { writeAdapterModel } from '../_support/adapter.js';
import { kLevelSlowdown } from '../_support/level.js';

const kAdapterOnly = kAdapterFolderFiles;

const { trainSet, testSet } = split(uciSentences('imdb'), 1);
const texts = testSet.slice(0, 50).map((row) => row.text);

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-saved-adapter-'));
  // fp32, not the default 'auto': the exported ONNX model matching our predictions is an fp32 statement.
  configurePool({ precision: 'fp32' });
});
afterAll(async () => {
  await closePool();
  await rm(root, { recursive: true, force: true });
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

async function transformersScores(dir: string): Promise<number[]> {
  const saved = { ...env };
  try {
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = dirname(dir);
    const classify = await pipeline('text-classification', basename(dir), { dtype: 'fp32' });
    const outputs = (await classify(texts, { top_k: null })) as { label: string; score: number }[][];
    await classify.dispose();
    return outputs.map((labels) => labels.find((entry) => entry.label === 'positive')?.score ?? NaN);
  } finally {
    Object.assign(env, saved);
  }
}

describe('a saved adapter model in transformers.js', () => {
  it(
    'loads from the folder save(dir) wrote with our probabilities within 1e-3, and back in the library as an adapter',
    async () => {
      // The default fine-tune, no method named: an adapter. 2 pair rounds keep training short.
      const classifier = await train({
        model: 'svc-small',
        task_type: 'binary-classification',
        num_iterations: 2,
        examples: trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' })),
      });
      expect(classifier.body).toBe('adapter');
      const dir = join(root, 'positive');
      await classifier.save(dir);
      expect(filesUnder(dir)).toEqual(
        [...kAdapterOnly, 'config.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json'].sort(),
      );
      // The manifest vouches for the transformers.js files as for the others.
      const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as { files: Record<string, string> };
      expect(Object.keys(manifest.files)).toEqual(expect.arrayContaining(['config.json', 'onnx/model.onnx', 'adapter_model.safetensors']));
      const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
      expect(config).toMatchObject({ architectures: ['BertForSequenceClassification'], id2label: { 0: 'false', 1: 'positive' } });

      const ours = (await classifier.predict(texts)).map((p) => p.probability);
      const theirs = await transformersScores(dir);
      const largest = Math.max(...ours.map((p, i) => Math.abs(theirs[i] - p)));
      expect(largest).toBeLessThan(1e-3);

      // The library reads the adapter, not the merged graph: the same model, the same probabilities.
      const again = await Classifier.load(dir);
      expect(again.body).toBe('adapter');
      expect((await again.predict(texts)).map((p) => p.probability)).toEqual(ours);
      again.dispose();

      // Without the transformers.js files: what the library reads, under a megabyte.
      const small = join(root, 'positive-small');
      await classifier.save(small, { transformersJs: false });
      expect(filesUnder(small)).toEqual(kAdapterOnly);
      expect(filesUnder(small).reduce((sum, name) => sum + statSync(join(small, name)).size, 0)).toBeLessThan(1_000_000);
      const adapterOnly = await Classifier.load(small);
      expect((await adapterOnly.predict(texts)).map((p) => p.probability)).toEqual(ours);
      adapterOnly.dispose();
      classifier.dispose();
    },
    // Training, the merged ONNX build and transformers.js' load: seconds each on two busy cores.
    240_000 * kLevelSlowdown,
  );

  it('refuses a transformersJs that is not a boolean', async () => {
    const dir = join(root, 'random');
    await writeAdapterModel(dir);
    const classifier = await Classifier.load(dir);
    await expect(classifier.save(join(root, 'bad'), { transformersJs: 'yes' as never })).rejects.toThrow(
      new TypeError('options.transformersJs must be a boolean'),
    );
    classifier.dispose();
  });
});
