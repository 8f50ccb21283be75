import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { env, pipeline } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { DirectoryHub } from '../../src/model/hub.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-transformers-'));
  // fp32, not the default 'auto': the exported ONNX model matching our predictions is an fp32 statement.
  configurePool({ precision: 'fp32' });
});
afterAll(async () => {
  await closePool();
  await rm(root, { recursive: true, force: true });
});

const { trainSet, testSet } = split(uciSentences('imdb'), 1);

// A frozen body exports the base encoder; a fully fine-tuned one (4 pair rounds here) its own weights. Adapter models
// (the default fine-tune) are test/model/transformers-adapter.test.ts.
const bodies = [
  { body: 'frozen', fields: { finetune: false }, id: 'acme/svc-small-00112233aabb', weights: [] as string[] },
  {
    body: 'finetuned',
    fields: { finetune: { method: 'full' as const }, num_iterations: 4 },
    id: 'acme/svc-small-44556677ccdd',
    weights: ['model.fp16.safetensors'],
  },
];

describe('a saved model directory in transformers.js', () => {
  it.each(bodies)(
    'loads with pipeline("text-classification") and gives our probabilities within 1e-3 on 200 texts ($body body)',
    async ({ fields, id, weights }) => {
      const hub = new DirectoryHub(root);
      const classifier = await train(
        {
          model: 'svc-small',
          task_type: 'binary-classification' as const,
          examples: trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' })),
          ...fields,
        },
        { hub, id },
      );
      expect((await hub.list(id)).map((f) => f.name)).toEqual(
        [
          'config.json',
          'example_embeddings.safetensors',
          'examples.json',
          'head.json',
          'manifest.json',
          'onnx/model.onnx',
          'tokenizer.json',
          'tokenizer_config.json',
          ...weights,
        ].sort(),
      );
      const config = JSON.parse(await readFile(await hub.file(id, 'config.json'), 'utf8'));
      expect(config).toMatchObject({
        architectures: ['BertForSequenceClassification'],
        id2label: { 0: 'false', 1: 'positive' },
        label2id: { false: 0, positive: 1 },
      });
      const tokenizerConfig = JSON.parse(await readFile(await hub.file(id, 'tokenizer_config.json'), 'utf8'));
      expect(tokenizerConfig.model_max_length).toBe(256);

      // The hub's layout is the Hugging Face one: <root>/<org>/<model_id>.
      env.allowRemoteModels = false;
      env.allowLocalModels = true;
      env.localModelPath = root;
      const classify = await pipeline('text-classification', id, { dtype: 'fp32' });
      const texts = testSet.slice(0, 200).map((row) => row.text);
      const ours = await classifier.predict(texts);
      let largest = 0;
      for (let start = 0; start < texts.length; start += 25) {
        const outputs = (await classify(texts.slice(start, start + 25), { top_k: null })) as {
          label: string;
          score: number;
        }[][];
        outputs.forEach((labels, k) => {
          const positive = labels.find((entry) => entry.label === 'positive');
          expect(positive).toBeDefined();
          largest = Math.max(largest, Math.abs((positive?.score ?? NaN) - ours[start + k].probability));
        });
      }
      expect(largest).toBeLessThan(1e-3);
      await classify.dispose();
      classifier.dispose();
    },
  );
});
