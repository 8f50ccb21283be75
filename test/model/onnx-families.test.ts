// The feature-extraction ONNX export of each reference case (seeded tiny models: BERT mean + Normalize, BERT CLS
// without Normalize under a bert. prefix, an odd shape with prompts, XLM-RoBERTa mean and CLS under a roberta. prefix,
// MPNet mean and CLS under an mpnet. prefix, with its relative position bias) in onnxruntime-node against the
// plain-torch references of scripts/reference-encoders.py. The texts run as one batch padded to the longest with the
// model's padding id, as transformers.js pads: positions counted from the padding id in the graph (XLM-RoBERTa,
// MPNet) must not see the padding.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';

import { registerBaseModel } from '../../src/model/base-models.js';
import { buildEncoderOnnx } from '../../src/model/onnx/index.js';
import { kReferenceCases, readReferenceOutputs, writeReferenceCase } from '../_support/reference-encoders.js';
import { createSession, maxAbsDiff } from './_ort.js';

const root = mkdtempSync(join(tmpdir(), 'svc-onnx-families-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// fp32 graph against the float64 reference: the engine's own fp32 bound (test/native/encoder-families.test.ts).
const kTolerance = 2e-4;

/** The texts of a case as one batch padded with `padId`; token_type_ids only where the graph takes them. */
function paddedBatch(texts: number[][], padId: number, inputNames: readonly string[]): Record<string, ort.Tensor> {
  const seq = Math.max(...texts.map((t) => t.length));
  const ids = new BigInt64Array(texts.length * seq).fill(BigInt(padId));
  const mask = new BigInt64Array(texts.length * seq);
  texts.forEach((text, r) =>
    text.forEach((id, t) => {
      ids[r * seq + t] = BigInt(id);
      mask[r * seq + t] = 1n;
    }),
  );
  const dims = [texts.length, seq];
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', ids, dims),
    attention_mask: new ort.Tensor('int64', mask, dims),
  };
  if (inputNames.includes('token_type_ids')) feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(ids.length), dims);
  return feeds;
}

describe.each(kReferenceCases.map((c) => [c.name, c] as const))('%s exported as feature-extraction ONNX', (name, c) => {
  it('gives the reference pooled embeddings and hidden states in a padded batch', async () => {
    const dir = join(root, name);
    writeReferenceCase(dir, c);
    const base = registerBaseModel(`onnx-${name}`, dir);
    expect({ pooling: base.pooling, normalize: base.normalize }).toEqual({ pooling: c.options.pooling, normalize: c.options.normalize });
    const reference = readReferenceOutputs(name);
    const texts: number[][] = [];
    let start = 0;
    for (const length of reference.lengths) {
      texts.push(reference.ids.slice(start, start + length));
      start += length;
    }
    const session = await createSession(buildEncoderOnnx(base));
    try {
      const bert = c.options.family === 'bert';
      // One token type or none: no token_type_ids to feed, as in Hugging Face's exports of XLM-RoBERTa and MPNet.
      expect(session.inputNames).toEqual(bert ? ['input_ids', 'attention_mask', 'token_type_ids'] : ['input_ids', 'attention_mask']);
      const out = await session.run(paddedBatch(texts, bert ? 0 : 1, session.inputNames));
      const h = c.options.hidden;
      const seq = out.last_hidden_state.dims[1] as number;
      const pooled = out.sentence_embedding.data as Float32Array;
      const hidden = out.last_hidden_state.data as Float32Array;
      reference.pooled.forEach((expected, t) => {
        const got = pooled.subarray(t * h, (t + 1) * h);
        expect(maxAbsDiff(got, expected), `text ${t}`).toBeLessThan(kTolerance);
        if (!c.options.normalize) expect(Math.hypot(...got), `text ${t}`).not.toBeCloseTo(1, 2);
      });
      // The reference's rows count tokens text after text; the batch puts each text on a padded row of its own.
      for (const [row, expected] of reference.hidden) {
        let text = 0;
        let offset = row;
        while (offset >= texts[text]!.length) offset -= texts[text++]!.length;
        const at = (text * seq + offset) * h;
        expect(maxAbsDiff(hidden.subarray(at, at + h), expected), `row ${row}`).toBeLessThan(kTolerance);
      }
    } finally {
      await session.release();
    }
  });
});
