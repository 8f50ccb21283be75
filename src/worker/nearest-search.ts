// Explain's search, in a pool worker: the k examples nearest each input by cosine similarity (a dot
// product: the embeddings are L2-normalized), kept in a k-long list per input rather than by sorting
// every example. A model's examples are read from its directory once and kept here (least recently
// used dropped past a byte bound), so a call parses no file, and none of this runs on the main thread.
import { statSync } from 'node:fs';
import { join } from 'node:path';

import { explainedText } from '../contract/long-texts.js';
import { type ExampleBank, kExampleEmbeddingsFile, kExamplesFile, readExampleBank } from '../predict/example-bank.js';
import type { NearestExample, NearestResult, NearestTask } from '../pool/tasks.js';

/** Bytes of example banks one worker keeps (embeddings plus about two bytes a character of text). */
export const kExampleBankCacheBytes = 128 * 2 ** 20;

interface CachedBank {
  identity: string;
  bank: ExampleBank;
  bytes: number;
}

// By directory, least recently used first.
const banks = new Map<string, CachedBank>();
let cachedBytes = 0;

/** Which files the bank was read from: a model saved again to the same folder is read again. */
function identityOf(dir: string): string {
  return [kExamplesFile, kExampleEmbeddingsFile]
    .map((name) => {
      const { ino, size, mtimeMs } = statSync(join(dir, name));
      return `${ino}:${size}:${mtimeMs}`;
    })
    .join('/');
}

async function bankOf(bank: Extract<NearestTask['bank'], { kind: 'files' }>, dim: number): Promise<ExampleBank> {
  let identity: string | null = null;
  try {
    identity = identityOf(bank.dir);
  } catch {
    // Missing files: readExampleBank says so the way callers expect (a 409 naming the model).
  }
  const cached = banks.get(bank.dir);
  if (cached !== undefined && cached.identity === identity) {
    banks.delete(bank.dir);
    banks.set(bank.dir, cached); // most recently used
    return cached.bank;
  }
  const read = await readExampleBank(bank.dir, bank.modelId, bank.taskType, dim);
  if (cached !== undefined) {
    banks.delete(bank.dir);
    cachedBytes -= cached.bytes;
  }
  if (identity !== null) {
    let bytes = read.embeddings.byteLength;
    for (const example of read.examples) bytes += 2 * example.text.length + 64;
    banks.set(bank.dir, { identity, bank: read, bytes });
    cachedBytes += bytes;
    for (const [dir, entry] of banks) {
      if (cachedBytes <= kExampleBankCacheBytes || banks.size <= 1) break;
      banks.delete(dir);
      cachedBytes -= entry.bytes;
    }
  }
  return read;
}

/** The nearest `count` examples of each input (see {@link NearestResult}). */
function search(embeddings: Float32Array, inputs: Float32Array, dim: number, k: number): Omit<NearestResult, 'examples'> {
  const n = embeddings.length / dim;
  const t = inputs.length / dim;
  const count = Math.min(k, n);
  const indices = new Int32Array(t * count);
  const similarities = new Float64Array(t * count);
  for (let q = 0; q < t; q++) {
    const at = q * count;
    let held = 0;
    for (let i = 0; i < n; i++) {
      let dot = 0;
      for (let j = 0; j < dim; j++) dot += embeddings[i * dim + j] * inputs[q * dim + j];
      // Strictly greater: among equal similarities the earlier example stays ahead.
      if (held === count && dot <= similarities[at + count - 1]) continue;
      let slot = held < count ? held++ : count - 1;
      while (slot > 0 && similarities[at + slot - 1] < dot) {
        similarities[at + slot] = similarities[at + slot - 1];
        indices[at + slot] = indices[at + slot - 1];
        slot--;
      }
      similarities[at + slot] = dot;
      indices[at + slot] = i;
    }
  }
  return { count, indices, similarities };
}

/** Runs a {@link NearestTask}. */
export async function nearestExamples(task: NearestTask): Promise<NearestResult> {
  if (task.bank.kind === 'embeddings') return { ...search(task.bank.embeddings, task.inputs, task.dim, task.k), examples: null };
  const bank = await bankOf(task.bank, task.dim);
  const found = search(bank.embeddings, task.inputs, task.dim, task.k);
  const examples = Array.from(found.indices, (i): NearestExample => {
    const example = bank.examples[i];
    const { text, cut } = explainedText(example.text, task.textChars);
    return 'labels' in example ? { text, labels: [...example.labels], cut } : { text, label: example.label, cut };
  });
  return { ...found, examples };
}
