// Uncertainty sampling (src/train/uncertainty.ts): on small hand-made embeddings whose fitted heads
// are known by symmetry, which unlabelled rows come first for each kind of task, that near-duplicates
// wait until the distinct rows are taken, the seeded first round, and the argument checks.
import { describe, expect, it } from 'vitest';

import { chooseSeedTexts, chooseUncertainTexts, kDuplicateCosine, selectByUncertainty } from '../../src/train/uncertainty.js';
import type { LabelledRow, UncertaintyTask } from '../../src/train/uncertainty.js';

/** The rows, each L2-normalized, one after the other. */
function rows(...vectors: number[][]): Float32Array {
  return Float32Array.from(
    vectors.flatMap((v) => {
      const norm = Math.hypot(...v);
      return v.map((x) => x / norm);
    }),
  );
}

const binary: UncertaintyTask = { taskType: 'binary-classification', labels: ['billing question'] };

// Rows 2..6 are unlabelled; the comments give each row's distance from the plane x = 0.
const kBinaryRows = rows(
  [1, 0, 0],
  [-1, 0, 0],
  [0.01, 1, 0], // 2: 0.01
  [0.02, 0.999, 0.04], // 3: 0.02, a near-duplicate of row 2 (cosine 0.9989)
  [0.05, 0, 1], // 4: 0.05
  [-0.3, -1, 0], // 5: 0.29
  [0.9, 0.1, 0.1], // 6: 0.99
);

