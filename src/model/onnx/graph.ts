import { ProtoWriter } from './protobuf.js';

/**
 * ONNX TensorProto.DataType values used by our graphs.
 *
 * @example
 * ```ts
 * g.input('input_ids', OnnxType.INT64, ['batch_size', 'sequence_length']); // OnnxType.INT64 === 7
 * ```
 */
export const OnnxType = Object.freeze({
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  INT32: 6,
  INT64: 7,
  BOOL: 9,
} as const);
export type OnnxTypeCode = (typeof OnnxType)[keyof typeof OnnxType];

/** ONNX IR version 8 goes with opset 17 (onnx 1.12); onnxruntime 1.14+ reads it. */
export const kIrVersion = 8;
export const kDefaultOpset = 17;

/** A node attribute; the kind picks the AttributeProto type (ints and floats are distinct in ONNX). */
export type OnnxAttribute =
  | { readonly int: number }
  | { readonly float: number }
  | { readonly ints: readonly number[] }
  | { readonly floats: readonly number[] }
  | { readonly string: string }
  | { readonly tensor: OnnxTensor };

/** A constant tensor: an initializer or a Constant node's value. Data is stored as raw_data. */
export interface OnnxTensor {
  readonly name: string;
  readonly dataType: OnnxTypeCode;
  readonly dims: readonly number[];
  readonly data: Float32Array | Int32Array | BigInt64Array | Int8Array | Uint8Array;
}

/** A dimension is a fixed size or a symbolic name such as `batch_size`. */
export type OnnxDim = number | string;

interface NodeSpec {
  readonly opType: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly name: string;
  readonly domain: string;
  readonly attributes: Readonly<Record<string, OnnxAttribute>>;
}

interface ValueInfoSpec {
  readonly name: string;
  readonly elemType: OnnxTypeCode;
  readonly dims: readonly OnnxDim[];
}

// Field numbers from onnx/onnx.proto.
const kAttributeType = { float: 1, int: 2, string: 3, tensor: 4, floats: 6, ints: 7 } as const;

function encodeTensor(tensor: OnnxTensor): ProtoWriter {
  const w = new ProtoWriter();
  for (const dim of tensor.dims) w.int64(1, dim);
  w.int64(2, tensor.dataType);
  w.string(8, tensor.name);
  const { data } = tensor;
  // raw_data is little-endian; typed arrays are in the platform's order, little-endian on x86/arm.
  w.bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return w;
}

function encodeAttribute(name: string, attribute: OnnxAttribute): ProtoWriter {
  const w = new ProtoWriter();
  w.string(1, name);
  if ('float' in attribute) {
    w.float(2, attribute.float);
    w.int64(20, kAttributeType.float);
  } else if ('int' in attribute) {
    w.int64(3, attribute.int);
    w.int64(20, kAttributeType.int);
  } else if ('string' in attribute) {
    w.string(4, attribute.string);
    w.int64(20, kAttributeType.string);
  } else if ('tensor' in attribute) {
    w.message(5, encodeTensor(attribute.tensor));
    w.int64(20, kAttributeType.tensor);
  } else if ('floats' in attribute) {
    w.packedFloat(7, attribute.floats);
    w.int64(20, kAttributeType.floats);
  } else {
    w.packedInt64(8, attribute.ints);
    w.int64(20, kAttributeType.ints);
  }
  return w;
}

function encodeNode(node: NodeSpec): ProtoWriter {
  const w = new ProtoWriter();
  for (const input of node.inputs) w.string(1, input);
  for (const output of node.outputs) w.string(2, output);
  w.string(3, node.name);
  w.string(4, node.opType);
  for (const [name, attribute] of Object.entries(node.attributes)) w.message(5, encodeAttribute(name, attribute));
  if (node.domain) w.string(7, node.domain);
  return w;
}

function encodeValueInfo(info: ValueInfoSpec): ProtoWriter {
  const shape = new ProtoWriter();
  for (const dim of info.dims) {
    const d = new ProtoWriter();
    if (typeof dim === 'number') d.int64(1, dim);
    else d.string(2, dim);
    shape.message(1, d);
  }
  const tensorType = new ProtoWriter().int64(1, info.elemType).message(2, shape);
  const type = new ProtoWriter().message(1, tensorType);
  return new ProtoWriter().string(1, info.name).message(2, type);
}

/** Options for serializing a graph into a ModelProto. */
export interface OnnxModelOptions {
  readonly graphName: string;
  readonly opset?: number;
  /** Extra operator sets, e.g. `{ 'com.microsoft': 1 }` for onnxruntime's contrib ops. */
  readonly extraOpsets?: Readonly<Record<string, number>>;
  readonly producerName?: string;
  readonly producerVersion?: string;
  readonly docString?: string;
}

