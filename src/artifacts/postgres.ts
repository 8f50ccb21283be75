// Model files in PostgreSQL, for replicas that share no folder. A file's bytes are a blob named by their SHA-256,
// stored once in 1 MiB rows however many models hold it (every model of a base shares its tokenizer files, and
// models with equal bytes share everything); a model is a list of (name, hash). Bytes move one chunk at a time in
// both directions: no file is ever whole in memory.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Readable } from 'node:stream';

import type pg from 'pg';

import { SvcError } from '../errors.js';
import { positiveInteger } from '../is.js';
import { modelFileNames, parseHubId } from '../model/hub.js';
import { inTransaction, openMigratedPool } from '../store/postgres-migrations.js';
import { fileChunks } from './chunks.js';
import { type ArtifactFile, type ArtifactReader, type ArtifactStore, kChunkBytes } from './types.js';

/** Connections per replica for model files: a few downloads and one upload at once. */
const kPoolSize = 4;

const kSql = Object.freeze({
  // DO UPDATE, not DO NOTHING: it locks the blob's row until the model's files reference it, so a delete running
  // at the same moment cannot drop a blob this put counts on (it waits, or the put inserts the blob anew).
  claimBlob: `INSERT INTO artifact_blobs (sha256, size, chunks) VALUES ($1, $2, $3)
    ON CONFLICT (sha256) DO UPDATE SET size = excluded.size RETURNING (xmax = 0) AS inserted`,
  insertChunk: 'INSERT INTO artifact_chunks (sha256, position, data) VALUES ($1, $2, $3)',
  oldFiles: 'DELETE FROM artifact_files WHERE model = $1 RETURNING sha256',
  insertFiles: `INSERT INTO artifact_files (model, name, sha256)
    SELECT $1, f.name, f.sha256 FROM unnest($2::text[], $3::text[]) AS f(name, sha256)`,
  // Blobs that no model references any more; their chunks go with them (ON DELETE CASCADE).
  dropOrphans: `DELETE FROM artifact_blobs b WHERE b.sha256 = ANY($1::text[])
    AND NOT EXISTS (SELECT 1 FROM artifact_files f WHERE f.sha256 = b.sha256)`,
  file: `SELECT b.sha256, b.size, b.chunks FROM artifact_files f JOIN artifact_blobs b ON b.sha256 = f.sha256
    WHERE f.model = $1 AND f.name = $2`,
  chunk: 'SELECT data FROM artifact_chunks WHERE sha256 = $1 AND position = $2',
  list: `SELECT f.name, b.size FROM artifact_files f JOIN artifact_blobs b ON b.sha256 = f.sha256
    WHERE f.model = $1 ORDER BY f.name COLLATE "C"`,
});

export interface PostgresArtifactsOptions {
  /** Bytes per stored row and per piece a stream delivers; default {@link kChunkBytes}. */
  chunkBytes?: number;
}

/** One local file about to be stored: its name in the model, where it is, its hash and size. */
interface Upload {
  name: string;
  path: string;
  sha256: string;
  size: number;
}

async function hashFile(path: string, chunkBytes: number): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of fileChunks(path, chunkBytes)) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { sha256: hash.digest('hex'), size };
}

/**
 * An {@link ArtifactStore} in PostgreSQL; it migrates the database like the `PostgresStore` does (same migrations,
 * same advisory lock), so either may open a fresh database first.
 *
 * @example
 * ```ts
 * const artifacts = await PostgresArtifacts.open('postgres://svc@db.internal/svc');
 * await artifacts.put('acme/svc-small-1a2b3c4d5e6f', './trained');
 * const { size, stream } = await artifacts.open('acme/svc-small-1a2b3c4d5e6f', 'onnx/model.onnx');
 * stream.pipe(createWriteStream('./model.onnx'));
 * ```
 */
export class PostgresArtifacts implements ArtifactStore {
  readonly #pool: pg.Pool;
  readonly #chunkBytes: number;

  private constructor(pool: pg.Pool, chunkBytes: number) {
    this.#pool = pool;
    this.#chunkBytes = chunkBytes;
  }

