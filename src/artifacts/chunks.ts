import { open } from 'node:fs/promises';

/**
 * A local file's bytes in pieces of exactly `size` bytes (the last one shorter), each a fresh buffer: the
 * PostgreSQL store writes one row per piece, so its chunk boundaries do not depend on how the disk answers reads.
 */
export async function* fileChunks(path: string, size: number): AsyncGenerator<Buffer> {
  const handle = await open(path, 'r');
  try {
    for (;;) {
      const buffer = Buffer.allocUnsafe(size);
      let filled = 0;
      while (filled < size) {
        const { bytesRead } = await handle.read(buffer, filled, size - filled, null);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      if (filled > 0) yield filled === size ? buffer : buffer.subarray(0, filled);
      if (filled < size) return;
    }
  } finally {
    await handle.close();
  }
}
