// Multi-class and multi-label models from the hub in transformers.js: `logits` with a column per
// label, id2label for every label, and problem_type telling it softmax (multi-class) from a sigmoid
// per label (multi-label). Every label's score must match Classifier.predict within 1e-3.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { env, pipeline } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSites } from '../../fixtures/corpora.js';
import { splitClasses } from '../../fixtures/draw.js';
import { DirectoryHub } from '../../src/model/hub.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import type { TrainRequest } from '../../src/contract/train-request.js';
import { train } from '../../src/train/train.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-transformers-multi-'));
  // fp32, not the default 'auto': the exported ONNX model matching our predictions is an fp32 statement.
  configurePool({ precision: 'fp32' });
});
afterAll(async () => {
  await closePool();
  await rm(root, { recursive: true, force: true });
});

// Which site a UCI sentence came from, 8 of each; multi-label: the same sentences tagged with
// 'film' (IMDB) and 'review-site' (Yelp), so an Amazon sentence has no label.
const sites = uciSites().map((row) => ({ text: row.text, label: row.label as string }));
const { trainSet, testSet } = splitClasses(sites, 3, 8);
const tags: Record<string, string[]> = { imdb: ['film'], yelp: ['review-site'], amazon: [] };
const texts = Array.from({ length: 60 }, (_, i) => testSet[i * 45].text);

const models: { name: string; id: string; problem: string; request: TrainRequest }[] = [
  {
    name: 'multi-class',
    id: 'acme/svc-small-0000aaaa1111',
    problem: 'single_label_classification',
    request: { model: 'svc-small', task_type: 'multi-class-classification', finetune: false, examples: trainSet },
  },
  {
    name: 'multi-label',
    id: 'acme/svc-small-2222bbbb3333',
    problem: 'multi_label_classification',
    request: {
      model: 'svc-small',
      task_type: 'multi-label-classification',
      finetune: false,
      examples: trainSet.map((row) => ({ text: row.text, labels: tags[row.label] })),
    },
  },
];

describe('a multi-class or multi-label model directory in transformers.js', () => {
  it.each(models)('gives every label the score Classifier.predict gives, within 1e-3 ($name)', async ({ id, problem, request }) => {
    const hub = new DirectoryHub(root);
    const classifier = await train(request, { hub, id });
    const labels = classifier.labels;
    const config = JSON.parse(await readFile(await hub.file(id, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      architectures: ['BertForSequenceClassification'],
      problem_type: problem,
      num_labels: labels.length,
      id2label: Object.fromEntries(labels.map((label, k) => [String(k), label])),
      label2id: Object.fromEntries(labels.map((label, k) => [label, k])),
    });

    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = root;
    const classify = await pipeline('text-classification', id, { dtype: 'fp32' });
    const ours = (await classifier.predict(texts)) as { scores: Record<string, number> }[];
    let largest = 0;
    for (let start = 0; start < texts.length; start += 20) {
      const outputs = (await classify(texts.slice(start, start + 20), { top_k: null })) as { label: string; score: number }[][];
      outputs.forEach((scored, k) => {
        expect(scored.map((entry) => entry.label).sort()).toEqual([...labels].sort());
        for (const { label, score } of scored) largest = Math.max(largest, Math.abs(score - ours[start + k].scores[label]));
      });
    }
    expect(largest).toBeLessThan(1e-3);
    await classify.dispose();
    classifier.dispose();
  });
});
