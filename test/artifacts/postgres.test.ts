import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import pg from 'pg';
import { describe, expect, it } from 'vitest';

import { cdcChunks, cdcSizes } from '../../src/artifacts/cdc.js';
import { PostgresFiles } from '../../src/artifacts/postgres-files.js';
import { PostgresHub } from '../../src/artifacts/postgres-hub.js';
import { kChunkBytes } from '../../src/model/hub.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { kMigrations } from '../../src/store/migrations.js';
import { kPgMigrations, migratePostgres } from '../../src/store/postgres-migrations.js';
import { usePostgres } from '../_support/postgres.js';
import { seededBytes } from '../_support/seeded-bytes.js';
import { hubContract, kTestChunk, pieces, useModelDirs } from './contract.js';

const server = usePostgres();

hubContract('PostgresHub', {
  open: async (chunkBytes) =>
    PostgresHub.open(await server.cluster.createDatabase(), { chunkBytes, cacheDir: await mkdtemp(join(tmpdir(), 'svc-cache-')) }),
});

/** Small cuts (16 KiB / 64 KiB / 256 KiB) so that a few hundred KiB span several chunks. */
const kCdc = { minBytes: 16 * 1024, avgBytes: 64 * 1024, maxBytes: 256 * 1024 };

interface Counts {
  blobs: number;
  /** Stored chunks, each once. */
  chunks: number;
  /** Chunk positions over all blobs. */
  positions: number;
  files: number;
  /** Bytes of stored chunks. */
  bytes: number;
}

export async function counts(url: string): Promise<Counts> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<Counts>(`SELECT
      (SELECT COUNT(*)::int FROM artifact_blobs) AS blobs,
      (SELECT COUNT(*)::int FROM artifact_chunks) AS chunks,
      (SELECT COUNT(*)::int FROM artifact_blob_chunks) AS positions,
      (SELECT COUNT(*)::int FROM artifact_files) AS files,
      (SELECT COALESCE(SUM(length(data)), 0)::int FROM artifact_chunks) AS bytes`);
    return rows[0];
  } finally {
    await client.end();
  }
}

