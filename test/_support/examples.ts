// Training examples for tests: UCI IMDB sentences, as many positive as negative.
import { uciSentences } from '../../fixtures/corpora.js';
import type { TrainingExample } from '../../src/store/types.js';

/** `each` positive then `each` negative IMDB sentences from position `from` of each side, labelled `labelText`. */
export function imdbExamples(from: number, each: number, labelText = 'positive'): TrainingExample[] {
  const imdb = uciSentences('imdb');
  return [...imdb.filter((r) => r.label).slice(from, from + each), ...imdb.filter((r) => !r.label).slice(from, from + each)].map((r) => ({
    text: r.text,
    label: r.label,
    label_text: labelText,
  }));
}
