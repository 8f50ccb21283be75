// Zero-shot scores for binary and multi-label calls, from the label's own words and two references
// embedded once per base model: the names of everyday subjects (in the same template sentences as the
// labels) and plain everyday sentences. A head fitted on a label's templates against their negations
// learns mostly the word "not" and answers about 0.5 for anything, and the one-vs-rest heads of a few
// template sentences each score below 0.5 for everything. Instead, per text and label:
// - relevance: the text's similarity to the label's templates against its similarities to the
//   everyday subjects (and the call's other labels), in the text's own standard deviations of those
//   (a text that is near many subjects, such as a short complaint, needs more to count as any one);
// - binary adds the contrast with the negated label (its templates minus their negations, standardized
//   over the everyday sentences): what tells "positive review" from "not a positive review";
// - the cut: the highest relevance any everyday sentence reaches for that label (the contrast is already 0 for
//   a typical everyday sentence). The answer's probability is sigmoid(relevance - cut + contrast): above 0.5,
//   the text is more about the label than every everyday sentence is, give or take its side of the negation.
// The cut is measured, not learnt from labelled data: docs/classify.md ("Zero-shot") has the accuracy
// it gives, and why the probabilities are scores, not calibrated frequencies.
import { embedTexts } from '../predict/embed-windows.js';
import { kZeroShotTemplates } from './zero-shot.js';

/** Everyday subjects a label's relevance is measured against; each goes into every zero-shot template. */
export const kZeroShotSubjects: readonly string[] = Object.freeze([
  'weather', 'sports', 'food', 'travel', 'music', 'politics', 'health', 'technology', 'science', 'education',
  'family', 'work', 'money', 'shopping', 'cars', 'films', 'books', 'art', 'nature', 'animals',
  'history', 'religion', 'fashion', 'games', 'law', 'news', 'home', 'love', 'business',
]); // prettier-ignore

/** Plain sentences on everyday subjects, about no label in particular: where a label's cut is measured. */
export const kEverydaySentences: readonly string[] = Object.freeze([
  'The meeting has been moved to Thursday afternoon.',
  'I bought bread and milk on the way home.',
  'It rained all morning, but the sun came out after lunch.',
  'The train was crowded as usual.',
  'She has been learning to play the piano for two years.',
  'We painted the kitchen a lighter shade of green.',
  'The library closes at eight on weekdays.',
  'He forgot his umbrella at the office again.',
  'The children played in the park until dinner.',
  'Our neighbours adopted a small grey cat.',
  'The report is due at the end of the month.',
  'I usually drink tea in the morning.',
  'The road to the village was closed for repairs.',
  'They are planning a trip to the mountains in spring.',
  'The new software update changed the menu layout.',
  'My sister moved to a flat near the river.',
  'The museum has a new exhibition of old maps.',
  'Please send me the file when you have a moment.',
  'The garden needs watering twice a week in summer.',
  'He reads the news on his phone every evening.',
  'The bus stop is just around the corner.',
  'We had soup and a salad for lunch.',
  'The printer on the second floor is out of paper.',
  'She runs five kilometres before work.',
  'The concert starts at half past seven.',
  'I need to renew my passport this year.',
  'The old bridge was built more than a century ago.',
  'Can you call me back after the meeting?',
  'The shop on the corner sells fresh flowers.',
  'The team finished the project a week early.',
  'Autumn leaves covered the footpath.',
  'He is writing a book about his grandfather.',
  'The school holidays begin next Friday.',
  'I left my keys on the kitchen table.',
  'The city council approved the new bike lanes.',
  'We watched the sunset from the hill.',
  'The recipe calls for two eggs and a cup of flour.',
  'Our flight lands early tomorrow morning.',
  'The dog barks whenever the doorbell rings.',
  'She works as a nurse at the local hospital.',
  'The heating in the building was fixed yesterday.',
  'They play football every Sunday morning.',
  'The store will be closed on the public holiday.',
  'I am looking for a good book to read on holiday.',
  'The river rose after a week of heavy rain.',
  'He set up a small workshop in the garage.',
  'The lecture was about the history of the region.',
  'Let me know if the time works for you.',
]);

/** The references of one base model: each subject's template centroid (subjects x dim) and the everyday sentences (m x dim). */
export interface ZeroShotReference {
  dim: number;
  subjects: Float64Array;
  everyday: Float32Array;
}

