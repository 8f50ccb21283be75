import { readFileSync } from 'node:fs';

import { SvcError } from '../errors.js';

/** Element types a safetensors header may name; the float ones can be read as fp32. */
export type SafetensorsDtype = 'F16' | 'BF16' | 'F32' | 'F64' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'BOOL';

/** One tensor's header entry: its element type, shape and where its bytes are. */
export interface SafetensorsTensorInfo {
  readonly dtype: SafetensorsDtype;
  readonly shape: readonly number[];
  /** Byte range inside the data section (after the header). */
  readonly begin: number;
  readonly end: number;
}

const kBytesPerElement: Readonly<Record<SafetensorsDtype, number>> = Object.freeze({
  F16: 2,
  BF16: 2,
  F32: 4,
  F64: 8,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
});

// Every fp16 bit pattern decoded once (256 KiB): exact, and a table lookup per element is the
// fastest way to widen ~23M weights in JavaScript.
let fp16Table: Float32Array | undefined;

/**
 * Decodes one IEEE 754 half-precision bit pattern exactly, subnormals, infinities and NaN included.
 *
 * @example
 * ```ts
 * float16ToFloat32(0x3c00); // 1
 * float16ToFloat32(0x0001); // 5.960464477539063e-8 (smallest subnormal, 2^-24)
 * float16ToFloat32(0xfc00); // -Infinity
 * ```
 */
export function float16ToFloat32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1024 + mantissa) * 2 ** (exponent - 25);
}

function halfTable(): Float32Array {
  if (!fp16Table) {
    fp16Table = new Float32Array(65536);
    for (let bits = 0; bits < 65536; bits++) fp16Table[bits] = float16ToFloat32(bits);
  }
  return fp16Table;
}

/**
 * Widens little-endian fp16 bytes to fp32, exactly.
 *
 * @example
 * ```ts
 * decodeFloat16(new Uint8Array([0x00, 0x3c, 0x00, 0xc0])); // Float32Array [1, -2]
 * ```
 */
export function decodeFloat16(bytes: Uint8Array): Float32Array {
  const table = halfTable();
  const count = bytes.length >> 1;
  const out = new Float32Array(count);
  for (let i = 0, j = 0; i < count; i++, j += 2) out[i] = table[bytes[j] | (bytes[j + 1] << 8)];
  return out;
}

/**
 * Widens little-endian bf16 bytes to fp32 (bf16 is the top half of an fp32, so this is exact).
 *
 * @example
 * ```ts
 * decodeBFloat16(new Uint8Array([0x80, 0x3f])); // Float32Array [1]
 * ```
 */
export function decodeBFloat16(bytes: Uint8Array): Float32Array {
  const count = bytes.length >> 1;
  const out = new Float32Array(count);
  const words = new Uint32Array(out.buffer);
  for (let i = 0, j = 0; i < count; i++, j += 2) words[i] = (bytes[j] | (bytes[j + 1] << 8)) << 16;
  return out;
}

/**
 * A safetensors file held in memory: the parsed header and the raw data section.
 *
 * @example
 * ```ts
 * const file = SafetensorsFile.open(resolveBaseModel('svc-small').weightsFile);
 * file.info('embeddings.word_embeddings.weight'); // { dtype: 'F16', shape: [30522, 384], ... }
 * file.float32('embeddings.LayerNorm.weight').length; // 384
 * ```
 */
export class SafetensorsFile {
  readonly metadata: Readonly<Record<string, string>>;
  readonly #tensors: Map<string, SafetensorsTensorInfo>;
  readonly #data: Uint8Array;

  private constructor(tensors: Map<string, SafetensorsTensorInfo>, metadata: Record<string, string>, data: Uint8Array) {
    this.#tensors = tensors;
    this.metadata = Object.freeze(metadata);
    this.#data = data;
  }

  /** Reads and parses a file. */
  static open(path: string): SafetensorsFile {
    let buffer: Uint8Array;
    try {
      buffer = readFileSync(path);
    } catch (cause) {
      throw new SvcError('internal', `cannot read safetensors file ${path}`, { cause });
    }
    return SafetensorsFile.parse(buffer, path);
  }

