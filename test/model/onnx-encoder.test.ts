import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';

import { resolveBaseModel } from '../../src/model/base-models.js';
import { buildEncoderOnnx } from '../../src/model/onnx/index.js';
import { SafetensorsFile } from '../../src/model/safetensors.js';
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

  it('with sepTokenId, scores a row cut without [SEP] like the row truncated by Hugging Face', async () => {
    const closing = await createSession(buildEncoderOnnx('svc-small', { sepTokenId: 102 }));
    const [ids] = await tokenize(['The food was great, but the service was painfully slow.']);
    const cut = [...ids.slice(0, 6)]; // what transformers.js keeps at max length 6: no [SEP]
    const truncated = [...ids.slice(0, 5), 102]; // what Hugging Face truncation keeps
    // In one padded batch: the cut row, the truncated row, and a complete row that must not change.
    const out = await closing.run(paddedFeeds([cut, truncated, ids]));
    const reference = await session.run(paddedFeeds([truncated]));
    const embeddings = out.sentence_embedding.data as Float32Array;
    expect(maxAbsDiff(embeddings.subarray(0, 384), reference.sentence_embedding.data as Float32Array)).toBeLessThan(1e-5);
    const plain = await session.run(paddedFeeds([ids]));
    expect(maxAbsDiff(embeddings.subarray(768, 1152), plain.sentence_embedding.data as Float32Array)).toBeLessThan(1e-5);
  });

  it('rejects unknown precisions', () => {
    expect(() => buildEncoderOnnx('svc-small', { precision: 'fp16' as 'fp32' })).toThrow("options.precision must be 'fp32' or 'int8'");
    expect(() => buildEncoderOnnx('svc-small', { sepTokenId: -1 })).toThrow('options.sepTokenId must be a non-negative integer');
  });
});

/** svc-small re-saved as a task model would save it: fp32, every name under `bert.`. */
function writeFp32PrefixedCopy(dir: string): string {
  const source = SafetensorsFile.open(resolveBaseModel('svc-small').weightsFile);
  const header: Record<string, unknown> = {};
  const parts: Uint8Array[] = [];
  let offset = 0;
  for (const name of source.names) {
    const { dtype, shape } = source.info(name);
    const bytes = dtype === 'F16' ? new Uint8Array(source.float32(name).buffer) : source.bytes(name);
    header[`bert.${name}`] = { dtype: dtype === 'F16' ? 'F32' : dtype, shape, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  const file = join(dir, 'model.safetensors');
  writeFileSync(file, Buffer.concat([length, json, ...parts]));
  return file;
}

describe('buildEncoderOnnx on another checkpoint layout', () => {
  it('reads fp32 weights saved under a bert. prefix and gives the same embeddings', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-onnx-prefixed-'));
    try {
      const base = resolveBaseModel('svc-small');
      copyFileSync(base.configFile, join(dir, 'config.json'));
      const model = { ...base, name: 'prefixed', dir, configFile: join(dir, 'config.json'), weightsFile: writeFp32PrefixedCopy(dir) };
      const prefixed = await createSession(buildEncoderOnnx(model));
      const rows = await tokenize(['This is an example sentence', 'Another one, a little longer than the first.']);
      const a = await prefixed.run(paddedFeeds(rows));
      const b = await session.run(paddedFeeds(rows));
      expect(a.sentence_embedding.data).toEqual(b.sentence_embedding.data);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
