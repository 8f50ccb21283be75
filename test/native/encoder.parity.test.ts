// Our engine against onnxruntime-node running the ONNX export of the same safetensors
// (src/model/onnx): the reference the engine is held to.
import type * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { allUciTexts, emailBodies } from '../../fixtures/corpora.js';
import { cpuInfo, Encoder, kernelChoice } from '../../src/index.js';
import { buildEncoderOnnx } from '../../src/model/onnx/index.js';
import { createSession, paddedFeeds, runBatches } from '../model/_ort.js';
import { cosine, maxAbsDiff, referenceIds, row } from './_reference_ids.js';

// Every 25th UCI sentence (120 texts) and 12 long e-mails (most hit the 256-token cut).
const kUci = allUciTexts().filter((_, i) => i % 25 === 0);
const kEmails = emailBodies(12, 4000);

interface Corpus {
  name: string;
  rows: number[][];
  ids: Int32Array;
  lengths: Int32Array;
}

async function corpus(name: string, texts: string[]): Promise<Corpus> {
  const { ids, lengths } = await referenceIds(texts);
  const rows: number[][] = [];
  let offset = 0;
  for (const n of lengths) {
    rows.push(Array.from(ids.subarray(offset, offset + n)));
    offset += n;
  }
  return { name, rows, ids, lengths };
}

let corpora: Corpus[];
let fp32: Encoder;
let int8: Encoder;
let session: ort.InferenceSession;

beforeAll(async () => {
  corpora = [await corpus('UCI sentences', kUci), await corpus('e-mails', kEmails)];
  // Parity with onnxruntime is an fp32 statement: fp32 asked for, not the default 'auto'.
  fp32 = Encoder.fromPretrained('svc-small', { threads: 2, precision: 'fp32' });
  int8 = Encoder.fromPretrained('svc-small', { threads: 2, precision: 'int8' });
  session = await createSession(buildEncoderOnnx('svc-small'));
});

afterAll(() => {
  fp32.dispose();
  int8.dispose();
});

describe('Encoder parity with onnxruntime-node', () => {
  it('uses long texts in the e-mail corpus', () => {
    const [, emails] = corpora;
    expect(Math.max(...emails!.lengths)).toBe(256);
  });

  it('fp32: cosine >= 0.99999 and every component within 1e-4 of onnxruntime', async () => {
    for (const c of corpora) {
      const ours = fp32.embedIdsSync(c.ids, c.lengths);
      const theirs = await runBatches(session, c.rows, 'sentence_embedding', 8);
      let worstCos = 1;
      let worstDiff = 0;
      theirs.forEach((reference, i) => {
        worstCos = Math.min(worstCos, cosine(row(ours, i, 384), reference));
        worstDiff = Math.max(worstDiff, maxAbsDiff(row(ours, i, 384), reference));
      });
      expect(theirs.length).toBe(c.lengths.length);
      expect(worstCos, `${c.name}: lowest cosine`).toBeGreaterThanOrEqual(0.99999);
      expect(worstDiff, `${c.name}: largest component difference`).toBeLessThanOrEqual(1e-4);
    }
  });

  it('fp32: last hidden states match onnxruntime token by token', async () => {
    const c = corpora[0]!;
    const texts = 8;
    const n = c.rows.slice(0, texts).reduce((sum, r) => sum + r.length, 0);
    const hidden = fp32.hiddenStatesSync(c.ids.subarray(0, n), c.lengths.subarray(0, texts));
    let token = 0;
    let worst = 0;
    for (const r of c.rows.slice(0, texts)) {
      const out = await session.run(paddedFeeds([r]));
      const reference = out.last_hidden_state!.data as Float32Array;
      expect(reference.length).toBe(r.length * 384);
      worst = Math.max(worst, maxAbsDiff(hidden.subarray(token * 384, (token + r.length) * 384), reference));
      token += r.length;
    }
    expect(token).toBe(n);
    expect(worst).toBeLessThan(1e-3);
  });

  it('int8: mean cosine to fp32 >= 0.99 and min >= 0.97', () => {
    for (const c of corpora) {
      const exact = fp32.embedIdsSync(c.ids, c.lengths);
      const quantized = int8.embedIdsSync(c.ids, c.lengths);
      const cosines = Array.from(c.lengths, (_, i) => cosine(row(exact, i, 384), row(quantized, i, 384)));
      const mean = cosines.reduce((s, x) => s + x, 0) / cosines.length;
      expect(mean, `${c.name}: mean cosine`).toBeGreaterThanOrEqual(0.99);
      expect(Math.min(...cosines), `${c.name}: lowest cosine`).toBeGreaterThanOrEqual(0.97);
    }
  });

  it.each(['bf16', 'auto'] as const)(
    '%s: mean cosine to fp32 >= 0.99995 and min >= 0.9999 where it runs bf16; fp32 itself elsewhere',
    (setting) => {
      const bf16 = Encoder.fromPretrained('svc-small', { threads: 2, precision: setting });
      try {
        // bf16 wherever the CPU has bf16 products; 'auto' only where they measured faster (the cached choice).
        expect(bf16.precision).toBe(setting === 'auto' ? kernelChoice(2).precision : cpuInfo().bf16 ? 'bf16' : 'fp32');
        for (const c of corpora) {
          const exact = fp32.embedIdsSync(c.ids, c.lengths);
          const got = bf16.embedIdsSync(c.ids, c.lengths);
          if (bf16.precision === 'fp32') {
            // No bf16 here (or SVC_ISA caps it, or it measured slower): the same weights and kernels as fp32, bit for bit.
            expect(Buffer.from(got.buffer).equals(Buffer.from(exact.buffer)), c.name).toBe(true);
            continue;
          }
          // Measured on the e-mails and UCI sentences: mean 0.99998, lowest 0.99995.
          const cosines = Array.from(c.lengths, (_, i) => cosine(row(exact, i, 384), row(got, i, 384)));
          const mean = cosines.reduce((s, x) => s + x, 0) / cosines.length;
          expect(mean, `${c.name}: mean cosine`).toBeGreaterThanOrEqual(0.99995);
          expect(Math.min(...cosines), `${c.name}: lowest cosine`).toBeGreaterThanOrEqual(0.9999);
          expect(maxAbsDiff(got, exact), `${c.name}: bf16 products ran`).toBeGreaterThan(0);
        }
      } finally {
        bf16.dispose();
      }
    },
  );
});
