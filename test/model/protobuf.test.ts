import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';

import { GraphBuilder, OnnxType, ProtoWriter } from '../../src/model/onnx/index.js';

const ascii = (s: string): number[] => Array.from(s, (c) => c.charCodeAt(0));

describe('ProtoWriter', () => {
  it('encodes varint, string and float fields', () => {
    const bytes = new ProtoWriter().int64(1, 150).string(2, 'hi').float(2, 1.5).finish();
    expect(Array.from(bytes)).toEqual([0x08, 0x96, 0x01, 0x12, 0x02, 0x68, 0x69, 0x15, 0x00, 0x00, 0xc0, 0x3f]);
  });

  it('encodes negative and large integers as 64-bit varints', () => {
    expect(Array.from(new ProtoWriter().int64(3, -1).finish())).toEqual([0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    expect(Array.from(new ProtoWriter().varint(2 ** 32).finish())).toEqual([0x80, 0x80, 0x80, 0x80, 0x10]);
    expect(Array.from(new ProtoWriter().varint(2n ** 63n).finish())).toEqual([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]);
    expect(() => new ProtoWriter().varint(2 ** 60)).toThrow('protobuf varint must be a safe integer, got 1152921504606847000');
  });

  it('encodes packed repeated fields and nested messages', () => {
    const inner = new ProtoWriter().int64(1, 1);
    const bytes = new ProtoWriter().packedInt64(8, [1, 300, -1]).message(7, inner).packedFloat(4, [1, -2]).finish();
    expect(Array.from(bytes)).toEqual([
      0x42, 0x0d, 0x01, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x3a, 0x02, 0x08, 0x01, 0x22, 0x08, 0x00,
      0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0,
    ]);
  });

  it('keeps large byte fields intact across chunk boundaries', () => {
    const payload = Uint8Array.from({ length: 5000 }, (_, i) => i % 251);
    const w = new ProtoWriter();
    for (let i = 0; i < 1000; i++) w.int64(1, i);
    w.bytes(9, payload);
    const bytes = w.finish();
    expect(w.length).toBe(bytes.length);
    const tail = bytes.subarray(bytes.length - 5003);
    expect(Array.from(tail.subarray(0, 3))).toEqual([0x4a, 0x88, 0x27]);
    expect(tail.subarray(3)).toEqual(payload);
  });
});

describe('GraphBuilder', () => {
  it('serializes a ModelProto byte for byte', () => {
    const g = new GraphBuilder();
    g.input('x', OnnxType.FLOAT, ['n', 2]);
    g.op('Identity', ['x'], {}, 'y');
    g.output('y', OnnxType.FLOAT, ['n', 2]);
    const valueInfo = (name: string) => [
      0x0a,
      0x01,
      ...ascii(name),
      0x12,
      0x0f,
      0x0a,
      0x0d,
      0x08,
      0x01,
      0x12,
      0x09,
      0x0a,
      0x03,
      0x12,
      0x01,
      ...ascii('n'),
      0x0a,
      0x02,
      0x08,
      0x02,
    ];
    const node = [
      0x0a,
      0x01,
      ...ascii('x'),
      0x12,
      0x01,
      ...ascii('y'),
      0x1a,
      0x0d,
      ...ascii('Identity_node'),
      0x22,
      0x08,
      ...ascii('Identity'),
    ];
    const graph = [0x0a, node.length, ...node, 0x12, 0x01, ...ascii('g'), 0x5a, 20, ...valueInfo('x'), 0x62, 20, ...valueInfo('y')];
    const model = [0x08, 0x08, 0x12, 0x0c, ...ascii('svc-classify'), 0x3a, graph.length, ...graph, 0x42, 0x02, 0x10, 0x11];
    expect(Array.from(g.toModel({ graphName: 'g' }))).toEqual(model);
  });

  it('writes initializers and attributes that onnxruntime reads', async () => {
    const g = new GraphBuilder();
    g.input('x', OnnxType.FLOAT, ['batch_size', 2, 3]);
    const scale = g.floats('scale', [2, -1, 0.5], [3]);
    const transposed = g.op('Transpose', [g.op('Mul', ['x', scale])], { perm: { ints: [0, 2, 1] } });
    g.op('ReduceSum', [transposed, g.int64s('axes', [-1])], { keepdims: { int: 0 } }, 'y');
    g.output('y', OnnxType.FLOAT, ['batch_size', 3]);
    const session = await ort.InferenceSession.create(g.toModel({ graphName: 'tiny' }));
    const x = new ort.Tensor('float32', Float32Array.from([1, 2, 3, 4, 5, 6]), [1, 2, 3]);
    const { y } = await session.run({ x });
    expect(y.dims).toEqual([1, 3]);
    expect(Array.from(y.data as Float32Array)).toEqual([2 + 8, -2 - 5, 1.5 + 3]);
  });
});
