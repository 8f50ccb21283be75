// Trained models in one PostgreSQL artifact store: two frozen models of one base hold the same encoder inside their
// ONNX graphs, which differ only in the head at the end, so the second model costs a few chunks, not ~90 MB.
import { createHash } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { fileChunks } from '../../src/artifacts/chunks.js';
import { PostgresFiles } from '../../src/artifacts/postgres-files.js';
import { modelFileNames } from '../../src/model/hub.js';
import { closePool } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';
import { usePostgres } from '../_support/postgres.js';

const server = usePostgres();
let root: string;
const models: { id: string; dir: string }[] = [];

/** A frozen IMDB classifier on the 20 examples of one seed's draw, saved as the hub stores it. */
async function trainedDir(seed: number): Promise<string> {
  const { trainSet } = split(uciSentences('imdb'), seed);
  const classifier = await train({
    model: 'svc-small',
    task_type: 'binary-classification',
    finetune: false,
    examples: trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' })),
  });
  const dir = join(root, `seed-${seed}`);
  await classifier.save(dir);
  return dir;
}

async function storedBytes(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: number }>('SELECT SUM(length(data))::bigint AS bytes FROM artifact_chunks');
    return Number(rows[0].bytes);
  } finally {
    await client.end();
  }
}

/** SHA-256 and size of a byte stream, so that 90 MB files are compared without holding them. */
async function digest(source: AsyncIterable<Buffer>): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const piece of source) {
    hash.update(piece);
    size += piece.length;
  }
  return { sha256: hash.digest('hex'), size };
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-pg-models-'));
  models.push({ id: 'acme/svc-small-00000000a001', dir: await trainedDir(1) });
  models.push({ id: 'beta/svc-small-00000000b002', dir: await trainedDir(2) });
}, 300_000);

afterAll(async () => {
  await closePool();
  await rm(root, { recursive: true, force: true });
});

describe('PostgresFiles with trained models', () => {
  it('stores two frozen models of one base in less than 1.2x the bytes of one, and gives both back byte for byte', async () => {
    const url = await server.cluster.createDatabase();
    const artifacts = await PostgresFiles.open(url);
    const onnx = (await stat(join(models[0].dir, 'onnx', 'model.onnx'))).size;
    // Different examples, different heads: the graphs are the same size and not the same bytes.
    expect((await stat(join(models[1].dir, 'onnx', 'model.onnx'))).size).toBe(onnx);
    expect(await digest(fileChunks(join(models[0].dir, 'onnx', 'model.onnx'), 1 << 20))).not.toEqual(
      await digest(fileChunks(join(models[1].dir, 'onnx', 'model.onnx'), 1 << 20)),
    );

    await artifacts.put(models[0].id, models[0].dir);
    const one = await storedBytes(url);
    expect(one).toBeGreaterThan(onnx);
    await artifacts.put(models[1].id, models[1].dir);
    const two = await storedBytes(url);
    expect(two / one).toBeLessThan(1.2);

    for (const { id, dir } of models) {
      const names = await modelFileNames(dir);
      expect(names).toEqual([
        'config.json',
        'example_embeddings.safetensors',
        'examples.json',
        'head.json',
        'manifest.json',
        'onnx/model.onnx',
        'tokenizer.json',
        'tokenizer_config.json',
      ]);
      for (const name of names) {
        const { stream } = await artifacts.open(id, name);
        expect(await digest(stream)).toEqual(await digest(fileChunks(join(dir, ...name.split('/')), 1 << 20)));
      }
    }
    await artifacts.close();
  }, 180_000);
});
