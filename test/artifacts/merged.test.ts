// Adapter models in a PostgreSQL artifact store, as replicas share them: the model adds its adapter, head and
// manifest (under a megabyte), the hub lists the transformers.js files of base + adapter merged, and the first
// download builds them into the store under their content address, where the model's deletion drops them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

import { kMergedOrg, mergedKey, MergedExports } from '../../src/artifacts/merged.js';
import { PostgresHub } from '../../src/artifacts/postgres-hub.js';
import { closePool } from '../../src/pool/pool.js';
import { writeAdapterModel } from '../_support/adapter.js';
import { usePostgres } from '../_support/postgres.js';

const server = usePostgres();
const cache = mkdtempSync(join(tmpdir(), 'svc-merged-cache-'));
afterAll(async () => {
  await closePool();
  rmSync(cache, { recursive: true, force: true });
});

async function chunkBytes(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: string | null }>('SELECT SUM(length(data)) AS bytes FROM artifact_chunks');
    return Number(rows[0].bytes ?? 0);
  } finally {
    await client.end();
  }
}

async function drain(reader: { stream: AsyncIterable<Buffer> }): Promise<number> {
  let bytes = 0;
  for await (const piece of reader.stream) bytes += piece.length;
  return bytes;
}

describe('adapter models in PostgreSQL', () => {
  it('store under a megabyte each and get their merged transformers.js files built on the first download', async () => {
    const url = await server.cluster.createDatabase();
    const hub = await PostgresHub.open(url, { cacheDir: cache });
    const files = new MergedExports(hub);
    try {
      const id = 'acme/svc-small-adapter00pg1';
      await hub.publish(id, (dir) => writeAdapterModel(dir, { rank: 8 }).then(() => undefined));
      const stored = await chunkBytes(url);
      expect(stored).toBeGreaterThan(600_000);
      expect(stored).toBeLessThan(1_000_000);

      expect(await files.list(id)).toEqual([
        'adapter_config.json',
        'adapter_model.safetensors',
        'config.json',
        'head.json',
        'manifest.json',
        'onnx/model.onnx',
        'tokenizer.json',
        'tokenizer_config.json',
      ]);
      const key = await mergedKey(hub.pathOf(id));
      await expect(hub.list(`${kMergedOrg}/${key}`)).rejects.toMatchObject({ code: 'not_found' });
      const onnx = await drain(await files.open(id, 'onnx/model.onnx'));
      expect(onnx).toBeGreaterThan(80_000_000);
      expect((await hub.list(`${kMergedOrg}/${key}`)).map((f) => f.name)).toEqual([
        'config.json',
        'onnx/model.onnx',
        'tokenizer.json',
        'tokenizer_config.json',
      ]);
      const config = JSON.parse(await drain2text(await files.open(id, 'config.json')));
      expect(config.id2label).toEqual({ 0: 'false', 1: 'positive review' });
      // The model's own files come from the model, untouched.
      expect(await drain(await files.open(id, 'adapter_model.safetensors'))).toBe(
        (await hub.list(id)).find((f) => f.name === 'adapter_model.safetensors')!.size,
      );

      await files.forget(id);
      await expect(hub.list(`${kMergedOrg}/${key}`)).rejects.toMatchObject({ code: 'not_found' });
    } finally {
      await hub.close();
    }
  }, 240_000);
});

async function drain2text(reader: { stream: AsyncIterable<Buffer> }): Promise<string> {
  const pieces: Buffer[] = [];
  for await (const piece of reader.stream) pieces.push(piece);
  return Buffer.concat(pieces).toString('utf8');
}
