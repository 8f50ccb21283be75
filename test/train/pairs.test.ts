import { describe, expect, it } from 'vitest';

import { packPairBatch, samplePairs } from '../../src/train/pairs.js';

describe('samplePairs', () => {
  const labels = [true, true, true, false, false, false, true, false];

  it('gives each example one positive and one negative pair per iteration, shuffled by seed', () => {
    const pairs = samplePairs(labels, { iterations: 20, seed: 5 });
    expect(pairs.a.length).toBe(2 * labels.length * 20);
    let positives = 0;
    const perExample = new Array<number>(labels.length).fill(0);
    for (let p = 0; p < pairs.a.length; p += 1) {
      const a = pairs.a[p]!;
      const b = pairs.b[p]!;
      perExample[a] += 1;
      expect(pairs.labels[p]).toBe(labels[a] === labels[b] ? 1 : 0);
      if (pairs.labels[p] === 1) {
        positives += 1;
        expect(b).not.toBe(a);
      }
    }
    expect(positives).toBe(labels.length * 20);
    expect(perExample).toEqual(new Array<number>(labels.length).fill(40));
    expect(samplePairs(labels, { iterations: 20, seed: 5 })).toEqual(pairs);
    expect(samplePairs(labels, { iterations: 20, seed: 6 }).b).not.toEqual(pairs.b);
  });

  it('rejects a single class and bad options', () => {
    expect(() => samplePairs([true, true])).toThrow(new RangeError('labels must hold at least two classes'));
    expect(() => samplePairs(labels, { iterations: 0 })).toThrow(new RangeError('options.iterations must be a positive integer'));
    expect(() => samplePairs(labels, { seed: 1.5 })).toThrow(new RangeError('options.seed must be a non-negative integer'));
  });
});

describe('packPairBatch', () => {
  it('encodes each distinct text of the batch once and remaps the pairs onto them', () => {
    const tokens = [Int32Array.of(101, 1, 102), Int32Array.of(101, 2, 2, 102), Int32Array.of(101, 3, 102)];
    const pairs = { a: Int32Array.of(2, 0, 2, 1), b: Int32Array.of(0, 1, 1, 0), labels: Float32Array.of(1, 0, 0, 1) };
    const batch = packPairBatch(tokens, pairs, 1, 2);
    expect(Array.from(batch.lengths)).toEqual([3, 4, 3]);
    expect(Array.from(batch.ids)).toEqual([101, 1, 102, 101, 2, 2, 102, 101, 3, 102]);
    expect(Array.from(batch.pairA)).toEqual([0, 2]);
    expect(Array.from(batch.pairB)).toEqual([1, 1]);
    expect(Array.from(batch.labels)).toEqual([0, 0]);
    expect(Array.from(packPairBatch(tokens, pairs, 3, 16).labels)).toEqual([1]);
  });
});
