import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type CdcSizes, cdcChunks, cdcSizes, kCdcDefaults } from '../../src/artifacts/cdc.js';
import { seededBytes } from '../_support/seeded-bytes.js';

// Small sizes keep the files small; the cutting rules are the same at any scale.
const kSmall = cdcSizes({ minBytes: 1024, avgBytes: 4096, maxBytes: 16384 });

let root: string;
let files = 0;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-cdc-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function cut(bytes: Buffer, sizes: CdcSizes): Promise<Buffer[]> {
  const path = join(root, `f${(files += 1)}`);
  await writeFile(path, bytes);
  const out: Buffer[] = [];
  for await (const chunk of cdcChunks(path, sizes)) out.push(chunk);
  return out;
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

describe('cdcChunks', () => {
  it('cuts the same bytes at the same places, every time, and gives back every byte', async () => {
    const bytes = seededBytes(1, 64 * 1024);
    const chunks = await cut(bytes, kSmall);
    expect(chunks.map((c) => c.length)).toEqual([4787, 4805, 6586, 4986, 4737, 4647, 5279, 4150, 4305, 6396, 4292, 4562, 4396, 1608]);
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
    expect((await cut(bytes, kSmall)).map(sha256)).toEqual(chunks.map(sha256));
  });

  it('with the default sizes, cuts that do not depend on the 1 MiB reads the file is read in', async () => {
    const bytes = seededBytes(2, 6 * 1024 * 1024);
    const chunks = await cut(bytes, cdcSizes());
    expect(chunks.map((c) => c.length)).toEqual([1295438, 1021763, 1642121, 1132632, 1199502]);
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
    expect(kCdcDefaults).toEqual({ minBytes: 256 * 1024, avgBytes: 1024 * 1024, maxBytes: 4 * 1024 * 1024 });
  });

  it('a byte inserted near the start changes the first chunk only: every later chunk is the same bytes', async () => {
    const bytes = seededBytes(1, 64 * 1024);
    const inserted = Buffer.concat([bytes.subarray(0, 100), Buffer.from([7]), bytes.subarray(100)]);
    const before = await cut(bytes, kSmall);
    const after = await cut(inserted, kSmall);
    expect(after[0].length).toBe(before[0].length + 1);
    expect(sha256(after[0])).not.toBe(sha256(before[0]));
    expect(after.slice(1).map(sha256)).toEqual(before.slice(1).map(sha256));
  });

  it('never cuts before the minimum nor after the maximum: bytes that never match are cut at the maximum', async () => {
    // All zeros: the rolling hash settles on one value that no mask accepts.
    expect((await cut(Buffer.alloc(40_000), kSmall)).map((c) => c.length)).toEqual([16384, 16384, 7232]);
    const lengths = (await cut(seededBytes(3, 256 * 1024), kSmall)).map((c) => c.length);
    expect(lengths.slice(0, -1).every((n) => n > kSmall.minBytes && n <= kSmall.maxBytes)).toBe(true);
    expect(lengths.reduce((a, b) => a + b)).toBe(256 * 1024);
  });

  it('an empty file has no chunk; a file up to the minimum is one chunk', async () => {
    expect(await cut(Buffer.alloc(0), kSmall)).toEqual([]);
    expect((await cut(Buffer.from('tiny'), kSmall)).map((c) => c.toString())).toEqual(['tiny']);
    expect((await cut(seededBytes(4, 1024), kSmall)).map((c) => c.length)).toEqual([1024]);
  });
});

describe('cdcSizes', () => {
  it('fills the defaults and refuses sizes that cannot cut', () => {
    expect(cdcSizes({ avgBytes: 2 * 1024 * 1024 })).toEqual({ minBytes: 256 * 1024, avgBytes: 2 * 1024 * 1024, maxBytes: 4 * 1024 * 1024 });
    expect(() => cdcSizes({ avgBytes: 3000 })).toThrow(new RangeError('options.avgBytes must be a power of two from 64 to 268435456'));
    expect(() => cdcSizes({ minBytes: 2 * 1024 * 1024 })).toThrow(
      new RangeError('options.minBytes, options.avgBytes and options.maxBytes must be increasing'),
    );
    expect(() => cdcSizes({ maxBytes: 0 })).toThrow(new RangeError('options.maxBytes must be a positive integer'));
  });
});
