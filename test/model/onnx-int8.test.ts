import type * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';

import { allUciTexts } from '../../fixtures/corpora.js';
import { buildEncoderOnnx, quantizePerOutputChannel } from '../../src/model/onnx/index.js';
import { cosine, createSession, runBatches, tokenize } from './_ort.js';

let fp32Bytes: Uint8Array;
let int8Bytes: Uint8Array;
let fp32: ort.InferenceSession;
let int8: ort.InferenceSession;

beforeAll(async () => {
  fp32Bytes = buildEncoderOnnx('svc-small');
  int8Bytes = buildEncoderOnnx('svc-small', { precision: 'int8' });
  [fp32, int8] = await Promise.all([createSession(fp32Bytes), createSession(int8Bytes)]);
});

describe('quantizePerOutputChannel', () => {
  it('scales each output channel by its largest magnitude and transposes for MatMul', () => {
    // Weight [out=2, in=2] = [[0.5, -1], [2, 0.25]]
    const { values, scales } = quantizePerOutputChannel(new Float32Array([0.5, -1, 2, 0.25]), 2, 2);
    expect(Array.from(scales)).toEqual([Math.fround(1 / 127), Math.fround(2 / 127)]);
    expect(Array.from(values)).toEqual([64, 127, -127, 16]);
  });

  it('gives an all-zero channel scale 1 so nothing divides by zero', () => {
    const { values, scales } = quantizePerOutputChannel(new Float32Array([0, 0, 1, -1]), 2, 2);
    expect(Array.from(scales)).toEqual([1, Math.fround(1 / 127)]);
    expect(Array.from(values)).toEqual([0, 127, 0, -127]);
  });
});

describe('buildEncoderOnnx (int8)', () => {
  it('stores the Linear weights as int8 (the fp32 embedding tables stay)', () => {
    // 10.6M Linear weights shrink 4x (42.5 MB -> 10.6 MB); the 11.9M embedding parameters stay fp32.
    expect(fp32Bytes.length).toBeGreaterThan(90_000_000);
    expect(int8Bytes.length).toBeGreaterThan(58_000_000);
    expect(int8Bytes.length).toBeLessThan(59_000_000);
    expect(int8.outputNames).toEqual(['last_hidden_state', 'sentence_embedding']);
  });

  // These embeddings come from onnxruntime's kernels, which pick their level from the CPU and
  // ignore SVC_ISA. With AVX-512 VNNI (vpdpbusd) or AVX-512BW, u8 x s8 products are summed in
  // int32 exactly, and the graph is as accurate as our own int8 path (mean ~0.995). On a CPU
  // with AVX2 but no VNNI, onnxruntime's u8 x s8 kernel adds pairs of products into int16 with
  // vpmaddubsw, which saturates at 32767 while a pair can reach 2 * 255 * 127 = 64770: the
  // activations of one outlier-heavy row clip, which lowers the mean (0.9897 measured there).
  // The bounds are those that hold for that arithmetic too: the export is what this tests;
  // our own int8 path is held to mean 0.99 / min 0.97 on every level in encoder.parity.test.ts.
  it('keeps embeddings of 300 UCI sentences within cosine 0.985 of fp32 on average', async () => {
    const texts = allUciTexts()
      .filter((_, i) => i % 10 === 0)
      .slice(0, 300);
    expect(texts.length).toBe(300);
    const rows = await tokenize(texts);
    const reference = await runBatches(fp32, rows, 'sentence_embedding');
    const quantized = await runBatches(int8, rows, 'sentence_embedding');
    const cosines = reference.map((e, i) => cosine(e, quantized[i]));
    const mean = cosines.reduce((sum, c) => sum + c, 0) / cosines.length;
    expect(mean).toBeGreaterThanOrEqual(0.985);
    expect(Math.min(...cosines)).toBeGreaterThanOrEqual(0.95);
  });
});
