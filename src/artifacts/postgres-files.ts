// Model files in PostgreSQL, for replicas that share no folder (PostgresHub, postgres-hub.ts, stores them here). Each file is cut at content-defined boundaries
// (cdc.ts) and each chunk is stored once, named by its SHA-256, however many files hold it: every model of a base
// shares its tokenizer files whole, and two models whose ONNX graphs differ only in their heads share every chunk of
// the encoder. A file's bytes are a blob named by their SHA-256, the ordered list of its chunks; a model is a list
// of (name, blob). Bytes move one chunk at a time in both directions: no file is ever whole in memory.
//
// Locking, so that dropping what no model references any more never races a put that is about to reference it.
// Every writer (put and delete alike) takes its locks in one order: the model's file rows, then blobs by hash, then
// chunks by hash; two writers never wait on each other in a circle, so they never deadlock.
// - A put claims each blob and chunk it will reference before it references it: a blob with an upsert that locks
//   its row, a chunk with FOR KEY SHARE (several puts share it) or by inserting it. The lock is held to COMMIT.
// - A writer about to drop blobs or chunks locks them FOR UPDATE first and only then asks, in a later statement
//   (READ COMMITTED: a fresh snapshot), whether anything still references them. A put that claimed one first made
//   that lock wait until the put committed, so the question sees its references; a put that comes after waits for
//   the drop to commit, finds the row gone and stores it anew.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Readable } from 'node:stream';

import type pg from 'pg';

import { SvcError } from '../errors.js';
import { positiveInteger } from '../is.js';
import { type HubFile, type HubFileReader, kChunkBytes, modelFileNames, parseHubId } from '../model/hub.js';
import { inTransaction, openMigratedPool } from '../store/postgres-migrations.js';
import { type CdcOptions, type CdcSizes, cdcChunks, cdcSizes } from './cdc.js';
import { evenPieces, readRange } from './chunks.js';

/** Connections per replica for model files: a few downloads and one upload at once. */
const kPoolSize = 4;

const kSql = Object.freeze({
  // DO UPDATE, not DO NOTHING: it locks the blob's row whether this put inserts it or finds it.
  claimBlob: `INSERT INTO artifact_blobs (sha256, size, chunks) VALUES ($1, $2, $3)
    ON CONFLICT (sha256) DO UPDATE SET size = excluded.size RETURNING (xmax = 0) AS inserted`,
  lockBlob: 'SELECT 1 FROM artifact_blobs WHERE sha256 = $1 FOR UPDATE',
  shareChunk: 'SELECT 1 FROM artifact_chunks WHERE sha256 = $1 FOR KEY SHARE',
  insertChunk: 'INSERT INTO artifact_chunks (sha256, data) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING RETURNING 1',
  lockChunk: 'SELECT 1 FROM artifact_chunks WHERE sha256 = $1 FOR UPDATE',
  oldFiles: 'DELETE FROM artifact_files WHERE model = $1 RETURNING sha256',
  insertFiles: `INSERT INTO artifact_files (model, name, sha256)
    SELECT $1, f.name, f.sha256 FROM unnest($2::text[], $3::text[]) AS f(name, sha256)`,
  insertBlobChunks: `INSERT INTO artifact_blob_chunks (blob, position, chunk, length)
    SELECT $1, c.position - 1, c.chunk, c.length FROM unnest($2::text[], $3::bigint[]) WITH ORDINALITY AS c(chunk, length, position)`,
  unreferencedBlobs: `SELECT b.sha256 FROM artifact_blobs b WHERE b.sha256 = ANY($1::text[])
    AND NOT EXISTS (SELECT 1 FROM artifact_files f WHERE f.sha256 = b.sha256)`,
  chunksOf: 'SELECT DISTINCT chunk FROM artifact_blob_chunks WHERE blob = ANY($1::text[])',
  // Their chunk lists go with them (ON DELETE CASCADE).
  dropBlobs: 'DELETE FROM artifact_blobs WHERE sha256 = ANY($1::text[])',
  dropChunks: `DELETE FROM artifact_chunks c WHERE c.sha256 = ANY($1::text[])
    AND NOT EXISTS (SELECT 1 FROM artifact_blob_chunks b WHERE b.chunk = c.sha256)`,
  file: `SELECT b.sha256, b.size, b.chunks FROM artifact_files f JOIN artifact_blobs b ON b.sha256 = f.sha256
    WHERE f.model = $1 AND f.name = $2`,
  chunk: `SELECT c.data FROM artifact_blob_chunks b JOIN artifact_chunks c ON c.sha256 = b.chunk
    WHERE b.blob = $1 AND b.position = $2`,
  list: `SELECT f.name, b.size FROM artifact_files f JOIN artifact_blobs b ON b.sha256 = f.sha256
    WHERE f.model = $1 ORDER BY f.name COLLATE "C"`,
});