  /** Parses safetensors bytes: an 8-byte little-endian header length, the JSON header, the data. */
  static parse(buffer: Uint8Array, source = 'buffer'): SafetensorsFile {
    const fail = (why: string): never => {
      throw new SvcError('internal', `invalid safetensors (${source}): ${why}`);
    };
    // A plain Uint8Array view: a Buffer's slice() would share memory instead of copying.
    buffer = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    if (buffer.length < 8) fail('shorter than its 8-byte header length');
    const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    const headerLength = Number(view.getBigUint64(0, true));
    if (8 + headerLength > buffer.length) fail(`header length ${headerLength} exceeds the file`);
    let header: Record<string, unknown>;
    try {
      header = JSON.parse(new TextDecoder().decode(buffer.subarray(8, 8 + headerLength))) as Record<string, unknown>;
    } catch (cause) {
      throw new SvcError('internal', `invalid safetensors (${source}): header is not JSON`, { cause });
    }
    const data = buffer.subarray(8 + headerLength);
    const tensors = new Map<string, SafetensorsTensorInfo>();
    let metadata: Record<string, string> = {};
    for (const [name, value] of Object.entries(header)) {
      if (name === '__metadata__') {
        metadata = { ...(value as Record<string, string>) };
        continue;
      }
      const entry = value as { dtype?: string; shape?: number[]; data_offsets?: [number, number] };
      const dtype = entry.dtype as SafetensorsDtype;
      if (!Object.hasOwn(kBytesPerElement, dtype)) fail(`tensor ${name} has unsupported dtype ${entry.dtype}`);
      const shape = entry.shape ?? [];
      const [begin, end] = entry.data_offsets ?? [0, -1];
      const elements = shape.reduce((product, dim) => product * dim, 1);
      if (end - begin !== elements * kBytesPerElement[dtype] || begin < 0 || end > data.length) {
        fail(`tensor ${name} has data_offsets [${begin}, ${end}] that do not fit its shape [${shape.join(', ')}]`);
      }
      tensors.set(name, Object.freeze({ dtype, shape: Object.freeze([...shape]), begin, end }));
    }
    return new SafetensorsFile(tensors, metadata, data);
  }

  /** Tensor names in header order. */
  get names(): string[] {
    return [...this.#tensors.keys()];
  }

  has(name: string): boolean {
    return this.#tensors.has(name);
  }

  info(name: string): SafetensorsTensorInfo {
    const info = this.#tensors.get(name);
    if (!info) throw new SvcError('internal', `safetensors has no tensor named ${name}`);
    return info;
  }

  /** The tensor's raw little-endian bytes (a view, not a copy). */
  bytes(name: string): Uint8Array {
    const { begin, end } = this.info(name);
    return this.#data.subarray(begin, end);
  }

  /** The tensor widened (or copied) to fp32, row-major in its header shape. */
  float32(name: string): Float32Array {
    const { dtype } = this.info(name);
    const bytes = this.bytes(name);
    switch (dtype) {
      case 'F16':
        return decodeFloat16(bytes);
      case 'BF16':
        return decodeBFloat16(bytes);
      case 'F32':
        // Copy so the result is 4-byte aligned whatever the tensor's offset in the file.
        return new Float32Array(bytes.slice().buffer);
      default:
        throw new SvcError('internal', `tensor ${name} is ${dtype}, not a floating-point tensor`);
    }
  }
}

/**
 * Rounds an fp32 value to the nearest fp16 bit pattern (ties to even), as PyTorch's `.half()` does:
 * overflow gives infinity, tiny values subnormals or zero.
 *
 * @example
 * ```ts
 * float32ToFloat16(1); // 0x3c00
 * float32ToFloat16(65520); // 0x7c00 (Infinity: past the largest fp16, 65504)
 * ```
 */
export function float32ToFloat16(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0];
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  let mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // Subnormal: the implicit 1 joins the mantissa, shifted right by 1 - e more places.
    mantissa |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mantissa & ((1 << shift) - 1);
    let out = mantissa >>> shift;
    if (rest > half || (rest === half && (out & 1) === 1)) out++;
    return sign | out;
  }
  let out = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (out & 1) === 1)) out++; // a carry into the exponent is still right
  return sign | out;
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** One tensor to write: fp32 values, stored as `dtype`. */
export interface TensorToWrite {
  readonly name: string;
  readonly shape: readonly number[];
  readonly data: Float32Array;
  readonly dtype: 'F32' | 'F16';
}

/**
 * Encodes tensors as a safetensors file (header entries in the given order, data 8-byte aligned as
 * the format recommends), with optional string metadata.
 *
 * @example
 * ```ts
 * const bytes = encodeSafetensors([{ name: 'w', shape: [2], data: Float32Array.of(1, -2), dtype: 'F16' }]);
 * SafetensorsFile.parse(bytes).float32('w'); // Float32Array [1, -2]
 * ```
 */
export function encodeSafetensors(tensors: readonly TensorToWrite[], metadata: Record<string, string> = {}): Uint8Array {
  const header: Record<string, unknown> = Object.keys(metadata).length ? { __metadata__: metadata } : {};
  let offset = 0;
  for (const t of tensors) {
    const elements = t.shape.reduce((product, dim) => product * dim, 1);
    if (elements !== t.data.length) {
      throw new SvcError('internal', `tensor ${t.name} has ${t.data.length} values for shape [${t.shape.join(', ')}]`);
    }
    const bytes = elements * kBytesPerElement[t.dtype];
    header[t.name] = { dtype: t.dtype, shape: [...t.shape], data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.length;
  for (const t of tensors) {
    if (t.dtype === 'F32') {
      for (let i = 0; i < t.data.length; i++, at += 4) view.setFloat32(at, t.data[i], true);
    } else {
      for (let i = 0; i < t.data.length; i++, at += 2) view.setUint16(at, float32ToFloat16(t.data[i]), true);
    }
  }
  return out;
}
