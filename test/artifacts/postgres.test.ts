import { randomBytes } from 'node:crypto';

import pg from 'pg';
import { describe, expect, it } from 'vitest';

import { PostgresArtifacts } from '../../src/artifacts/postgres.js';
import { kChunkBytes } from '../../src/artifacts/types.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { kMigrations } from '../../src/store/migrations.js';
import { usePostgres } from '../_support/postgres.js';
import { artifactContract, kTestChunk, pieces, useModelDirs } from './contract.js';

const server = usePostgres();

artifactContract('PostgresArtifacts', {
  open: async (chunkBytes) => PostgresArtifacts.open(await server.cluster.createDatabase(), { chunkBytes }),
});

async function counts(url: string): Promise<{ blobs: number; chunks: number; files: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ blobs: number; chunks: number; files: number }>(`SELECT
      (SELECT COUNT(*)::int FROM artifact_blobs) AS blobs,
      (SELECT COUNT(*)::int FROM artifact_chunks) AS chunks,
      (SELECT COUNT(*)::int FROM artifact_files) AS files`);
    return rows[0];
  } finally {
    await client.end();
  }
}

describe('PostgresArtifacts on its database', () => {
  const dir = useModelDirs();

  it('stores a file two models hold once, and drops a blob only with the last model that references it', async () => {
    const url = await server.cluster.createDatabase();
    const artifacts = await PostgresArtifacts.open(url, { chunkBytes: kTestChunk });
    const encoder = randomBytes(2 * kTestChunk + 7); // 3 chunks
    await artifacts.put('acme/svc-small-000000000001', await dir({ 'model.safetensors': encoder, 'head.json': 'a' }));
    await artifacts.put('beta/svc-small-000000000002', await dir({ 'model.safetensors': encoder, 'head.json': 'b' }));
    // One encoder blob (3 chunks) and two heads (1 chunk each), for four file rows.
    expect(await counts(url)).toEqual({ blobs: 3, chunks: 5, files: 4 });

    expect(await artifacts.delete('acme/svc-small-000000000001')).toBe(true);
    expect(await counts(url)).toEqual({ blobs: 2, chunks: 4, files: 2 });
    expect(await artifacts.delete('beta/svc-small-000000000002')).toBe(true);
    expect(await counts(url)).toEqual({ blobs: 0, chunks: 0, files: 0 });
    await artifacts.close();
  });

  it('replacing a model drops the blobs only its old files held and keeps the ones it still holds', async () => {
    const url = await server.cluster.createDatabase();
    const artifacts = await PostgresArtifacts.open(url, { chunkBytes: kTestChunk });
    await artifacts.put('acme/svc-small-000000000003', await dir({ 'tokenizer.json': 'tok', 'head.json': 'v1' }));
    await artifacts.put('acme/svc-small-000000000003', await dir({ 'tokenizer.json': 'tok', 'head.json': 'v2' }));
    expect(await counts(url)).toEqual({ blobs: 2, chunks: 2, files: 2 });
    await artifacts.close();
  });

  it('shares its database with the PostgresStore: one schema, opened by either first, 1 MiB rows by default', async () => {
    const url = await server.cluster.createDatabase();
    const [artifacts, store] = await Promise.all([PostgresArtifacts.open(url), PostgresStore.open(url)]);
    expect(await store.schemaVersion()).toBe(kMigrations.length);
    const bytes = randomBytes(kChunkBytes + 1);
    await artifacts.put('acme/svc-small-000000000004', await dir({ 'onnx/model.onnx': bytes }));
    const { stream } = await artifacts.open('acme/svc-small-000000000004', 'onnx/model.onnx');
    expect((await pieces(stream)).map((p) => p.length)).toEqual([kChunkBytes, 1]);
    await Promise.all([artifacts.close(), store.close()]);
    await expect(PostgresArtifacts.open(url, { chunkBytes: 1.5 })).rejects.toThrow('options.chunkBytes must be a positive integer');
  });

  it('two replicas putting models that share files at the same moment both succeed, each blob stored once', async () => {
    const url = await server.cluster.createDatabase();
    const [one, two] = await Promise.all([PostgresArtifacts.open(url), PostgresArtifacts.open(url)]);
    const shared = randomBytes(3 * kChunkBytes);
    const a = await dir({ 'tokenizer.json': shared, 'head.json': 'a' });
    const b = await dir({ 'tokenizer.json': shared, 'head.json': 'b' });
    await Promise.all([one.put('acme/svc-small-000000000005', a), two.put('beta/svc-small-000000000006', b)]);
    expect(await counts(url)).toEqual({ blobs: 3, chunks: 5, files: 4 });
    const { stream } = await two.open('acme/svc-small-000000000005', 'tokenizer.json');
    expect(Buffer.concat(await pieces(stream)).equals(shared)).toBe(true);
    await Promise.all([one.close(), two.close()]);
  });
});
