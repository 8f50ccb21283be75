// Content-defined chunking (FastCDC's gear hash with normalized chunking): a file is cut where the bytes around the
// cut say so, not at fixed offsets, so a run of bytes two files share (the base encoder inside two models' ONNX
// graphs) is cut the same way in both and its chunks are stored once, wherever the run sits in each file. A byte
// inserted near the start changes the first chunk or two; the cuts after it find the same bytes and fall in the same
// places.
import { seededRandom } from '../random.js';
import { positiveInteger } from '../is.js';
import { fileChunks } from './chunks.js';
import { kChunkBytes } from '../model/hub.js';

export interface CdcOptions {
  /** No cut before this many bytes (only a file's last chunk may be shorter); default 256 KiB. */
  minBytes?: number;
  /** The size cuts aim at, a power of two; default 1 MiB. */
  avgBytes?: number;
  /** A cut at this many bytes at the latest; default 4 MiB. */
  maxBytes?: number;
}

export type CdcSizes = Required<CdcOptions>;

/** Bytes asked of the disk at a time; cuts do not depend on it. */
const kReadBytes = kChunkBytes;

/**
 * 256 KiB / 1 MiB / 4 MiB: a 90 MB graph in about 90 rows, each well under a row's limits, and a chunk small enough
 * that the bytes two models do not share (a head is a few KiB) cost about one average chunk.
 */
export const kCdcDefaults: CdcSizes = Object.freeze({ minBytes: 256 * 1024, avgBytes: kChunkBytes, maxBytes: 4 * 1024 * 1024 });

/**
 * The gear table: one 32-bit number per byte value, drawn from a fixed seed. Changing the seed moves every cut, so
 * chunks stored before no longer match new ones (nothing breaks; only sharing with old rows is lost).
 */
const kGearSeed = 0x6765_6172; // 'gear'
const kGear: Uint32Array = (() => {
  const draw = seededRandom(kGearSeed);
  return Uint32Array.from({ length: 256 }, () => Math.floor(draw() * 2 ** 32));
})();

/** The mask of the top `bits` bits of the 32-bit hash: the top bits mix the last 32 bytes, the low ones only a few. */
function topBits(bits: number): number {
  return (0xffff_ffff << (32 - bits)) | 0;
}

/** Checks sizes and fills defaults: min < avg < max, avg a power of two from 64 B to 256 MiB. */
export function cdcSizes(options: CdcOptions = {}): CdcSizes {
  const minBytes = positiveInteger(options.minBytes ?? kCdcDefaults.minBytes, 'options.minBytes');
  const avgBytes = positiveInteger(options.avgBytes ?? kCdcDefaults.avgBytes, 'options.avgBytes');
  const maxBytes = positiveInteger(options.maxBytes ?? kCdcDefaults.maxBytes, 'options.maxBytes');
  // Normalized chunking masks log2(avg) +- 2 bits of a 32-bit hash: both must fit.
  if (avgBytes < 64 || avgBytes > 2 ** 28 || (avgBytes & (avgBytes - 1)) !== 0) {
    throw new RangeError('options.avgBytes must be a power of two from 64 to 268435456');
  }
  if (minBytes >= avgBytes || avgBytes >= maxBytes) {
    throw new RangeError('options.minBytes, options.avgBytes and options.maxBytes must be increasing');
  }
  return { minBytes, avgBytes, maxBytes };
}

/**
 * Where the chunk in progress ends. State carries across the buffers a file is read in, so the cuts do not depend on
 * how the disk answers reads.
 */
class Cutter {
  readonly #min: number;
  readonly #avg: number;
  readonly #max: number;
  // Normalized chunking: a harder mask before the average size and an easier one after it pull sizes towards it.
  readonly #hard: number;
  readonly #easy: number;
  #size = 0;
  #hash = 0;

  constructor(sizes: CdcSizes) {
    this.#min = sizes.minBytes;
    this.#avg = sizes.avgBytes;
    this.#max = sizes.maxBytes;
    const bits = Math.log2(sizes.avgBytes);
    this.#hard = topBits(bits + 2);
    this.#easy = topBits(bits - 2);
  }

  /** The end (exclusive) of the chunk in progress inside `buf` from `from`, or -1 when it goes on past `buf`. */
  cut(buf: Uint8Array, from: number): number {
    // The chunk's size before buf[i] is base + i.
    const base = this.#size - from;
    let hash = this.#hash;
    // The first min bytes are never hashed: no cut may fall there, and skipping them is most of FastCDC's speed.
    let i = Math.min(buf.length, Math.max(from, this.#min - base));
    const hardEnd = Math.min(buf.length, this.#avg - base);
    for (; i < hardEnd; i += 1) {
      hash = ((hash << 1) + kGear[buf[i]]) | 0;
      if ((hash & this.#hard) === 0) return this.#end(i + 1);
    }
    const easyEnd = Math.min(buf.length, this.#max - base);
    for (; i < easyEnd; i += 1) {
      hash = ((hash << 1) + kGear[buf[i]]) | 0;
      if ((hash & this.#easy) === 0) return this.#end(i + 1);
    }
    if (base + i === this.#max) return this.#end(i);
    this.#size = base + i;
    this.#hash = hash;
    return -1;
  }

  #end(at: number): number {
    this.#size = 0;
    this.#hash = 0;
    return at;
  }
}

/**
 * A local file's bytes cut at content-defined boundaries, each chunk a buffer of its own; never more than one chunk
 * and one read of the file in memory.
 *
 * @example
 * ```ts
 * for await (const chunk of cdcChunks('./trained/onnx/model.onnx', cdcSizes())) console.log(chunk.length);
 * // 1843671, 412907, 1226188, ... (each from 256 KiB to 4 MiB, the last one maybe shorter)
 * ```
 */
export async function* cdcChunks(path: string, sizes: CdcSizes): AsyncGenerator<Buffer> {
  const cutter = new Cutter(sizes);
  let parts: Buffer[] = [];
  for await (const read of fileChunks(path, kReadBytes)) {
    let from = 0;
    while (from < read.length) {
      const end = cutter.cut(read, from);
      if (end < 0) {
        parts.push(from === 0 ? read : read.subarray(from));
        break;
      }
      parts.push(read.subarray(from, end));
      yield parts.length === 1 ? parts[0] : Buffer.concat(parts);
      parts = [];
      from = end;
    }
  }
  if (parts.length > 0) yield parts.length === 1 ? parts[0] : Buffer.concat(parts);
}