describe('chooseUncertainTexts', () => {
  it('binary: the rows nearest the head boundary first, a near-duplicate of a chosen row last', () => {
    // +x true and -x false: the fitted head is w = (w, 0, 0), b = 0, so |p - 0.5| grows with |x|.
    const labelled: LabelledRow[] = [
      { index: 0, label: true },
      { index: 1, label: false },
    ];
    const choose = (count: number) => chooseUncertainTexts({ embeddings: kBinaryRows, dim: 3, labelled, task: binary, count });
    expect(choose(1)).toEqual([2]);
    // Row 3 is less sure than row 4, but it asks what row 2 asks.
    expect(choose(3)).toEqual([2, 4, 5]);
    expect(choose(4)).toEqual([2, 4, 5, 6]);
    // Once the distinct rows are taken, the near-duplicate fills the call; never more than the unlabelled rows.
    expect(choose(5)).toEqual([2, 4, 5, 6, 3]);
    expect(choose(50)).toEqual([2, 4, 5, 6, 3]);
    expect(choose(0)).toEqual([]);
  });

  it('binary: the picks follow the fitted head, not the geometry alone', () => {
    // The same rows, labelled along z instead: rows 2 and 5 lie on z = 0 (a tie, the lower index first),
    // then row 3 (z 0.04) waits as row 2's near-duplicate, row 6 (0.11), row 4 (0.9995).
    const embeddings = rows([0, 0, 1], [0, 0, -1], ...[2, 3, 4, 5, 6].map((i) => Array.from(kBinaryRows.subarray(i * 3, i * 3 + 3))));
    const labelled: LabelledRow[] = [
      { index: 0, label: true },
      { index: 1, label: false },
    ];
    expect(chooseUncertainTexts({ embeddings, dim: 3, labelled, task: binary, count: 3 })).toEqual([2, 5, 6]);
    expect(chooseUncertainTexts({ embeddings, dim: 3, labelled, task: binary, count: 5 })).toEqual([2, 5, 6, 4, 3]);
  });

  it('multi-class: the smallest margin between the two most probable classes first', () => {
    // One labelled row per axis: the softmax head is symmetric, each class's logit grows with its coordinate.
    const embeddings = rows(
      [1, 0, 0],
      [0, 1, 0],
      [0, 0, 1],
      [1, 1, 0], // 3: a and b tie, margin 0
      [0, 1, 0.8], // 4: b just ahead of c
      [0.5, 0, 1], // 5: c well ahead of a
      [1, 0.02, 0], // 6: surely a
      [1.02, 1, 0.05], // 7: a just ahead of b, a near-duplicate of row 3
    );
    const labelled: LabelledRow[] = [
      { index: 0, label: 'a' },
      { index: 1, label: 'b' },
      { index: 2, label: 'c' },
    ];
    const task: UncertaintyTask = { taskType: 'multi-class-classification', labels: ['a', 'b', 'c'] };
    expect(chooseUncertainTexts({ embeddings, dim: 3, labelled, task, count: 3 })).toEqual([3, 4, 5]);
    expect(chooseUncertainTexts({ embeddings, dim: 3, labelled, task, count: 5 })).toEqual([3, 4, 5, 6, 7]);
  });

  it('multi-label: the row with a label closest to 0.5 first, whatever its other labels', () => {
    // x is on +x and +y, y on -x and +y: the heads are w_x = w (1, 1, 0) and w_y = w (-1, 1, 0), b = 0,
    // so a row's nearest label to 0.5 is the smaller of |x + y| and |y - x|.
    const embeddings = rows(
      [1, 0, 0],
      [-1, 0, 0],
      [0, 1, 0],
      [0, -1, 0],
      [1, 1, 0.5], // 4: y - x = 0
      [1, -0.9, 0.3], // 5: x + y = 0.07, y - x = -1.38
      [0.9, 0.1, 0], // 6: 1.1 and 0.88
      [-1, 0.6, 0], // 7: 0.34 and 1.37
    );
    const labelled: LabelledRow[] = [
      { index: 0, label: ['x'] },
      { index: 1, label: ['y'] },
      { index: 2, label: ['x', 'y'] },
      { index: 3, label: [] },
    ];
    const task: UncertaintyTask = { taskType: 'multi-label-classification', labels: ['x', 'y'] };
    expect(chooseUncertainTexts({ embeddings, dim: 3, labelled, task, count: 4 })).toEqual([4, 5, 7, 6]);
  });

  it('reads the duplicate cosine right on rows that are not unit length', () => {
    // Every row three times as long: the head's picks may move, the guard's may not (row 3 still waits for row 2).
    const long = kBinaryRows.map((x) => 3 * x);
    const labelled: LabelledRow[] = [
      { index: 0, label: true },
      { index: 1, label: false },
    ];
    expect(chooseUncertainTexts({ embeddings: long, dim: 3, labelled, task: binary, count: 5 })).toEqual([2, 4, 5, 6, 3]);
  });

  it('never takes two rows above the duplicate cosine while distinct ones remain', () => {
    // Twenty copies of one direction, slightly turned, and one distinct row: the call takes one copy and the distinct row.
    const copies = Array.from({ length: 20 }, (_, i) => [0.001 * i, 1, 0.01 * i]);
    const embeddings = rows([1, 0, 0], [-1, 0, 0], ...copies, [0.2, 0, 1]);
    const labelled: LabelledRow[] = [
      { index: 0, label: true },
      { index: 1, label: false },
    ];
    const picked = chooseUncertainTexts({ embeddings, dim: 3, labelled, task: binary, count: 2 });
    expect(picked).toEqual([2, 22]);
    const dot = (a: number, b: number) => [0, 1, 2].reduce((s, j) => s + embeddings[a * 3 + j]! * embeddings[b * 3 + j]!, 0);
    expect(dot(2, 22)).toBeLessThan(kDuplicateCosine);
  });

  it('refuses labels outside the task and rows that are not rows', () => {
    const base = { embeddings: kBinaryRows, dim: 3, task: binary, count: 2 };
    expect(() => chooseUncertainTexts({ ...base, labelled: [] })).toThrow(
      new RangeError('labelled must hold at least one row (the first round is chooseSeedTexts)'),
    );
    expect(() => chooseUncertainTexts({ ...base, labelled: [{ index: 0, label: 'yes' }] })).toThrow(
      new TypeError('labelled[0].label must be a boolean for a binary task'),
    );
    expect(() => chooseUncertainTexts({ ...base, labelled: [{ index: 7, label: true }] })).toThrow(
      new RangeError('labelled[0].index must be a row in [0, 7)'),
    );
    expect(() =>
      chooseUncertainTexts({
        ...base,
        labelled: [
          { index: 1, label: true },
          { index: 1, label: false },
        ],
      }),
    ).toThrow(new RangeError('labelled[1].index 1 is labelled twice'));
    const multi: UncertaintyTask = { taskType: 'multi-class-classification', labels: ['a', 'b'] };
    expect(() => chooseUncertainTexts({ ...base, task: multi, labelled: [{ index: 0, label: 'c' }] })).toThrow(
      new RangeError('labelled[0].label must be one of the task\'s labels (got "c")'),
    );
    const multiLabel: UncertaintyTask = { taskType: 'multi-label-classification', labels: ['a', 'b'] };
    expect(() => chooseUncertainTexts({ ...base, task: multiLabel, labelled: [{ index: 0, label: 'a' }] })).toThrow(
      new TypeError('labelled[0].label must be an array of labels for a multi-label task'),
    );
    expect(() => chooseUncertainTexts({ ...base, dim: 2, labelled: [{ index: 0, label: true }] })).toThrow(
      new RangeError('embeddings must hold n * dim values (got 21 for dim 2)'),
    );
    expect(() => chooseUncertainTexts({ ...base, count: -1, labelled: [{ index: 0, label: true }] })).toThrow(
      new RangeError('count must be a non-negative integer'),
    );
  });

  it('returns nothing when every row is labelled', () => {
    const labelled: LabelledRow[] = [
      { index: 0, label: true },
      { index: 1, label: false },
    ];
    expect(chooseUncertainTexts({ embeddings: kBinaryRows.subarray(0, 6), dim: 3, labelled, task: binary, count: 3 })).toEqual([]);
  });
});

