import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { evenPieces, readRange } from '../../src/artifacts/chunks.js';

async function* from(sizes: number[]): AsyncGenerator<Buffer> {
  let next = 0;
  for (const size of sizes) {
    yield Buffer.from(Array.from({ length: size }, () => (next += 1) % 256));
  }
}

async function collect(source: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const piece of source) out.push(piece);
  return out;
}

describe('evenPieces', () => {
  it('gives the bytes back in pieces of exactly the size, whatever sizes they arrive in, the last one shorter', async () => {
    const arriving = [3, 10, 1, 1, 7, 0, 2];
    const pieces = await collect(evenPieces(from(arriving), 4));
    expect(pieces.map((p) => p.length)).toEqual([4, 4, 4, 4, 4, 4]);
    expect(Buffer.concat(pieces).equals(Buffer.concat(await collect(from(arriving))))).toBe(true);
    expect((await collect(evenPieces(from([5, 4]), 4))).map((p) => p.length)).toEqual([4, 4, 1]);
    expect(await collect(evenPieces(from([]), 4))).toEqual([]);
  });
});

describe('readRange', () => {
  it('reads the bytes at an offset, fewer where the file ends', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-range-'));
    await writeFile(join(dir, 'f'), 'abcdefgh');
    expect((await readRange(join(dir, 'f'), 2, 3)).toString()).toBe('cde');
    expect((await readRange(join(dir, 'f'), 6, 5)).toString()).toBe('gh');
    await rm(dir, { recursive: true, force: true });
  });
});