const references = new Map<string, Promise<ZeroShotReference>>();

/** L2-normalized mean of `count` rows of `rows` from row `from`. */
function centroid(rows: ArrayLike<number>, dim: number, from: number, count: number): Float64Array {
  const out = new Float64Array(dim);
  for (let r = from; r < from + count; r++) for (let j = 0; j < dim; j++) out[j] += rows[r * dim + j];
  const norm = Math.hypot(...out) || 1;
  for (let j = 0; j < dim; j++) out[j] /= norm;
  return out;
}

/**
 * The base model's references, embedded through the predict batcher on first use (in the calling tenant's turn) and
 * kept for the process; a failed embedding is not kept, so the next call tries again.
 */
export function zeroShotReference(model: string, tenant: string | undefined): Promise<ZeroShotReference> {
  const known = references.get(model);
  if (known !== undefined) return known;
  const templates = kZeroShotSubjects.flatMap((subject) => kZeroShotTemplates.map((t) => t.replace('{}', subject)));
  const texts = [...templates, ...kEverydaySentences];
  const embedding = embedTexts(model, texts, 'end', { tenant, paramOf: () => 'labels' }).then(({ embeddings }) => {
    const dim = embeddings.length / texts.length;
    const per = kZeroShotTemplates.length;
    const subjects = new Float64Array(kZeroShotSubjects.length * dim);
    kZeroShotSubjects.forEach((_, k) => subjects.set(centroid(embeddings, dim, k * per, per), k * dim));
    return { dim, subjects, everyday: embeddings.slice(templates.length * dim) };
  });
  references.set(model, embedding);
  embedding.catch(() => references.get(model) === embedding && references.delete(model));
  return embedding;
}

const dot = (a: ArrayLike<number>, ai: number, b: ArrayLike<number>, bi: number, dim: number) => {
  let s = 0;
  for (let j = 0; j < dim; j++) s += a[ai + j] * b[bi + j];
  return s;
};

/**
 * Scores texts against one label: relevance among the `background` centroids (rows of dim), plus, with `negated`,
 * the standardized contrast with the negated label. Everyday sentences set the contrast's scale and the cut.
 */
class LabelScorer {
  readonly #label: Float64Array;
  readonly #background: Float64Array;
  readonly #contrast: Float64Array | null;
  readonly #dim: number;
  #contrastMean = 0;
  #contrastSpread = 1;
  readonly #cut: number;