/**
 * Collects nodes, initializers, inputs and outputs, then serializes an ONNX ModelProto.
 * Node outputs get unique names from the op type unless a name is given.
 *
 * @example
 * ```ts
 * const g = new GraphBuilder();
 * g.input('x', OnnxType.FLOAT, ['batch_size', 3]);
 * const two = g.constant('two', OnnxType.FLOAT, [], new Float32Array([2]));
 * g.output(g.op('Mul', ['x', two], {}, 'y'), OnnxType.FLOAT, ['batch_size', 3]);
 * const bytes = g.toModel({ graphName: 'double' }); // ModelProto bytes onnxruntime can load
 * ```
 */
export class GraphBuilder {
  readonly #nodes: NodeSpec[] = [];
  readonly #initializers: OnnxTensor[] = [];
  readonly #inputs: ValueInfoSpec[] = [];
  readonly #outputs: ValueInfoSpec[] = [];
  readonly #names = new Set<string>();
  #counter = 0;

  /** A name not used yet, derived from `base`. */
  uniqueName(base: string): string {
    let name = base;
    while (this.#names.has(name)) name = `${base}_${++this.#counter}`;
    this.#names.add(name);
    return name;
  }

  input(name: string, elemType: OnnxTypeCode, dims: readonly OnnxDim[]): string {
    this.#names.add(name);
    this.#inputs.push({ name, elemType, dims });
    return name;
  }

  output(name: string, elemType: OnnxTypeCode, dims: readonly OnnxDim[]): string {
    this.#outputs.push({ name, elemType, dims });
    return name;
  }

  /** Adds an initializer (a weight) and returns its name. */
  constant(name: string, dataType: OnnxTypeCode, dims: readonly number[], data: OnnxTensor['data']): string {
    const unique = this.uniqueName(name);
    const elements = dims.reduce((product, dim) => product * dim, 1);
    if (data.length !== elements) {
      throw new RangeError(`initializer ${name} has ${data.length} values for dims [${dims.join(', ')}]`);
    }
    this.#initializers.push({ name: unique, dataType, dims: [...dims], data });
    return unique;
  }

  /** An int64 initializer, e.g. a shape or axes list. */
  int64s(name: string, values: readonly number[], dims: readonly number[] = [values.length]): string {
    return this.constant(
      name,
      OnnxType.INT64,
      dims,
      BigInt64Array.from(values, (v) => BigInt(v)),
    );
  }

  /** A float initializer; a scalar when `dims` is `[]`. */
  floats(name: string, values: readonly number[] | Float32Array, dims: readonly number[] = [values.length]): string {
    return this.constant(name, OnnxType.FLOAT, dims, Float32Array.from(values));
  }

  /** Adds a node with one output and returns the output's name. */
  op(
    opType: string,
    inputs: readonly string[],
    attributes: Readonly<Record<string, OnnxAttribute>> = {},
    output?: string,
    domain = '',
  ): string {
    return this.opN(opType, inputs, 1, attributes, output ? [output] : undefined, domain)[0];
  }

  /** Adds a node with several outputs (e.g. DynamicQuantizeLinear) and returns their names. */
  opN(
    opType: string,
    inputs: readonly string[],
    outputCount: number,
    attributes: Readonly<Record<string, OnnxAttribute>> = {},
    outputs?: readonly string[],
    domain = '',
  ): string[] {
    const name = this.uniqueName(`${opType}_node`);
    const names =
      outputs?.map((o) => {
        this.#names.add(o);
        return o;
      }) ?? Array.from({ length: outputCount }, (_, i) => this.uniqueName(`${opType}_out${i}`));
    this.#nodes.push({ opType, inputs: [...inputs], outputs: names, name, domain, attributes });
    return names;
  }

  /** Serializes a ModelProto (ir_version 8, default opset 17). */
  toModel(options: OnnxModelOptions): Uint8Array {
    const graph = new ProtoWriter();
    for (const node of this.#nodes) graph.message(1, encodeNode(node));
    graph.string(2, options.graphName);
    for (const tensor of this.#initializers) graph.message(5, encodeTensor(tensor));
    for (const info of this.#inputs) graph.message(11, encodeValueInfo(info));
    for (const info of this.#outputs) graph.message(12, encodeValueInfo(info));

    const model = new ProtoWriter();
    model.int64(1, kIrVersion);
    model.string(2, options.producerName ?? 'svc-classify');
    if (options.producerVersion) model.string(3, options.producerVersion);
    if (options.docString) model.string(6, options.docString);
    model.message(7, graph);
    const opsets: Record<string, number> = { '': options.opset ?? kDefaultOpset, ...options.extraOpsets };
    for (const [domain, version] of Object.entries(opsets)) {
      const opset = new ProtoWriter();
      if (domain) opset.string(1, domain);
      opset.int64(2, version);
      model.message(8, opset);
    }
    return model.finish();
  }
}
