import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { readModelDir, writeManifestAndHead } from '../../src/model/directory.js';
import type { LogisticHead } from '../../src/model/directory.js';
import { kManifestFormatVersion } from '../../src/contract/manifest.js';

const formatOne = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'format-1');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-model-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function withManifest(change: (manifest: Record<string, unknown>) => void): Promise<string> {
  await cp(formatOne, dir, { recursive: true });
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'));
  change(manifest);
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

describe('model directory', () => {
  // A directory as format version 1 wrote it, kept verbatim: every later version must read it.
  it('reads a format-1 directory', async () => {
    const { manifest, head } = await readModelDir(formatOne);
    expect(manifest).toMatchObject({
      format_version: kManifestFormatVersion,
      id: 'svc-small-0123456789ab',
      created_at: 1763769600,
      base_model: 'svc-small',
      label_text: 'positive review',
      body: 'frozen',
      metrics: { train_accuracy: 1, train_seconds: 0.25 },
    });
    expect(manifest.training).toMatchObject({ method: 'frozen-logistic', C: 1, examples: 20 });
    expect(head.weights.length).toBe(384);
    expect(Array.from(head.weights.subarray(0, 4))).toEqual([-0.11, 0.03, -0.06, 0.08]);
    expect((head as LogisticHead).bias).toBe(-0.125);
  });

  it('writes what it reads, bit for bit', async () => {
    const { manifest } = await readModelDir(formatOne);
    const weights = Float64Array.from({ length: 384 }, (_, j) => Math.sin(j) / 3);
    await writeManifestAndHead(dir, manifest, { weights, bias: Math.PI / 7 });
    const again = await readModelDir(dir);
    expect(again.manifest).toEqual(manifest);
    expect(again.head.weights).toEqual(weights);
    expect((again.head as LogisticHead).bias).toBe(Math.PI / 7);
  });

  it('reads the encoder a cross-validation estimate was measured on, in the order training writes the metrics', async () => {
    const metrics = {
      train_accuracy: 1,
      train_seconds: 9.5,
      cv_accuracy: 0.85,
      cv_macro_f1: 0.849624060150376,
      cv_folds: 5,
      cv_encoder: 'base',
    };
    await withManifest((m) => (m.metrics = { validation_accuracy: 0.75, validation_macro_f1: 0.7, validation_examples: 4, ...metrics }));
    const { manifest } = await readModelDir(dir);
    expect(Object.entries(manifest.metrics)).toEqual([
      ...Object.entries(metrics),
      ['validation_accuracy', 0.75],
      ['validation_macro_f1', 0.7],
      ['validation_examples', 4],
    ]);
  });

  it("finds a fine-tuned body's encoder weights, and says so when they are missing", async () => {
    await withManifest((m) => Object.assign(m, { body: 'finetuned', encoder_file: 'model.fp16.safetensors' }));
    await expect(readModelDir(dir)).rejects.toMatchObject({
      code: 'not_found',
      message: `the fine-tuned encoder: ${join(dir, 'model.fp16.safetensors')} does not exist`,
    });
    await writeFile(join(dir, 'model.fp16.safetensors'), 'weights');
    const { manifest, encoderFile } = await readModelDir(dir);
    expect([manifest.body, manifest.encoder_file, encoderFile]).toEqual([
      'finetuned',
      'model.fp16.safetensors',
      join(dir, 'model.fp16.safetensors'),
    ]);
    expect((await readModelDir(formatOne)).encoderFile).toBeNull();
  });

  it('refuses a newer format version with advice', async () => {
    await withManifest((m) => (m.format_version = 2));
    await expect(readModelDir(dir)).rejects.toMatchObject({
      code: 'invalid_request',
      message: `${dir}/manifest.json: format_version 2 is newer than this svc-classify reads (1); upgrade svc-classify`,
    });
  });

  it.each([
    [(m: Record<string, unknown>) => delete m.format_version, 'format_version is missing: not a svc-classify model format'],
    [(m: Record<string, unknown>) => (m.format_version = '1'), 'format_version "1": not a svc-classify model format'],
    [(m: Record<string, unknown>) => delete m.label_text, 'label_text is missing or malformed'],
    [
      (m: Record<string, unknown>) => (m.base_model = 'svc-huge'),
      "base_model 'svc-huge' is not one this svc-classify has (svc-small); register its folder first (registerBaseModel, svc serve --base-model svc-huge=DIR)",
    ],
    [
      (m: Record<string, unknown>) => (m.base_model_fingerprint = 'sha256:00'),
      "base model 'svc-small' was trained on files with fingerprint sha256:00, but svc-small is built in: its files are not fingerprinted",
    ],
    [(m: Record<string, unknown>) => (m.body = 'mixture'), "body 'mixture' is not supported by this svc-classify; upgrade it"],
    [(m: Record<string, unknown>) => (m.body = 'adapter'), 'adapter_file is missing or malformed'],
    [
      (m: Record<string, unknown>) => Object.assign(m, { body: 'adapter', adapter_file: 'adapter_model.safetensors' }),
      'adapter_config_file is missing or malformed',
    ],
    [(m: Record<string, unknown>) => (m.body = 'finetuned'), 'encoder_file is missing or malformed'],
    [(m: Record<string, unknown>) => (m.head_file = '../head.json'), "head_file '../head.json' is not a plain file name"],
    [(m: Record<string, unknown>) => (m.task_type = 'regression'), "task_type 'regression' is not supported"],
    [(m: Record<string, unknown>) => Object.assign(m.metrics as object, { cv_encoder: 'finetuned' }), 'cv_encoder is missing or malformed'],
    [(m: Record<string, unknown>) => (m.task_type = 'multi-class-classification'), 'labels is missing or malformed'],
    [
      (m: Record<string, unknown>) => Object.assign(m, { task_type: 'multi-label-classification', labels: ['a', 'a'] }),
      'labels is missing or malformed',
    ],
    [
      (m: Record<string, unknown>) => Object.assign(m, { body: 'finetuned', encoder_file: '/etc/model.safetensors' }),
      "encoder_file '/etc/model.safetensors' is not a plain file name",
    ],
  ])('refuses a malformed manifest %#', async (change, message) => {
    await withManifest(change);
    await expect(readModelDir(dir)).rejects.toMatchObject({ message: `${dir}/manifest.json: ${message}` });
  });

  it('says when a folder is no model directory', async () => {
    await expect(readModelDir(dir)).rejects.toMatchObject({
      code: 'not_found',
      message: `${dir} is not a svc-classify model directory (no manifest.json)`,
    });
  });

  it('refuses a head of the wrong shape', async () => {
    await cp(formatOne, dir, { recursive: true });
    await writeFile(join(dir, 'head.json'), JSON.stringify({ kind: 'logistic-regression', dim: 2, weights: [1], bias: 0 }));
    await expect(readModelDir(dir)).rejects.toMatchObject({
      message: `${join(dir, 'head.json')} is not a logistic-regression head`,
    });
  });

  it('reads and writes a head with a row per label, and refuses one whose rows do not match the labels', async () => {
    const { manifest } = await readModelDir(formatOne);
    const multi = { ...manifest, task_type: 'multi-class-classification' as const, labels: ['a', 'b', 'c'] };
    delete multi.label_text;
    const weights = Float64Array.from({ length: 3 * 384 }, (_, j) => Math.cos(j) / 5);
    const head = { kind: 'softmax' as const, weights, biases: Float64Array.of(0.25, -0.5, 0.25) };
    await writeManifestAndHead(dir, multi, head);
    const again = await readModelDir(dir);
    expect(again.manifest).toEqual(multi);
    expect(again.head).toEqual(head);
    const file = JSON.parse(await readFile(join(dir, 'head.json'), 'utf8')) as { kind: string; weights: number[][] };
    expect([file.kind, file.weights.length, file.weights[1].length]).toEqual(['softmax-regression', 3, 384]);
    await writeFile(join(dir, 'manifest.json'), JSON.stringify({ ...multi, labels: ['a', 'b'] }));
    await expect(readModelDir(dir)).rejects.toMatchObject({ message: `${join(dir, 'head.json')} is not a head of 2 labels` });
  });
});
