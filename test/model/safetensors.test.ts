import { describe, expect, it } from 'vitest';

import { resolveBaseModel } from '../../src/model/base-models.js';
import { decodeBFloat16, decodeFloat16, float16ToFloat32, SafetensorsFile } from '../../src/model/safetensors.js';

/** Builds a safetensors file in memory: header length, JSON header, data. */
function safetensorsBytes(header: Record<string, unknown>, data: number[]): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

describe('float16ToFloat32', () => {
  it('decodes normal, subnormal, zero, infinite and NaN bit patterns exactly', () => {
    expect(float16ToFloat32(0x3c00)).toBe(1);
    expect(float16ToFloat32(0xc000)).toBe(-2);
    expect(float16ToFloat32(0x3555)).toBe(0.333251953125);
    expect(float16ToFloat32(0x7bff)).toBe(65504);
    expect(float16ToFloat32(0x0400)).toBe(2 ** -14); // smallest normal
    expect(float16ToFloat32(0x0001)).toBe(2 ** -24); // smallest subnormal
    expect(float16ToFloat32(0x03ff)).toBe(1023 * 2 ** -24); // largest subnormal
    expect(float16ToFloat32(0x8200)).toBe(-(2 ** -15));
    expect(Object.is(float16ToFloat32(0x0000), 0)).toBe(true);
    expect(Object.is(float16ToFloat32(0x8000), -0)).toBe(true);
    expect(float16ToFloat32(0x7c00)).toBe(Infinity);
    expect(float16ToFloat32(0xfc00)).toBe(-Infinity);
    expect(float16ToFloat32(0x7e00)).toBeNaN();
  });
});

describe('decodeFloat16 / decodeBFloat16', () => {
  it('widens little-endian fp16 arrays', () => {
    const bytes = new Uint8Array([0x00, 0x3c, 0x01, 0x00, 0x00, 0xfc, 0xff, 0x7b, 0x00, 0x7e]);
    const out = decodeFloat16(bytes);
    expect(Array.from(out.subarray(0, 4))).toEqual([1, 2 ** -24, -Infinity, 65504]);
    expect(out[4]).toBeNaN();
  });

  it('widens bf16 by placing it in the top half of an fp32', () => {
    expect(Array.from(decodeBFloat16(new Uint8Array([0x80, 0x3f, 0x49, 0x40, 0x80, 0xff])))).toEqual([1, 3.140625, -Infinity]);
  });
});

describe('SafetensorsFile', () => {
  it('parses a header and reads fp16, bf16 and unaligned fp32 tensors', () => {
    const f32 = new Uint8Array(new Float32Array([1.5, -0.25]).buffer);
    const file = SafetensorsFile.parse(
      safetensorsBytes(
        {
          __metadata__: { format: 'pt' },
          half: { dtype: 'F16', shape: [2], data_offsets: [0, 4] },
          brain: { dtype: 'BF16', shape: [1], data_offsets: [4, 6] },
          single: { dtype: 'F32', shape: [2, 1], data_offsets: [6, 14] },
          ids: { dtype: 'I64', shape: [1], data_offsets: [14, 22] },
        },
        [0x00, 0x3c, 0x00, 0x80, 0x80, 0x3f, ...f32, 7, 0, 0, 0, 0, 0, 0, 0],
      ),
    );
    expect(file.names).toEqual(['half', 'brain', 'single', 'ids']);
    expect(file.metadata).toEqual({ format: 'pt' });
    expect(file.info('single')).toEqual({ dtype: 'F32', shape: [2, 1], begin: 6, end: 14 });
    expect(Array.from(file.float32('half'))).toEqual([1, -0]);
    expect(Array.from(file.float32('brain'))).toEqual([1]);
    expect(Array.from(file.float32('single'))).toEqual([1.5, -0.25]);
    expect(Array.from(file.bytes('ids'))).toEqual([7, 0, 0, 0, 0, 0, 0, 0]);
    expect(() => file.float32('ids')).toThrow('tensor ids is I64, not a floating-point tensor');
    expect(() => file.info('missing')).toThrow('safetensors has no tensor named missing');
  });

  it('copies fp32 tensors out of a Buffer at any offset', () => {
    const f32 = new Uint8Array(new Float32Array([3, -7.5]).buffer);
    const bytes = safetensorsBytes(
      { pad: { dtype: 'U8', shape: [1], data_offsets: [0, 1] }, x: { dtype: 'F32', shape: [2], data_offsets: [1, 9] } },
      [9, ...f32],
    );
    // A Buffer inside a larger pool, as readFileSync returns for small files.
    const pooled = Buffer.concat([Buffer.from([1, 2, 3]), Buffer.from(bytes)]).subarray(3);
    expect(Array.from(SafetensorsFile.parse(pooled).float32('x'))).toEqual([3, -7.5]);
  });

  it('rejects offsets that do not match the shape', () => {
    const bytes = safetensorsBytes({ t: { dtype: 'F16', shape: [3], data_offsets: [0, 4] } }, [0, 0, 0, 0]);
    expect(() => SafetensorsFile.parse(bytes, 'bad.safetensors')).toThrow(
      'invalid safetensors (bad.safetensors): tensor t has data_offsets [0, 4] that do not fit its shape [3]',
    );
  });

  it("reads svc-small's weights, subnormal fp16 values included", () => {
    const file = SafetensorsFile.open(resolveBaseModel('svc-small').weightsFile);
    expect(file.names.length).toBe(104); // 6 layers x 16, 5 embedding tensors, position_ids, the pooler pair
    expect(file.info('encoder.layer.0.intermediate.dense.weight').shape).toEqual([1536, 384]);
    expect(Array.from(file.float32('embeddings.LayerNorm.weight').subarray(0, 4))).toEqual([
      0.59912109375, 0.58349609375, 0.63330078125, 0.62451171875,
    ]);
    const words = file.float32('embeddings.word_embeddings.weight');
    expect(words.length).toBe(30522 * 384);
    // Elements 110 and 290 are stored as the subnormal halves 0x838e and 0x0338.
    expect(words[110]).toBe(-0x38e * 2 ** -24);
    expect(words[290]).toBe(0x338 * 2 ** -24);
    expect(words[110]).toBe(-5.424022674560547e-5);
  });
});