  static async open(url: string, options: PostgresArtifactsOptions = {}): Promise<PostgresArtifacts> {
    const chunkBytes = positiveInteger(options.chunkBytes ?? kChunkBytes, 'options.chunkBytes');
    const pool = await openMigratedPool(url, kPoolSize);
    return new PostgresArtifacts(pool, chunkBytes);
  }

  async put(id: string, dir: string): Promise<void> {
    parseHubId(id);
    // Hashed before the transaction: a blob another model already stored is not read twice nor sent at all.
    const uploads: Upload[] = [];
    for (const name of await modelFileNames(dir)) {
      const path = join(dir, ...name.split('/'));
      uploads.push({ name, path, ...(await hashFile(path, this.#chunkBytes)) });
    }
    // Blobs claimed in hash order: two puts sharing blobs lock them in the same order and never deadlock.
    const byHash = [...uploads].sort((a, b) => (a.sha256 < b.sha256 ? -1 : a.sha256 > b.sha256 ? 1 : 0));
    await inTransaction(this.#pool, async (client) => {
      for (const upload of byHash) {
        const chunks = Math.ceil(upload.size / this.#chunkBytes);
        const { rows } = await client.query<{ inserted: boolean }>(kSql.claimBlob, [upload.sha256, upload.size, chunks]);
        if (!rows[0].inserted) continue;
        const hash = createHash('sha256');
        let position = 0;
        for await (const chunk of fileChunks(upload.path, this.#chunkBytes)) {
          hash.update(chunk);
          await client.query(kSql.insertChunk, [upload.sha256, position, chunk]);
          position += 1;
        }
        // The file changed between hashing and sending: its rows would lie about their name.
        if (hash.digest('hex') !== upload.sha256 || position !== chunks) {
          throw new SvcError('internal', `${upload.path} changed while it was being stored`);
        }
      }
      const old = await client.query<{ sha256: string }>(kSql.oldFiles, [id]);
      await client.query(kSql.insertFiles, [id, uploads.map((u) => u.name), uploads.map((u) => u.sha256)]);
      await client.query(kSql.dropOrphans, [old.rows.map((r) => r.sha256)]);
    });
  }

  async open(id: string, name: string): Promise<ArtifactReader> {
    parseHubId(id);
    const { rows } = await this.#pool.query<{ sha256: string; size: number; chunks: number }>(kSql.file, [id, name]);
    if (rows.length === 0) {
      await this.list(id); // not_found for the model itself before the file
      throw new SvcError('not_found', `model '${id}' has no file '${String(name)}'`);
    }
    const { sha256, size, chunks } = rows[0];
    const pool = this.#pool;
    async function* read(): AsyncGenerator<Buffer> {
      for (let position = 0; position < chunks; position += 1) {
        const chunk = await pool.query<{ data: Buffer }>(kSql.chunk, [sha256, position]);
        // A delete between the lookup and this read took the blob away: the download fails, it does not shorten.
        if (chunk.rows.length === 0) throw new SvcError('not_found', `model '${id}' has no file '${name}' any more`);
        yield chunk.rows[0].data;
      }
    }
    // objectMode off and one chunk buffered: the next row is fetched only once the reader took the last one.
    return { size, stream: Readable.from(read(), { objectMode: false, highWaterMark: 1 }) };
  }

  async list(id: string): Promise<ArtifactFile[]> {
    parseHubId(id);
    const { rows } = await this.#pool.query<ArtifactFile>(kSql.list, [id]);
    if (rows.length === 0) throw new SvcError('not_found', `model '${id}' is not in the hub`, { param: 'model' });
    return rows.map((r) => ({ name: r.name, size: r.size }));
  }

  async delete(id: string): Promise<boolean> {
    parseHubId(id);
    return inTransaction(this.#pool, async (client) => {
      const old = await client.query<{ sha256: string }>(kSql.oldFiles, [id]);
      await client.query(kSql.dropOrphans, [old.rows.map((r) => r.sha256)]);
      return old.rows.length > 0;
    });
  }

  async close(): Promise<void> {
    if (!this.#pool.ended) await this.#pool.end();
  }
}
