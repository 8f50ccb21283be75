// The accuracy bench's tasks and their seeded draws, shared by `accuracy` (train() end to end) and
// `accuracy-levers` (head-level levers on each draw's cached embeddings).
import type { TrainOptions, TrainRequest } from '../src/index.js';
import { kPerClass, split, splitClasses } from '../fixtures/draw.js';
import { emailClasses, uciSentences, uciSites } from '../fixtures/corpora.js';
import { seededRandom } from '../src/random.js';

/** Training rows per class of the multi-class tasks (the fewest a multi-class request takes). */
export const kMultiClassPerClass = 8;

/** One seed's draw of a task: what to train on, and the test texts with their expected labels. */
export interface Draw {
  request: Pick<TrainRequest, 'task_type' | 'examples'>;
  options: TrainOptions;
  testTexts: string[];
  expected: (boolean | string)[];
}

export interface Task {
  name: string;
  classes: number;
  perClass: number;
  draw(seed: number): Draw;
}

function binaryTask(name: 'imdb' | 'yelp'): Task {
  const rows = uciSentences(name);
  return {
    name,
    classes: 2,
    perClass: kPerClass,
    draw(seed) {
      const { trainSet, testSet } = split(rows, seed);
      return {
        request: {
          task_type: 'binary-classification',
          examples: trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' })),
        },
        // The default training seed (42) on every draw, as the binary figures were always measured.
        options: {},
        testTexts: testSet.map((row) => row.text),
        expected: testSet.map((row) => row.label),
      };
    },
  };
}

function multiClassTask(name: string, rows: readonly { text: string; label: string }[]): Task {
  return {
    name,
    classes: new Set(rows.map((row) => row.label)).size,
    perClass: kMultiClassPerClass,
    draw(seed) {
      const { trainSet, testSet } = splitClasses(rows, seed, kMultiClassPerClass);
      return {
        request: { task_type: 'multi-class-classification', examples: trainSet.map((row) => ({ text: row.text, label: row.label })) },
        // Training seed = draw seed, as the multi-class figures were first measured.
        options: { seed },
        testTexts: testSet.map((row) => row.text),
        expected: testSet.map((row) => row.label),
      };
    },
  };
}

/**
 * A draw's held-out rows [0, t) split once (seeded by the draw) into the user's unlabelled texts (up to
 * `count`, at most half of them) and the test rows, both in corpus order.
 */
export function splitHeldOut(t: number, count: number, seed: number): { pool: Int32Array; test: Int32Array } {
  const order = Array.from({ length: t }, (_, i) => i);
  const random = seededRandom(1000 + seed);
  for (let i = t - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const m = Math.min(count, Math.floor(t / 2));
  return { pool: Int32Array.from(order.slice(0, m)).sort(), test: Int32Array.from(order.slice(m)).sort() };
}

export const kTasks: Readonly<Record<string, () => Task>> = {
  imdb: () => binaryTask('imdb'),
  yelp: () => binaryTask('yelp'),
  sites: () => multiClassTask('sites', uciSites()),
  email: () => multiClassTask('email', emailClasses(250, 2000)),
};
