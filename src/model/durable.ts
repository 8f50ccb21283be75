// Writes that survive a power cut: data reaches the disk before the rename that publishes it, and the rename
// reaches the disk before we say it happened. Without the first fsync a crash can leave a published name pointing
// at an empty or partial file (ext4 and xfs reorder data and metadata); without the directory's fsync the rename
// itself can be lost.
import { open, readdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** Flushes one file's or directory's data and metadata to the disk. */
export async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Flushes every file and directory under `dir`, then `dir` itself: a whole model before its publishing rename. */
export async function fsyncTree(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await fsyncTree(path);
    else if (entry.isFile()) await fsyncPath(path);
  }
  await fsyncPath(dir);
}

/**
 * Renames `from` to `to` once `from` is on the disk, then flushes the directory holding `to`, so that after a crash
 * `to` is either the old file or the whole new one.
 */
export async function renameDurably(from: string, to: string): Promise<void> {
  await fsyncPath(from);
  await rename(from, to);
  await fsyncPath(dirname(to));
}

/**
 * Writes `file` through a temporary name, so a reader never sees half a file, and durably.
 *
 * @example
 * ```ts
 * await writeFileDurably('./model/manifest.json', '{"format":1}\n');
 * ```
 */
export async function writeFileDurably(file: string, data: string | Uint8Array): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, data);
  await renameDurably(temporary, file);
}
