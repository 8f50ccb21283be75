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

/** `length` bytes of a local file from `offset`, or fewer when the file ends first. */
export async function readRange(path: string, offset: number, length: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(length);
    let filled = 0;
    while (filled < length) {
      const { bytesRead } = await handle.read(buffer, filled, length - filled, offset + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return buffer.subarray(0, filled);
  } finally {
    await handle.close();
  }
}

/**
 * The bytes of `source` again in pieces of exactly `size` (the last one shorter), whatever sizes they arrive in: a
 * store's streams keep one piece size however its rows are cut. Holds one arriving buffer and one piece at most.
 */
export async function* evenPieces(source: AsyncIterable<Buffer>, size: number): AsyncGenerator<Buffer> {
  let carry: Buffer[] = [];
  let carried = 0;
  for await (const buffer of source) {
    let from = 0;
    if (carried > 0) {
      from = Math.min(buffer.length, size - carried);
      carry.push(buffer.subarray(0, from));
      carried += from;
      if (carried < size) continue;
      yield Buffer.concat(carry, size);
      carry = [];
      carried = 0;
    }
    for (; buffer.length - from >= size; from += size) yield buffer.subarray(from, from + size);
    if (from < buffer.length) {
      carry = [buffer.subarray(from)];
      carried = buffer.length - from;
    }
  }
  if (carried > 0) yield Buffer.concat(carry, carried);
}
