// Seeded training draws for few-shot experiments: the same examples on every machine.
import type { LabelledText } from './corpora.js';
import { seededRandom } from '../src/random.js';

/** Training examples drawn per class. */
export const kPerClass = 10;


/** Indices 0..n-1 in a seeded Fisher-Yates order. */
function shuffled(n: number, random: () => number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

/** The training draw of one seed: `perClass` of each label, the rest (in corpus order) to test. */
export function split(rows: LabelledText[], seed: number, perClass = kPerClass): { trainSet: LabelledText[]; testSet: LabelledText[] } {
  const random = seededRandom(seed);
  const chosen = new Set<number>();
  for (const label of [true, false]) {
    const indices = rows.flatMap((row, i) => (row.label === label ? [i] : []));
    for (const k of shuffled(indices.length, random).slice(0, perClass)) chosen.add(indices[k]);
  }
  return {
    trainSet: rows.filter((_, i) => chosen.has(i)),
    testSet: rows.filter((_, i) => !chosen.has(i)),
  };
}

