import type * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';

import { buildEncoderOnnx } from '../../src/model/onnx/index.js';
import { createSession, maxAbsDiff, paddedFeeds, tokenize } from './_ort.js';

// Built once: the fp32 graph of svc-small (about 90 MB of initializers).
let session: ort.InferenceSession;

beforeAll(async () => {
  session = await createSession(buildEncoderOnnx('svc-small'));
});

describe('buildEncoderOnnx (fp32)', () => {
  it('declares the BERT inputs and both outputs', () => {
    expect(session.inputNames).toEqual(['input_ids', 'attention_mask', 'token_type_ids']);
    expect(session.outputNames).toEqual(['last_hidden_state', 'sentence_embedding']);
  });

  it("gives all-MiniLM-L6-v2's published embedding for the example sentence", async () => {
    const [ids] = await tokenize(['This is an example sentence']);
    expect(ids).toEqual([101, 2023, 2003, 2019, 2742, 6251, 102]);
    const out = await session.run(paddedFeeds([ids]));
    expect(out.last_hidden_state.dims).toEqual([1, 7, 384]);
    expect(out.sentence_embedding.dims).toEqual([1, 384]);
    const embedding = out.sentence_embedding.data as Float32Array;
    expect(Array.from(embedding.slice(0, 4), (v) => Number(v.toFixed(4)))).toEqual([0.0677, 0.0636, 0.0487, 0.0794]);
    const norm = Math.hypot(...embedding);
    expect(Math.abs(norm - 1)).toBeLessThan(1e-6);
  });

  it('gives padded batch rows the same values as unpadded single runs', async () => {
    const texts = [
      'A short one.',
      'This is an example sentence',
      'The food was great, but the service was painfully slow and the waiter forgot our drinks twice.',
      'Ok',
    ];
    const rows = await tokenize(texts);
    const seq = Math.max(...rows.map((row) => row.length));
    const batch = await session.run(paddedFeeds(rows));
    const batchHidden = batch.last_hidden_state.data as Float32Array;
    const batchEmbeddings = batch.sentence_embedding.data as Float32Array;
    for (let r = 0; r < rows.length; r++) {
      const single = await session.run(paddedFeeds([rows[r]]));
      const n = rows[r].length;
      const hidden = batchHidden.subarray(r * seq * 384, (r * seq + n) * 384);
      expect(maxAbsDiff(hidden, single.last_hidden_state.data as Float32Array)).toBeLessThan(1e-5);
      const embedding = batchEmbeddings.subarray(r * 384, (r + 1) * 384);
      expect(maxAbsDiff(embedding, single.sentence_embedding.data as Float32Array)).toBeLessThan(1e-5);
    }
  });
});