describe('PostgresFiles on its database', () => {
  const dir = useModelDirs();

  it('stores a file two models hold once, and drops a blob and its chunks only with the last model holding them', async () => {
    const url = await server.cluster.createDatabase();
    const artifacts = await PostgresFiles.open(url, { chunkBytes: kTestChunk, cdc: kCdc });
    const encoder = seededBytes(5, 300_000);
    await artifacts.put('acme/svc-small-000000000001', await dir({ 'model.safetensors': encoder, 'head.json': 'a' }));
    await artifacts.put('beta/svc-small-000000000002', await dir({ 'model.safetensors': encoder, 'head.json': 'b' }));
    // One encoder blob (5 chunks) and two heads (1 chunk each), for four file rows.
    expect(await counts(url)).toEqual({ blobs: 3, chunks: 7, positions: 7, files: 4, bytes: 300_002 });

    expect(await artifacts.delete('acme/svc-small-000000000001')).toBe(true);
    expect(await counts(url)).toEqual({ blobs: 2, chunks: 6, positions: 6, files: 2, bytes: 300_001 });
    expect(await artifacts.delete('beta/svc-small-000000000002')).toBe(true);
    expect(await counts(url)).toEqual({ blobs: 0, chunks: 0, positions: 0, files: 0, bytes: 0 });
    await artifacts.close();
  });

  it('two files sharing a run of bytes at different offsets store the run once', async () => {
    const url = await server.cluster.createDatabase();
    const artifacts = await PostgresFiles.open(url, { chunkBytes: kTestChunk, cdc: kCdc });
    // The shape of two models' ONNX graphs: their own bytes around one long shared run, here at offsets 1000 and 5.
    const shared = seededBytes(6, 1024 * 1024);
    const one = Buffer.concat([seededBytes(7, 1000), shared, seededBytes(8, 3000)]);
    const two = Buffer.concat([seededBytes(9, 5), shared, seededBytes(10, 2000)]);
    await artifacts.put('acme/svc-small-000000000003', await dir({ 'onnx/model.onnx': one }));
    const alone = await counts(url);
    expect(alone).toEqual({ blobs: 1, chunks: 15, positions: 15, files: 1, bytes: one.length });
    await artifacts.put('acme/svc-small-000000000004', await dir({ 'onnx/model.onnx': two }));
    // Only the chunks at either end differ: 2 new chunks, 165,131 bytes for a 1,050,581-byte file.
    expect(two.length).toBe(1_050_581);
    expect(await counts(url)).toEqual({ blobs: 2, chunks: 17, positions: 30, files: 2, bytes: one.length + 165_131 });
    for (const [id, bytes] of [
      ['acme/svc-small-000000000003', one],
      ['acme/svc-small-000000000004', two],
    ] as const) {
      const { size, stream } = await artifacts.open(id, 'onnx/model.onnx');
      expect(size).toBe(bytes.length);
      expect(Buffer.concat(await pieces(stream)).equals(bytes)).toBe(true);
    }
    expect(await artifacts.delete('acme/svc-small-000000000003')).toBe(true);
    expect(await counts(url)).toEqual({ blobs: 1, chunks: 15, positions: 15, files: 1, bytes: two.length });
    await artifacts.close();
  });

  it('replacing a model drops the blobs only its old files held and keeps the ones it still holds', async () => {
    const url = await server.cluster.createDatabase();
    const artifacts = await PostgresFiles.open(url, { chunkBytes: kTestChunk });
    await artifacts.put('acme/svc-small-000000000005', await dir({ 'tokenizer.json': 'tok', 'head.json': 'v1' }));
    await artifacts.put('acme/svc-small-000000000005', await dir({ 'tokenizer.json': 'tok', 'head.json': 'v2' }));
    expect(await counts(url)).toEqual({ blobs: 2, chunks: 2, positions: 2, files: 2, bytes: 5 });
    await artifacts.close();
  });

  it('shares its database with the PostgresStore: one schema, opened by either first, 1 MiB pieces by default', async () => {
    const url = await server.cluster.createDatabase();
    const [artifacts, store] = await Promise.all([PostgresFiles.open(url), PostgresStore.open(url)]);
    expect(await store.schemaVersion()).toBe(kMigrations.length);
    const bytes = randomBytes(kChunkBytes + 1);
    await artifacts.put('acme/svc-small-000000000006', await dir({ 'onnx/model.onnx': bytes }));
    const { stream } = await artifacts.open('acme/svc-small-000000000006', 'onnx/model.onnx');
    expect((await pieces(stream)).map((p) => p.length)).toEqual([kChunkBytes, 1]);
    await Promise.all([artifacts.close(), store.close()]);
    await expect(PostgresFiles.open(url, { chunkBytes: 1.5 })).rejects.toThrow('options.chunkBytes must be a positive integer');
    await expect(PostgresFiles.open(url, { cdc: { avgBytes: 1000 } })).rejects.toThrow(
      'options.avgBytes must be a power of two from 64 to 268435456',
    );
  });

  it('two replicas putting models that share files at the same moment both succeed, each chunk stored once', async () => {
    const url = await server.cluster.createDatabase();
    const [one, two] = await Promise.all([PostgresFiles.open(url, { cdc: kCdc }), PostgresFiles.open(url, { cdc: kCdc })]);
    const shared = seededBytes(11, 1024 * 1024);
    const a = await dir({ 'tokenizer.json': shared, 'head.json': 'a' });
    const b = await dir({ 'tokenizer.json': shared, 'head.json': 'b' });
    await Promise.all([one.put('acme/svc-small-000000000007', a), two.put('beta/svc-small-000000000008', b)]);
    expect(await counts(url)).toEqual({ blobs: 3, chunks: 16, positions: 16, files: 4, bytes: 1024 * 1024 + 2 });
    const { stream } = await two.open('acme/svc-small-000000000007', 'tokenizer.json');
    expect(Buffer.concat(await pieces(stream)).equals(shared)).toBe(true);
    await Promise.all([one.close(), two.close()]);
  });

  it('puts of different files sharing runs, at the same moment, never deadlock and store each chunk once', async () => {
    const url = await server.cluster.createDatabase();
    const replicas = await Promise.all([1, 2, 3].map(() => PostgresFiles.open(url, { cdc: kCdc })));
    const shared = [seededBytes(14, 512 * 1024), seededBytes(15, 512 * 1024)];
    // Each replica's file holds both runs, in its own order and with its own head: the puts claim the same chunks
    // from different files, in different file orders.
    const files = replicas.map((_, k) => Buffer.concat([...(k % 2 === 0 ? shared : [...shared].reverse()), Buffer.from(`head ${k}`)]));
    const dirs = await Promise.all(files.map((bytes) => dir({ 'onnx/model.onnx': bytes })));
    await Promise.all(replicas.map((r, k) => r.put(`acme/svc-small-00000000030${k}`, dirs[k])));
    for (const [k, bytes] of files.entries()) {
      const { stream } = await replicas[(k + 1) % 3].open(`acme/svc-small-00000000030${k}`, 'onnx/model.onnx');
      expect(Buffer.concat(await pieces(stream)).equals(bytes)).toBe(true);
    }
    // Exactly the different chunks the three files are cut into, each once: far less than three files' worth.
    const distinct = new Map<string, number>();
    for (const d of dirs) {
      for await (const chunk of cdcChunks(join(d, 'onnx', 'model.onnx'), cdcSizes(kCdc))) {
        distinct.set(createHash('sha256').update(chunk).digest('hex'), chunk.length);
      }
    }
    const { chunks, bytes } = await counts(url);
    expect({ chunks, bytes }).toEqual({ chunks: distinct.size, bytes: [...distinct.values()].reduce((a, b) => a + b) });
    expect(bytes).toBeLessThan(1.5 * files[0].length);
    await Promise.all(replicas.map((r) => r.close()));
  });

  it('a put and a delete of models sharing chunks, at the same moment, leave the put whole', async () => {
    const url = await server.cluster.createDatabase();
    const [one, two] = await Promise.all([PostgresFiles.open(url, { cdc: kCdc }), PostgresFiles.open(url, { cdc: kCdc })]);
    const shared = seededBytes(12, 1024 * 1024);
    // Each round: the model going away and the one arriving share the run, not the file (different tails).
    for (let round = 0; round < 6; round += 1) {
      const gone = `acme/svc-small-00000000010${round}`;
      const kept = `beta/svc-small-00000000020${round}`;
      await one.put(gone, await dir({ 'onnx/model.onnx': Buffer.concat([shared, Buffer.from(`gone ${round}`)]) }));
      const bytes = Buffer.concat([shared, Buffer.from(`kept ${round}`)]);
      const [deleted] = await Promise.all([one.delete(gone), two.put(kept, await dir({ 'onnx/model.onnx': bytes }))]);
      expect(deleted).toBe(true);
      const { stream } = await one.open(kept, 'onnx/model.onnx');
      expect(Buffer.concat(await pieces(stream)).equals(bytes)).toBe(true);
      expect(await two.delete(kept)).toBe(true);
      expect(await counts(url)).toEqual({ blobs: 0, chunks: 0, positions: 0, files: 0, bytes: 0 });
    }
    await Promise.all([one.close(), two.close()]);
  });

  it('a database of the 1 MiB-row layout comes up with its models whole, each row a chunk named by its hash', async () => {
    const url = await server.cluster.createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    // Every migration before the one that cuts files by content.
    await migratePostgres(
      client,
      kPgMigrations.slice(
        0,
        kPgMigrations.findIndex((sql) => sql.includes('artifact_chunks_fixed')),
      ),
    );
    // Rows as the fixed-size store wrote them: a blob's 1 MiB pieces by position, here two equal ones and a tail.
    const piece = seededBytes(13, kChunkBytes);
    const bytes = Buffer.concat([piece, piece, Buffer.from('tail')]);
    const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
    await client.query('INSERT INTO artifact_blobs (sha256, size, chunks) VALUES ($1, $2, 3)', [sha256(bytes), bytes.length]);
    for (const [position, data] of [piece, piece, Buffer.from('tail')].entries()) {
      await client.query('INSERT INTO artifact_chunks (sha256, position, data) VALUES ($1, $2, $3)', [sha256(bytes), position, data]);
    }
    await client.query("INSERT INTO artifact_files (model, name, sha256) VALUES ('acme/svc-small-000000000301', 'onnx/model.onnx', $1)", [
      sha256(bytes),
    ]);
    await client.end();

    const artifacts = await PostgresFiles.open(url);
    expect(await counts(url)).toEqual({ blobs: 1, chunks: 2, positions: 3, files: 1, bytes: kChunkBytes + 4 });
    // Stored uncompressed: pglz gains nothing on weights and costs a put most of its time.
    const storage = new pg.Client({ connectionString: url });
    await storage.connect();
    const { rows } = await storage.query(
      "SELECT attstorage FROM pg_attribute WHERE attrelid = 'artifact_chunks'::regclass AND attname = 'data'",
    );
    await storage.end();
    expect(rows).toEqual([{ attstorage: 'e' }]);
    const { size, stream } = await artifacts.open('acme/svc-small-000000000301', 'onnx/model.onnx');
    expect(size).toBe(bytes.length);
    expect(Buffer.concat(await pieces(stream)).equals(bytes)).toBe(true);
    // The same file put again is found by its hash: nothing more is stored.
    await artifacts.put('beta/svc-small-000000000302', await dir({ 'onnx/model.onnx': bytes }));
    expect(await counts(url)).toEqual({ blobs: 1, chunks: 2, positions: 3, files: 2, bytes: kChunkBytes + 4 });
    expect(await artifacts.delete('acme/svc-small-000000000301')).toBe(true);
    expect(await artifacts.delete('beta/svc-small-000000000302')).toBe(true);
    expect(await counts(url)).toEqual({ blobs: 0, chunks: 0, positions: 0, files: 0, bytes: 0 });
    await artifacts.close();
  });
});