export interface PostgresFilesOptions {
  /** Bytes per piece a stream delivers, whatever the stored chunks' sizes; default {@link kChunkBytes}. */
  chunkBytes?: number;
  /** Where files are cut into stored chunks; the defaults are `kCdcDefaults` (256 KiB / 1 MiB / 4 MiB). */
  cdc?: CdcOptions;
}

/** One chunk of a local file: its hash, where it starts, its length. */
interface ChunkRef {
  sha256: string;
  offset: number;
  length: number;
}

/** One local file about to be stored: its name in the model, where it is, its hash, size and chunks. */
interface Upload {
  name: string;
  path: string;
  sha256: string;
  size: number;
  chunks: ChunkRef[];
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** Cuts a local file into chunks and hashes them and the whole, keeping only the hashes. */
async function scanFile(path: string, sizes: CdcSizes): Promise<Omit<Upload, 'name' | 'path'>> {
  const whole = createHash('sha256');
  const chunks: ChunkRef[] = [];
  let offset = 0;
  for await (const chunk of cdcChunks(path, sizes)) {
    whole.update(chunk);
    chunks.push({ sha256: sha256(chunk), offset, length: chunk.length });
    offset += chunk.length;
  }
  return { sha256: whole.digest('hex'), size: offset, chunks };
}

const byHash = (hashes: Iterable<string>): string[] => [...new Set(hashes)].sort();

/**
 * The model files in PostgreSQL under their hub ids, PostgresHub's storage; it migrates the database like the
 * `PostgresStore` does (same migrations, same advisory lock), so either may open a fresh database first. Every method
 * rejects with `SvcError('invalid_request')` for a malformed hub id.
 */
export class PostgresFiles {
  readonly #pool: pg.Pool;
  readonly #chunkBytes: number;
  readonly #cdc: CdcSizes;

  private constructor(pool: pg.Pool, chunkBytes: number, cdc: CdcSizes) {
    this.#pool = pool;
    this.#chunkBytes = chunkBytes;
    this.#cdc = cdc;
  }

  static async open(url: string, options: PostgresFilesOptions = {}): Promise<PostgresFiles> {
    const chunkBytes = positiveInteger(options.chunkBytes ?? kChunkBytes, 'options.chunkBytes');
    const cdc = cdcSizes(options.cdc);
    const pool = await openMigratedPool(url, kPoolSize);
    return new PostgresFiles(pool, chunkBytes, cdc);
  }

