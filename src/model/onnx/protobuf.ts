/**
 * The few protobuf wire-format primitives an ONNX file needs: varints (wire type 0), 32-bit
 * floats (wire type 5) and length-delimited fields (wire type 2) for strings, bytes, packed
 * repeated numbers and nested messages.
 *
 * A writer keeps a list of byte chunks instead of one growing buffer: weight tensors (tens of
 * megabytes) are appended by reference and copied exactly once, in `finish()`.
 */

const kWireVarint = 0;
const kWireLengthDelimited = 2;
const kWireFixed32 = 5;

const kScratchBytes = 4096;

/**
 * Builds one protobuf message.
 *
 * @example
 * ```ts
 * const w = new ProtoWriter();
 * w.int64(1, 150);
 * w.string(2, 'hi');
 * w.finish(); // Uint8Array [0x08, 0x96, 0x01, 0x12, 0x02, 0x68, 0x69]
 * ```
 */
export class ProtoWriter {
  #chunks: Uint8Array[] = [];
  #scratch = new Uint8Array(kScratchBytes);
  #used = 0;
  #flushed = 0;

  /** Encoded size in bytes so far. */
  get length(): number {
    return this.#flushed + this.#used;
  }

  #reserve(bytes: number): void {
    if (this.#used + bytes <= this.#scratch.length) return;
    this.#flush();
    if (bytes > this.#scratch.length) this.#scratch = new Uint8Array(bytes);
  }

  #flush(): void {
    if (this.#used === 0) return;
    this.#chunks.push(this.#scratch.slice(0, this.#used));
    this.#flushed += this.#used;
    this.#used = 0;
  }

  #appendChunk(chunk: Uint8Array): void {
    if (chunk.length <= 256) {
      this.#reserve(chunk.length);
      this.#scratch.set(chunk, this.#used);
      this.#used += chunk.length;
      return;
    }
    this.#flush();
    this.#chunks.push(chunk);
    this.#flushed += chunk.length;
  }

  /**
   * Appends a raw varint. Negative numbers are written as their 64-bit two's complement (ten
   * bytes), which is how protobuf encodes a negative int64 or int32.
   */
  varint(value: number | bigint): this {
    this.#reserve(10);
    if (typeof value === 'number' && value >= 0 && value <= 0xffffffff && Number.isInteger(value)) {
      let v = value >>> 0;
      while (v > 0x7f) {
        this.#scratch[this.#used++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      this.#scratch[this.#used++] = v;
      return this;
    }
    if (typeof value === 'number' && !Number.isSafeInteger(value)) {
      throw new RangeError(`protobuf varint must be a safe integer, got ${value}`);
    }
    let big = BigInt.asUintN(64, BigInt(value));
    while (big > 0x7fn) {
      this.#scratch[this.#used++] = Number(big & 0x7fn) | 0x80;
      big >>= 7n;
    }
    this.#scratch[this.#used++] = Number(big);
    return this;
  }

  #tag(field: number, wireType: number): void {
    this.varint(field * 8 + wireType);
  }

  /** An int64 / int32 / enum / bool field. */
  int64(field: number, value: number | bigint): this {
    this.#tag(field, kWireVarint);
    return this.varint(value);
  }

  /** A `float` field (fixed 32 bits, little-endian). */
  float(field: number, value: number): this {
    this.#tag(field, kWireFixed32);
    this.#reserve(4);
    new DataView(this.#scratch.buffer).setFloat32(this.#used, value, true);
    this.#used += 4;
    return this;
  }

  /** A `bytes` field; large arrays are kept by reference until `finish()`. */
  bytes(field: number, value: Uint8Array): this {
    this.#tag(field, kWireLengthDelimited);
    this.varint(value.length);
    this.#appendChunk(value);
    return this;
  }

  /** A `string` field, UTF-8 encoded. */
  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  /** A nested message field. */
  message(field: number, message: ProtoWriter): this {
    this.#tag(field, kWireLengthDelimited);
    this.varint(message.length);
    message.#flush();
    for (const chunk of message.#chunks) this.#appendChunk(chunk);
    return this;
  }

  /** A packed `repeated int64` field (one length-delimited run of varints). */
  packedInt64(field: number, values: ArrayLike<number | bigint>): this {
    const run = new ProtoWriter();
    for (let i = 0; i < values.length; i++) run.varint(values[i]);
    this.#tag(field, kWireLengthDelimited);
    this.varint(run.length);
    run.#flush();
    for (const chunk of run.#chunks) this.#appendChunk(chunk);
    return this;
  }

  /** A packed `repeated float` field. */
  packedFloat(field: number, values: ArrayLike<number>): this {
    const packed = Float32Array.from(values);
    return this.bytes(field, new Uint8Array(packed.buffer));
  }

  /** The message's bytes: every chunk copied once into one array. */
  finish(): Uint8Array {
    this.#flush();
    const out = new Uint8Array(this.#flushed);
    let offset = 0;
    for (const chunk of this.#chunks) {
      out.set(chunk, offset);
      offset += chunk.length;
    }
    return out;
  }
}