describe('chooseSeedTexts', () => {
  it('draws distinct rows, ascending, the same for the same seed', () => {
    expect(chooseSeedTexts(10, 3, 42)).toEqual([5, 6, 8]);
    expect(chooseSeedTexts(1000, 5, 7)).toEqual([11, 62, 523, 699, 976]);
    expect(chooseSeedTexts(1000, 5, 8)).not.toEqual(chooseSeedTexts(1000, 5, 7));
    const many = chooseSeedTexts(1000, 100, 3);
    expect(new Set(many).size).toBe(100);
    expect(many.every((i, k) => Number.isInteger(i) && i >= 0 && i < 1000 && (k === 0 || many[k - 1]! < i))).toBe(true);
  });

  it('takes every row when asked for as many or more, none when asked for none', () => {
    expect(chooseSeedTexts(4, 9, 1)).toEqual([0, 1, 2, 3]);
    expect(chooseSeedTexts(4, 0, 1)).toEqual([]);
    expect(chooseSeedTexts(0, 3, 1)).toEqual([]);
    expect(() => chooseSeedTexts(4, 1.5, 1)).toThrow(new RangeError('count must be a non-negative integer'));
    expect(() => chooseSeedTexts(-1, 1, 1)).toThrow(new RangeError('n must be a non-negative integer'));
  });
});

describe('selectByUncertainty', () => {
  /** A teacher that answers the sign of x, refusing the rows in `refuse`, and remembers each round it was asked. */
  function teacher(refuse: readonly number[] = []) {
    const rounds: number[][] = [];
    const label = async (asked: number[]) => {
      rounds.push(asked);
      return asked.map((i) => (refuse.includes(i) ? null : kBinaryRows[i * 3]! > 0));
    };
    return { rounds, label };
  }

  it("spends the budget in rounds, fitting the head again on each round's answers", async () => {
    const { rounds, label } = teacher([2]);
    const given: LabelledRow[] = [
      { index: 0, label: true },
      { index: 1, label: false },
    ];
    const result = await selectByUncertainty({
      embeddings: kBinaryRows,
      dim: 3,
      task: binary,
      budget: 3,
      seed: 1,
      roundSize: 2,
      labelled: given,
      label,
    });
    // Round 1 as chooseUncertainTexts picks it; row 2 is refused, row 4 (z = 1) comes back true, which turns the
    // head's boundary towards row 5: the next round asks it, not row 3, which stood nearer x = 0 before.
    expect(rounds).toEqual([[2, 4], [5]]);
    expect(result).toEqual({
      labelled: [...given, { index: 4, label: true }, { index: 5, label: false }],
      unanswered: [2],
    });
  });

  it('starts with a seeded random round when nothing is labelled yet', async () => {
    // Defaults: a random round of 20 (here all 7 rows), then rounds of 10.
    const all = teacher();
    await selectByUncertainty({ embeddings: kBinaryRows, dim: 3, task: binary, budget: 100, seed: 5, label: all.label });
    expect(all.rounds).toEqual([chooseSeedTexts(7, 20, 5)]);
    const { rounds, label } = teacher();
    await selectByUncertainty({ embeddings: kBinaryRows, dim: 3, task: binary, budget: 4, seed: 5, firstRound: 2, roundSize: 2, label });
    expect(rounds[0]).toEqual(chooseSeedTexts(7, 2, 5));
    // Rows 4 (true) and 5 (false) put the boundary across +x and -x: rows 0 and 1 are the least sure.
    expect(rounds).toEqual([
      [4, 5],
      [0, 1],
    ]);
  });

  it('asks every row once at most, and draws again at random while every answer was a refusal', async () => {
    const { rounds, label } = teacher([4, 5]);
    const result = await selectByUncertainty({
      embeddings: kBinaryRows,
      dim: 3,
      task: binary,
      budget: 100,
      seed: 5,
      firstRound: 2,
      roundSize: 2,
      label,
    });
    expect(rounds[0]).toEqual([4, 5]);
    // Nothing labelled after round 1: round 2 is a seeded draw among the five rows left.
    const left = [0, 1, 2, 3, 6];
    expect(rounds[1]).toEqual(chooseSeedTexts(5, 2, 7).map((k) => left[k]));
    expect(rounds.flat().sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(result.unanswered).toEqual([4, 5]);
    expect(result.labelled.map((row) => row.index).sort()).toEqual([0, 1, 2, 3, 6]);
  });

  it('refuses a budget or a round that is not a count, and an answer of the wrong length', async () => {
    const base = { embeddings: kBinaryRows, dim: 3, task: binary, seed: 1, label: async (rows: number[]) => rows.map(() => true) };
    await expect(selectByUncertainty({ ...base, budget: -1 })).rejects.toThrow(new RangeError('budget must be a non-negative integer'));
    await expect(selectByUncertainty({ ...base, budget: 2, roundSize: 0 })).rejects.toThrow(
      new RangeError('roundSize must be a positive integer'),
    );
    await expect(selectByUncertainty({ ...base, budget: 2, firstRound: 1.5 })).rejects.toThrow(
      new RangeError('firstRound must be a positive integer'),
    );
    await expect(selectByUncertainty({ ...base, budget: 2, label: async () => [true] })).rejects.toThrow(
      new RangeError('label() must answer 2 rows (got 1)'),
    );
    expect(await selectByUncertainty({ ...base, budget: 0 })).toEqual({ labelled: [], unanswered: [] });
  });
});
