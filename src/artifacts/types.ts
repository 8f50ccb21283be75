// Where model files live, shared by every replica: a folder (the default; a shared volume works) or the database.
import type { Readable } from 'node:stream';

/** One file of a model, by its name inside the model directory (`/`-separated, e.g. `onnx/model.onnx`). */
export interface ArtifactFile {
  name: string;
  /** Bytes. */
  size: number;
}

/** One file opened for reading: its size (for `content-length`) and its bytes as a stream. */
export interface ArtifactReader {
  size: number;
  /** The bytes, in pieces of at most the store's chunk size: a file is never whole in memory. */
  stream: Readable;
}

/**
 * The model files of every model, by hub id (`<org>/<model_id>`). Implementations: {@link DirectoryArtifacts}
 * (a folder, today's hub layout) and {@link PostgresArtifacts} (chunks in the database, equal byte runs stored
 * once, whichever files hold them). Every method rejects with `SvcError('invalid_request')` for a malformed hub id.
 */
export interface ArtifactStore {
  /**
   * Makes the files under the local directory `dir` the model's files, replacing the previous ones in one step:
   * a reader sees the old set or the new one, never a mix. Files are read as streams, never whole.
   */
  put(id: string, dir: string): Promise<void>;
  /** Opens one file; rejects with `SvcError('not_found')` when the model or the file does not exist. */
  open(id: string, name: string): Promise<ArtifactReader>;
  /** The model's files sorted by name; rejects with `SvcError('not_found')` when the model does not exist. */
  list(id: string): Promise<ArtifactFile[]>;
  /** Removes the model's files; resolves to false when there were none. */
  delete(id: string): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Pieces files are streamed in: 1 MiB, small next to a row's limits, few pieces for a 90 MB encoder; also the size
 * PostgreSQL's content-defined chunks aim at.
 */
export const kChunkBytes = 1024 * 1024;