  constructor(label: Float64Array, background: Float64Array, negated: Float64Array | null, reference: ZeroShotReference) {
    const { dim, everyday } = reference;
    this.#dim = dim;
    this.#label = label;
    this.#background = background;
    this.#contrast = negated === null ? null : label.map((v, j) => v - negated[j]);
    const m = everyday.length / dim;
    if (this.#contrast !== null) {
      const values = Array.from({ length: m }, (_, i) => dot(everyday, i * dim, this.#contrast!, 0, dim));
      this.#contrastMean = values.reduce((s, v) => s + v, 0) / m;
      this.#contrastSpread = Math.sqrt(values.reduce((s, v) => s + (v - this.#contrastMean) ** 2, 0) / m) || 1;
    }
    let cut = -Infinity;
    for (let i = 0; i < m; i++) cut = Math.max(cut, this.#relevance(everyday, i * dim));
    this.#cut = cut;
  }

  #relevance(rows: ArrayLike<number>, at: number): number {
    const dim = this.#dim;
    const k = this.#background.length / dim;
    let sum = 0;
    let squares = 0;
    for (let b = 0; b < k; b++) {
      const s = dot(rows, at, this.#background, b * dim, dim);
      sum += s;
      squares += s * s;
    }
    const mean = sum / k;
    const spread = Math.sqrt(Math.max(squares / k - mean * mean, 1e-12));
    return (dot(rows, at, this.#label, 0, dim) - mean) / spread;
  }

  /** The text's relevance above the cut, at row `at`. */
  lift(rows: ArrayLike<number>, at: number): number {
    return this.#relevance(rows, at) - this.#cut;
  }

  /** The text's standardized contrast with the negated label, at row `at` (0 without a negated label). */
  contrast(rows: ArrayLike<number>, at: number): number {
    if (this.#contrast === null) return 0;
    return (dot(rows, at, this.#contrast, 0, this.#dim) - this.#contrastMean) / this.#contrastSpread;
  }
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/**
 * Binary zero-shot: sigmoid(bias + lift weight * lift + contrast weight * contrast), the lift being relevance - cut.
 * The lift carries topics and the contrast carries sentiment (a sentiment label's relevance barely moves between
 * reviews); no single pair of weights carries both. `npm run bench -- zero-shot-calibration` measures seven binary tasks
 * of both kinds (UCI sentiment, UCI sites one-vs-rest, SpamAssassin spam) under weights fitted on the other six: the
 * plain sum (1, 1, 0) measures best of the linear rules (65.2 % mean). max(lift, contrast) measures 67.8 % but
 * answers "My parcel is late" true as a billing question: docs/classify.md ("Zero-shot") has the table.
 */
export const kBinaryZeroShotWeights = Object.freeze({ lift: 1, contrast: 1, bias: 0 });

/** Per text (n x dim), the two binary zero-shot features: [lift, contrast] interleaved (n x 2). */
export type ZeroShotFeatures = (texts: Float32Array) => Float64Array;

/**
 * The binary zero-shot features from the embeddings of `binaryZeroShot(labelText)`, for calibration and inspection.
 *
 * @example
 * ```ts
 * const features = binaryZeroShotFeatures(templateEmbeddings, await zeroShotReference('svc-small', undefined));
 * features(embeddingsOf(['A wonderful film.'])); // Float64Array [lift, contrast] for 'positive review'
 * ```
 */
export function binaryZeroShotFeatures(templates: Float32Array, reference: ZeroShotReference): ZeroShotFeatures {
  const { dim } = reference;
  const per = kZeroShotTemplates.length;
  const scorer = new LabelScorer(centroid(templates, dim, 0, per), reference.subjects, centroid(templates, dim, per, per), reference);
  return (texts) => {
    const n = texts.length / dim;
    const out = new Float64Array(n * 2);
    for (let i = 0; i < n; i++) {
      out[2 * i] = scorer.lift(texts, i * dim);
      out[2 * i + 1] = scorer.contrast(texts, i * dim);
    }
    return out;
  };
}

/** The parts' rows, one after another. */
function rowsOf(parts: readonly Float64Array[]): Float64Array {
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Scores texts (n x dim) for a zero-shot call: n probabilities (binary) or n x labels (multi-label, head order). */
export type ZeroShotScorer = (texts: Float32Array) => Float32Array;

/**
 * A binary zero-shot scorer from the embeddings of `binaryZeroShot(labelText)` (the templates, then their negations).
 *
 * @example
 * ```ts
 * const score = binaryZeroShotScorer(templateEmbeddings, await zeroShotReference('svc-small', undefined));
 * score(embeddingsOf(['Why was I charged twice?', 'My parcel is late'])); // Float32Array [0.91…, 0.33…] for 'billing question'
 * ```
 */
export function binaryZeroShotScorer(templates: Float32Array, reference: ZeroShotReference): ZeroShotScorer {
  const features = binaryZeroShotFeatures(templates, reference);
  const { lift, contrast, bias } = kBinaryZeroShotWeights;
  return (texts) => {
    const f = features(texts);
    return Float32Array.from({ length: f.length / 2 }, (_, i) => sigmoid(bias + lift * f[2 * i] + contrast * f[2 * i + 1]));
  };
}

/**
 * A multi-label zero-shot scorer from the embeddings of `labelSetZeroShot(names)` (each name's templates in turn), the
 * labels answered in `order` (head order: sorted). Each label is measured against the everyday subjects and the other labels.
 */
export function labelSetZeroShotScorer(
  templates: Float32Array,
  names: readonly string[],
  order: readonly string[],
  reference: ZeroShotReference,
): ZeroShotScorer {
  const { dim } = reference;
  const per = kZeroShotTemplates.length;
  const centroids = new Map(names.map((name, k) => [name, centroid(templates, dim, k * per, per)]));
  const scorers = order.map((name) => {
    const others = order.filter((other) => other !== name).map((other) => centroids.get(other)!);
    return new LabelScorer(centroids.get(name)!, rowsOf([reference.subjects, ...others]), null, reference);
  });
  return (texts) => {
    const n = texts.length / dim;
    const out = new Float32Array(n * order.length);
    for (let i = 0; i < n; i++) scorers.forEach((scorer, k) => (out[i * order.length + k] = sigmoid(scorer.lift(texts, i * dim))));
    return out;
  };
}
