// The examples a model was trained on, kept with it so that `explain` can name the ones nearest a
// text: their texts and labels (examples.json) and their embeddings in the model's own space, the
// ones its head was fitted on (example_embeddings.safetensors, F32 n x dim). Storing the embeddings
// spares an explain call from embedding every example again (thousands of texts for a large model);
// nothing here is read until a call asks to explain.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { SvcError } from '../errors.js';
import { writeFileDurably } from '../model/durable.js';
import { encodeSafetensors, SafetensorsFile } from '../model/safetensors.js';
import type { ClassExample, LabelSetExample, TaskType } from '../contract/train-request.js';

/** The training examples' texts and labels, as `[{ text, label }]` (multi-label: `[{ text, labels }]`). */
export const kExamplesFile = 'examples.json';
/** Their embeddings by the model's encoder: one F32 tensor `embeddings` of shape [examples, dim]. */
export const kExampleEmbeddingsFile = 'example_embeddings.safetensors';

/** An example as a model keeps it: binary `label` is a boolean, multi-class a class, multi-label `labels`. */
export type KeptExample = { text: string; label: boolean } | ClassExample | LabelSetExample;

/** A model's training examples and their embeddings (n x dim, L2-normalized, row i is example i's). */
export interface ExampleBank {
  readonly examples: readonly KeptExample[];
  readonly embeddings: Float32Array;
  readonly dim: number;
}

/** The examples of a train request in the form a model keeps them (a binary example's label_text is the model's). */
export function keptExamples(examples: readonly (KeptExample & { label_text?: string })[]): KeptExample[] {
  return examples.map(
    (example) =>
      ('labels' in example
        ? { text: example.text, labels: [...example.labels] }
        : { text: example.text, label: example.label }) as KeptExample,
  );
}

/** Writes the bank's two files into a model directory. */
export async function writeExampleBank(dir: string, bank: ExampleBank): Promise<void> {
  const n = bank.examples.length;
  await writeFileDurably(join(dir, kExamplesFile), JSON.stringify(bank.examples));
  await writeFileDurably(
    join(dir, kExampleEmbeddingsFile),
    encodeSafetensors([{ name: 'embeddings', shape: [n, bank.dim], data: bank.embeddings, dtype: 'F32' }]),
  );
}

function checkExample(taskType: TaskType, example: unknown): boolean {
  if (example === null || typeof example !== 'object' || typeof (example as { text?: unknown }).text !== 'string') return false;
  const { label, labels } = example as { label?: unknown; labels?: unknown };
  if (taskType === 'binary-classification') return typeof label === 'boolean';
  if (taskType === 'multi-class-classification') return typeof label === 'string';
  return Array.isArray(labels) && labels.every((name) => typeof name === 'string');
}

/**
 * Reads the bank of the model in `dir`. A model saved before models kept their examples has none:
 * that is a 409 naming the model, since training it again is the way to get explanations.
 */
export async function readExampleBank(dir: string, modelId: string, taskType: TaskType, dim: number): Promise<ExampleBank> {
  let examplesText: string;
  let embeddingsBytes: Uint8Array;
  try {
    [examplesText, embeddingsBytes] = await Promise.all([
      readFile(join(dir, kExamplesFile), 'utf8'),
      readFile(join(dir, kExampleEmbeddingsFile)),
    ]);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw cause;
    throw new SvcError(
      'conflict',
      `explain needs the training examples kept with the model, and ${modelId} was saved without them; train it again to explain its answers`,
      {
        param: 'explain',
        cause,
      },
    );
  }
  const examples = JSON.parse(examplesText) as unknown;
  const file = SafetensorsFile.parse(embeddingsBytes, join(dir, kExampleEmbeddingsFile));
  const shape = file.has('embeddings') ? file.info('embeddings').shape : [];
  const ok =
    Array.isArray(examples) &&
    examples.every((example) => checkExample(taskType, example)) &&
    shape.length === 2 &&
    shape[0] === examples.length &&
    shape[1] === dim;
  if (!ok)
    throw new SvcError(
      'internal',
      `${join(dir, kExamplesFile)} and ${kExampleEmbeddingsFile} do not describe the same ${dim}-dimension examples`,
    );
  return Object.freeze({ examples: examples as KeptExample[], embeddings: file.float32('embeddings'), dim });
}
