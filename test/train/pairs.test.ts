import { describe, expect, it } from 'vitest';

import { pairBatch } from '../../fixtures/pair-batch.js';
import { packPairBatch, pairCount, samePair, samplePairs, sampleTargetPairs, stepCount } from '../../src/train/pairs.js';

describe('samplePairs', () => {
  const labels = [true, true, true, false, false, false, true, false];

  it('gives n x iterations same-label and other-label pairs of distinct examples, covering every pair evenly, shuffled by seed', () => {
    const pairs = samplePairs(labels, { iterations: 20, seed: 5 });
    expect(pairs.a.length).toBe(2 * labels.length * 20);
    expect(pairCount(labels.length, 20)).toBe(pairs.a.length);
    expect(stepCount(800)).toBe(50);
    expect(stepCount(801)).toBe(51);
    const uses = new Map<string, number>();
    let positives = 0;
    for (let p = 0; p < pairs.a.length; p += 1) {
      const a = pairs.a[p]!;
      const b = pairs.b[p]!;
      expect(a).toBeLessThan(b);
      expect(pairs.labels[p]).toBe(labels[a] === labels[b] ? 1 : 0);
      if (pairs.labels[p] === 1) positives += 1;
      uses.set(`${a},${b}`, (uses.get(`${a},${b}`) ?? 0) + 1);
    }
    expect(positives).toBe(labels.length * 20);
    // 4 + 4 examples: 2 x 6 = 12 same-label pairs share 160 uses (13 or 14 each), 16 other-label
    // pairs share 160 (10 each).
    const same = [...uses].filter(([key]) => labels[Number(key.split(',')[0])] === labels[Number(key.split(',')[1])]);
    const other = [...uses].filter(([key]) => !same.some(([k]) => k === key));
    expect([same.length, other.length]).toEqual([12, 16]);
    expect(new Set(same.map(([, n]) => n))).toEqual(new Set([13, 14]));
    expect(new Set(other.map(([, n]) => n))).toEqual(new Set([10]));
    expect(samplePairs(labels, { iterations: 20, seed: 5 })).toEqual(pairs);
    expect(samplePairs(labels, { iterations: 20, seed: 6 }).b).not.toEqual(pairs.b);
  });

  it('reads each kind of pair round-robin, so uses differ by at most one', () => {
    // 3 + 2 examples, 1 round: 5 same-label pairs from the 3 + 1 distinct ones (one used twice),
    // 5 other-label pairs from 6 (each at most once).
    const pairs = samplePairs([true, true, true, false, false], { iterations: 1, seed: 3 });
    const counts = new Map<string, number>();
    for (let p = 0; p < pairs.a.length; p += 1) {
      const key = `${pairs.labels[p]}:${pairs.a[p]},${pairs.b[p]}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    expect(pairs.a.length).toBe(10);
    const same = [...counts]
      .filter(([key]) => key.startsWith('1:'))
      .map(([, n]) => n)
      .sort();
    const other = [...counts].filter(([key]) => key.startsWith('0:')).map(([, n]) => n);
    expect(same).toEqual([1, 1, 1, 2]);
    expect(other).toEqual([1, 1, 1, 1, 1]);
  });

  it('rejects a single class and bad options', () => {
    expect(() => samplePairs([true, true])).toThrow(new RangeError('labels must hold at least two classes'));
    expect(() => samplePairs(labels, { iterations: 0 })).toThrow(new RangeError('options.iterations must be a positive integer'));
    expect(() => samplePairs(labels, { seed: 1.5 })).toThrow(new TypeError('options.seed must be a non-negative integer'));
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

describe('pairBatch', () => {
  it('gives every pair its two texts as rows of their own', () => {
    const tokens = [Int32Array.of(101, 1, 102), Int32Array.of(101, 2, 2, 102), Int32Array.of(101, 3, 102)];
    const pairs = { a: Int32Array.of(2, 0, 1), b: Int32Array.of(2, 1, 1), labels: Float32Array.of(1, 0, 1) };
    const batch = pairBatch(tokens, pairs, 0, 2);
    expect(Array.from(batch.lengths)).toEqual([3, 3, 3, 4]);
    expect(Array.from(batch.ids)).toEqual([101, 3, 102, 101, 3, 102, 101, 1, 102, 101, 2, 2, 102]);
    expect(Array.from(batch.pairA)).toEqual([0, 2]);
    expect(Array.from(batch.pairB)).toEqual([1, 3]);
    expect(Array.from(batch.labels)).toEqual([1, 0]);
    expect(Array.from(pairBatch(tokens, pairs, 2, 16).lengths)).toEqual([4, 4]);
  });
});

describe('sampleTargetPairs', () => {
  it('pairs classes like samplePairs, and label sets by overlap (two empty sets count as the same)', () => {
    const classes = Int32Array.of(0, 1, 2, 0, 1, 2);
    expect(sampleTargetPairs({ kind: 'classes', classes, count: 3 }, { iterations: 3, seed: 5 })).toEqual(
      samplePairs(Array.from(classes), { iterations: 3, seed: 5 }),
    );
    // {a}, {b}, {a, b}, {}, {}
    const targets = { kind: 'label-sets' as const, sets: Uint8Array.of(1, 0, 0, 1, 1, 1, 0, 0, 0, 0), count: 2 };
    const same = samePair(targets);
    expect([same(0, 1), same(0, 2), same(1, 2), same(2, 3), same(3, 4), same(0, 3)]).toEqual([false, true, true, false, true, false]);
    const pairs = sampleTargetPairs(targets, { iterations: 2, seed: 1 });
    expect(pairs.a.length).toBe(20);
    for (let p = 0; p < pairs.a.length; p++) expect(pairs.labels[p]).toBe(same(pairs.a[p], pairs.b[p]) ? 1 : 0);
    // Every set shares a label with every other: nothing to push apart.
    expect(() => sampleTargetPairs({ kind: 'label-sets', sets: Uint8Array.of(1, 0, 1, 1, 1, 0), count: 2 })).toThrow(
      expect.objectContaining({
        code: 'invalid_request',
        param: 'examples',
        message:
          'fine-tuning needs two examples that share a label and two that share none (got 3 and 0 such pairs); train with finetune: false',
      }),
    );
  });
});