  /**
   * Makes the files under the local directory `dir` the model's files, replacing the previous ones in one
   * transaction: a reader sees the old set or the new one, never a mix. Files are read in chunks, never whole.
   */
  async put(id: string, dir: string): Promise<void> {
    parseHubId(id);
    // Cut and hashed before the transaction: a chunk another file already stored is neither read twice nor sent.
    const uploads: Upload[] = [];
    for (const name of await modelFileNames(dir)) {
      const path = join(dir, ...name.split('/'));
      uploads.push({ name, path, ...(await scanFile(path, this.#cdc)) });
    }
    await inTransaction(this.#pool, (client) => this.#replace(client, id, uploads));
  }

  /** Opens one file; rejects with `SvcError('not_found')` when the model or the file does not exist. */
  async open(id: string, name: string): Promise<HubFileReader> {
    parseHubId(id);
    const { rows } = await this.#pool.query<{ sha256: string; size: number; chunks: number }>(kSql.file, [id, name]);
    if (rows.length === 0) {
      await this.list(id); // not_found for the model itself before the file
      throw new SvcError('not_found', `model '${id}' has no file '${String(name)}'`);
    }
    const { sha256: blob, size, chunks } = rows[0];
    const pool = this.#pool;
    async function* read(): AsyncGenerator<Buffer> {
      for (let position = 0; position < chunks; position += 1) {
        const chunk = await pool.query<{ data: Buffer }>(kSql.chunk, [blob, position]);
        // A delete between the lookup and this read took the blob away: the download fails, it does not shorten.
        if (chunk.rows.length === 0) throw new SvcError('not_found', `model '${id}' has no file '${name}' any more`);
        yield chunk.rows[0].data;
      }
    }
    // objectMode off and one piece buffered: the next row is fetched only once the reader took the last piece of
    // this one.
    return { size, stream: Readable.from(evenPieces(read(), this.#chunkBytes), { objectMode: false, highWaterMark: 1 }) };
  }

  /** The model's files sorted by name; rejects with `SvcError('not_found')` when the model does not exist. */
  async list(id: string): Promise<HubFile[]> {
    parseHubId(id);
    const { rows } = await this.#pool.query<HubFile>(kSql.list, [id]);
    if (rows.length === 0) throw new SvcError('not_found', `model '${id}' is not in the hub`, { param: 'model' });
    return rows.map((r) => ({ name: r.name, size: r.size }));
  }

  /** Removes the model's files; resolves to false when there were none. */
  async delete(id: string): Promise<boolean> {
    parseHubId(id);
    return inTransaction(this.#pool, (client) => this.#replace(client, id, []));
  }

  async close(): Promise<void> {
    if (!this.#pool.ended) await this.#pool.end();
  }

  /**
   * Makes `uploads` the model's files (none: the model is deleted) and drops the blobs and chunks nothing references
   * any more, taking locks in the order the top of this file states. Resolves to whether the model had files.
   */
  async #replace(client: pg.PoolClient, id: string, uploads: Upload[]): Promise<boolean> {
    const old = (await client.query<{ sha256: string }>(kSql.oldFiles, [id])).rows.map((r) => r.sha256);
    const fresh = new Map(uploads.map((u) => [u.sha256, u]));
    const candidates = byHash(old.filter((hash) => !fresh.has(hash)));

    const inserted: Upload[] = [];
    for (const hash of byHash([...fresh.keys(), ...candidates])) {
      const upload = fresh.get(hash);
      if (upload === undefined) {
        await client.query(kSql.lockBlob, [hash]);
        continue;
      }
      const { rows } = await client.query<{ inserted: boolean }>(kSql.claimBlob, [hash, upload.size, upload.chunks.length]);
      // A blob found stored keeps its chunks referenced: nothing of it is read or sent.
      if (rows[0].inserted) inserted.push(upload);
    }
    const orphans =
      candidates.length === 0
        ? []
        : (await client.query<{ sha256: string }>(kSql.unreferencedBlobs, [candidates])).rows.map((r) => r.sha256);

    const wanted = new Map<string, { path: string; chunk: ChunkRef }>();
    for (const upload of inserted) {
      for (const chunk of upload.chunks) if (!wanted.has(chunk.sha256)) wanted.set(chunk.sha256, { path: upload.path, chunk });
    }
    const doomed =
      orphans.length === 0
        ? []
        : (await client.query<{ chunk: string }>(kSql.chunksOf, [orphans])).rows.map((r) => r.chunk).filter((hash) => !wanted.has(hash));
    for (const hash of byHash([...wanted.keys(), ...doomed])) {
      const source = wanted.get(hash);
      if (source === undefined) await client.query(kSql.lockChunk, [hash]);
      else await claimChunk(client, hash, source.path, source.chunk);
    }

    if (orphans.length > 0) await client.query(kSql.dropBlobs, [orphans]);
    for (const upload of inserted) {
      await client.query(kSql.insertBlobChunks, [upload.sha256, upload.chunks.map((c) => c.sha256), upload.chunks.map((c) => c.length)]);
    }
    if (uploads.length > 0) await client.query(kSql.insertFiles, [id, uploads.map((u) => u.name), uploads.map((u) => u.sha256)]);
    if (doomed.length > 0) await client.query(kSql.dropChunks, [doomed]);
    return old.length > 0;
  }
}

/** Holds a share of a stored chunk's row, or stores the chunk from the local file when it is not stored yet. */
async function claimChunk(client: pg.PoolClient, hash: string, path: string, chunk: ChunkRef): Promise<void> {
  for (;;) {
    if ((await client.query(kSql.shareChunk, [hash])).rowCount === 1) return;
    const data = await readRange(path, chunk.offset, chunk.length);
    // The file changed between cutting and sending: the row would lie about its name.
    if (sha256(data) !== hash) throw new SvcError('internal', `${path} changed while it was being stored`);
    if ((await client.query(kSql.insertChunk, [hash, data])).rowCount === 1) return;
    // Another put stored the same chunk between the two statements and committed: take a share of its row.
  }
}
