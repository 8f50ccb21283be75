// The engine against plain-torch references (scripts/reference-encoders.py) on seeded tiny models of each BERT-family
// shape: BERT mean + Normalize, BERT CLS without Normalize under a bert. prefix, an odd shape, and XLM-RoBERTa
// (positions from offset 2, one token type, a 4,000-piece vocabulary) with mean and CLS pooling, and MPNet (its
// relative position bias in every layer's attention, no token types, an mpnet. prefix) with both. Each precision is
// held to its own bound; CI runs this file at every kernel level (SVC_ISA).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { Encoder } from '../../src/native/encoder.js';
import { kReferenceCases, readReferenceOutputs, writeReferenceCase } from '../_support/reference-encoders.js';
import { cosine, maxAbsDiff } from './_reference_ids.js';

const root = mkdtempSync(join(tmpdir(), 'svc-families-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// fp32 against the float64 reference: rounding of a few layers of order-1 activations. bf16 rounds each product's
// inputs to 8 bits of mantissa, int8 each weight and activation row to 255 steps: held to cosines instead.
const kBounds = { fp32: { abs: 2e-4, cosine: 0.999999 }, bf16: { abs: Infinity, cosine: 0.999 }, int8: { abs: Infinity, cosine: 0.99 } };

describe.each(kReferenceCases.map((c) => [c.name, c] as const))('%s', (name, c) => {
  const dir = join(root, name);
  const { ids } = writeReferenceCase(dir, c);
  const reference = readReferenceOutputs(name);
  const lengths = Int32Array.from(reference.lengths);

  it('runs the ids the reference ran', () => {
    expect(Array.from(ids)).toEqual(reference.ids);
  });

  for (const precision of ['fp32', 'bf16', 'int8'] as const) {
    it(`${precision}: pooled embeddings and hidden states match the reference`, () => {
      const encoder = Encoder.fromPretrained(dir, { precision, threads: 2, pooling: c.options.pooling, normalize: c.options.normalize });
      try {
        const h = encoder.dim;
        expect(h).toBe(c.options.hidden);
        const pooled = encoder.embedIdsSync(ids, lengths);
        const bound = kBounds[encoder.precision];
        reference.pooled.forEach((expected, t) => {
          const got = pooled.subarray(t * h, (t + 1) * h);
          expect(maxAbsDiff(got, expected), `text ${t}`).toBeLessThan(bound.abs);
          expect(cosine(got, expected), `text ${t}`).toBeGreaterThan(bound.cosine);
          if (!c.options.normalize) expect(Math.hypot(...got)).not.toBeCloseTo(1, 2);
        });
        const states = encoder.hiddenStatesSync(ids, lengths);
        for (const [row, expected] of reference.hidden) {
          const got = states.subarray(row * h, (row + 1) * h);
          expect(maxAbsDiff(got, expected), `row ${row}`).toBeLessThan(bound.abs);
          expect(cosine(got, expected), `row ${row}`).toBeGreaterThan(bound.cosine);
        }
      } finally {
        encoder.dispose();
      }
    });
  }

  it('refuses a text longer than the positions after the offset', () => {
    const encoder = Encoder.fromPretrained(dir, { precision: 'fp32', threads: 1 });
    try {
      const tooLong = new Int32Array(c.options.maxSeqLength + 1).fill(5);
      expect(() => encoder.embedIdsSync(tooLong, Int32Array.of(tooLong.length))).toThrow(`must be between 1 and ${c.options.maxSeqLength}`);
    } finally {
      encoder.dispose();
    }
  });
});

describe('config.json', () => {
  it('names the file and the model_type it cannot run', () => {
    const dir = join(root, 'unsupported');
    writeReferenceCase(dir, kReferenceCases[0]!);
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, model_type: 'gpt2' }));
    expect(() => Encoder.fromPretrained(dir, { precision: 'fp32', threads: 1 })).toThrow(
      `${join(dir, 'config.json')}: model_type 'gpt2' is not supported`,
    );
  });
});
