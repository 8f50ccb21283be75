import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { env, pipeline } from '@huggingface/transformers';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { allUciTexts, emailBodies } from '../../fixtures/corpora.js';
import { writeTransformersJsModelDir } from '../../src/model/onnx/index.js';
import { createSession, maxAbsDiff, runBatches, tokenize } from './_ort.js';

let root: string;
let encoderDir: string;
let classifierDir: string;
let embeddings: Float32Array[];

// The classifier is laid out as a hub stores it, <root>/<org>/<model_id>, and loaded by id.
const kHubId = 'acme/svc-small-0123456789ab';

// A fixed, spread-out head so that the 50 texts land on both sides of 0.5.
const head = { weights: Float32Array.from({ length: 384 }, (_, i) => 6 * Math.sin(i * 1.7)), bias: 0.1 };
// 49 sentences and one e-mail longer than 256 tokens, so truncation is compared too.
const texts = [
  ...allUciTexts()
    .filter((_, i) => i % 60 === 0)
    .slice(0, 49),
  emailBodies(1, 4000)[0],
];

beforeAll(async () => {
  env.allowRemoteModels = false;
  root = await mkdtemp(join(tmpdir(), 'svc-onnx-dir-'));
  encoderDir = join(root, 'encoder');
  classifierDir = join(root, kHubId);
  await writeTransformersJsModelDir(encoderDir, { baseModel: 'svc-small', task: 'feature-extraction' });
  await writeTransformersJsModelDir(classifierDir, { baseModel: 'svc-small', task: 'text-classification', labelText: 'positive', head });
  const session = await createSession(new Uint8Array(await readFile(join(encoderDir, 'onnx/model.onnx'))));
  const rows = await tokenize(texts);
  expect(rows[49].length).toBe(256);
  embeddings = [
    ...(await runBatches(session, rows.slice(0, 49), 'sentence_embedding', 49)),
    ...(await runBatches(session, rows.slice(49), 'sentence_embedding', 1)),
  ];
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
const score = (e: Float32Array): number => e.reduce((sum, v, i) => sum + v * head.weights[i], head.bias);

describe('writeTransformersJsModelDir', () => {
  it('writes config, tokenizer files and the graph with the label maps', async () => {
    const config = JSON.parse(await readFile(join(classifierDir, 'config.json'), 'utf8'));
    expect(config.architectures).toEqual(['BertForSequenceClassification']);
    expect(config.id2label).toEqual({ 0: 'false', 1: 'positive' });
    expect(config.label2id).toEqual({ false: 0, positive: 1 });
    expect(config.problem_type).toBe('single_label_classification');
    expect(config.hidden_size).toBe(384);
    expect(config['transformers.js_config']).toEqual({ dtype: 'fp32' });
    const tokenizerConfig = JSON.parse(await readFile(join(classifierDir, 'tokenizer_config.json'), 'utf8'));
    expect(tokenizerConfig.model_max_length).toBe(256);
    expect(tokenizerConfig.tokenizer_class).toBe('BertTokenizer');
    const tokenizer = JSON.parse(await readFile(join(classifierDir, 'tokenizer.json'), 'utf8'));
    expect(tokenizer.truncation.max_length).toBe(256);
    expect(tokenizer.padding).toBeNull();
  });

  it('gives transformers.js feature-extraction (by absolute path) the ORT sentence embeddings', async () => {
    const extract = await pipeline('feature-extraction', encoderDir, { dtype: 'fp32' });
    // The long e-mail runs on its own so the sentences are not padded to 256 tokens.
    const short = await extract(texts.slice(0, 49), { pooling: 'mean', normalize: true });
    const long = await extract(texts.slice(49), { pooling: 'mean', normalize: true });
    expect(short.dims).toEqual([49, 384]);
    const data = new Float32Array([...(short.data as Float32Array), ...(long.data as Float32Array)]);
    for (let r = 0; r < texts.length; r++) {
      expect(maxAbsDiff(data.subarray(r * 384, (r + 1) * 384), embeddings[r])).toBeLessThan(1e-4);
    }
    await extract.dispose();
  });

  it('gives transformers.js text-classification sigmoid(w·e + b) as P(positive)', async () => {
    // By hub id under env.localModelPath, local files only; no dtype: config.json's
    // transformers.js_config picks model.onnx.
    env.localModelPath = root;
    const classify = await pipeline('text-classification', kHubId, { local_files_only: true });
    const results = [
      ...((await classify(texts.slice(0, 49))) as { label: string; score: number }[]),
      ...((await classify(texts.slice(49))) as { label: string; score: number }[]),
    ];
    expect(results.length).toBe(50);
    let positives = 0;
    results.forEach((result, r) => {
      const p = sigmoid(score(embeddings[r]));
      expect(result.label).toBe(p >= 0.5 ? 'positive' : 'false');
      expect(Math.abs(result.score - Math.max(p, 1 - p))).toBeLessThan(1e-4);
      if (p >= 0.5) positives++;
    });
    expect(positives).toBeGreaterThan(5);
    expect(positives).toBeLessThan(45);
    await classify.dispose();
  });

  it('puts [0, w·e + b] in the logits output', async () => {
    const session = await ort.InferenceSession.create(join(classifierDir, 'onnx/model.onnx'));
    const logits = await runBatches(session, await tokenize(texts.slice(0, 8)), 'logits', 8);
    logits.forEach((row, r) => {
      expect(row[0]).toBe(0);
      expect(Math.abs(row[1] - score(embeddings[r]))).toBeLessThan(1e-4);
    });
  });

  it('writes the q8 graph transformers.js loads for dtype q8', async () => {
    const dir = join(root, 'quantized');
    const files = await writeTransformersJsModelDir(dir, { baseModel: 'svc-small', task: 'feature-extraction', precision: 'int8' });
    expect(files).toEqual(['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx', 'onnx/model_quantized.onnx']);
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    expect(config['transformers.js_config']).toBeUndefined();
    const extract = await pipeline('feature-extraction', dir, { dtype: 'q8' });
    const out = await extract(texts.slice(0, 4), { pooling: 'mean', normalize: true });
    const session = await createSession(new Uint8Array(await readFile(join(dir, 'onnx/model_quantized.onnx'))));
    const reference = await runBatches(session, await tokenize(texts.slice(0, 4)), 'sentence_embedding');
    for (let r = 0; r < 4; r++) {
      expect(maxAbsDiff((out.data as Float32Array).subarray(r * 384, (r + 1) * 384), reference[r])).toBeLessThan(1e-4);
    }
    await extract.dispose();
  });

  it('rejects a classification directory without its label', async () => {
    await expect(
      writeTransformersJsModelDir(join(root, 'bad'), { baseModel: 'svc-small', task: 'text-classification', head }),
    ).rejects.toThrow('options.labelText must be a non-empty string');
    await expect(
      writeTransformersJsModelDir(join(root, 'bad'), { baseModel: 'svc-small', task: 'summarization' as 'feature-extraction' }),
    ).rejects.toThrow("options.task must be 'feature-extraction' or 'text-classification'");
  });
});
