// Classify without a stored model: the texts of a call are labelled by a head fitted, there and
// then, on the frozen base encoder's embeddings of the call's examples (or of template sentences
// built from the label names: zero-shot). The fitted head is kept in a bounded cache under a hash of
// what it was fitted on, so a client that sends the same examples on every call pays the fit (and
// the examples' embeddings) once. Every text is embedded through the predict batcher, so classify
// calls take their turn with predict calls and are admitted (or refused) by the same rules.
import { createHash } from 'node:crypto';

import type { Head } from '../model/directory.js';
import { runTask } from '../pool/pool.js';
import type { FitResult } from '../pool/tasks.js';
import { packHeads } from '../predict/call.js';
import { kDefaultThreshold, markUnknownTokens, thresholds } from '../predict/predictions.js';
import type { ClassPrediction, LabelSetPrediction, Prediction } from '../predict/predictions.js';
import { scoreSegments } from '../predict/head.js';
import { embedTexts } from '../predict/embed-windows.js';
import { findNearest, type Neighbour } from '../predict/nearest.js';
import { predictBounds } from '../predict/admission.js';
import { SvcError } from '../errors.js';
import { type ClassifyRequest, type TruncateMode, validateClassifyRequest } from '../contract/classify-request.js';
import { kDefaultTruncate } from '../contract/long-texts.js';
import type { ClassExample, LabelSetExample, TaskType, TrainExample } from '../contract/train-request.js';
import { headOf, kHeadC, kHeadKinds, targetsOf } from './train.js';
import { binaryZeroShot, classZeroShot, labelSetZeroShot } from './zero-shot.js';
import { binaryZeroShotScorer, labelSetZeroShotScorer, zeroShotReference, type ZeroShotScorer } from './zero-shot-scores.js';

/** Fitted heads kept for repeated examples (least recently used evicted); a head is 384 floats per label. */
export const kClassifyCachedHeads = 256;
/**
 * Most examples whose embeddings the cache keeps over all its heads (for `explain`): 50,000 x 384
 * floats is 77 MB. The least recently used heads go first when either bound is passed.
 */
export const kClassifyCachedExamples = 50_000;

/** A fitted head and the embeddings of the examples it was fitted on (n x dim). */
interface Fitted {
  head: Head | null;
  /** Zero-shot binary and multi-label: the scores against everyday texts (zero-shot-scores.ts) instead of a fitted head. */
  scorer: ZeroShotScorer | null;
  embeddings: Float32Array;
}

/**
 * A prediction of a classify call: predict's, plus `chunks` (how many windows were read) with `truncate: 'chunks'`,
 * and `nearest` (the examples nearest the text) with `explain: k`.
 */
export type ClassifyPrediction<P> = P & { chunks?: number; nearest?: Neighbour[] };

/** What `classify()` and `POST /v2/classify` answer: `/v2/predict`'s shape, `model` naming the base encoder, and `zero_shot`. */
export type ClassifyResponse =
  | { model: string; label_text: string; zero_shot: boolean; predictions: ClassifyPrediction<Prediction>[] }
  | { model: string; task_type: 'multi-class-classification'; zero_shot: boolean; predictions: ClassifyPrediction<ClassPrediction>[] }
  | { model: string; task_type: 'multi-label-classification'; zero_shot: boolean; predictions: ClassifyPrediction<LabelSetPrediction>[] };

/** Options of {@link classify}. */
export interface ClassifyOptions {
  /** Base encoder; default `svc-small`. */
  model?: string;
  /** Needed with no examples; otherwise read from them (every `label` boolean: binary, every `label` a string: multi-class, every example with `labels`: multi-label). */
  taskType?: TaskType;
  /** Zero-shot multi-class or multi-label: the names. */
  labels?: string[];
  /** Zero-shot binary: what `label: true` means. */
  labelText?: string;
  /**
   * Binary: the probability `label: true` needs; multi-label: the probability a label needs, for every label or per
   * label (the others keep 0.5). Default 0.5. Multi-class answers the most probable class and takes none.
   */
  threshold?: number | Readonly<Record<string, number>>;
  /** Long texts: `end` (default), `start`, `none` or `chunks` (see the request's `truncate`). */
  truncate?: TruncateMode;
  /** Per text, the `explain` examples nearest to it, with their labels and similarity. */
  explain?: number;
  /** Stops waiting; texts not in a batch yet leave the batcher's queue. */
  signal?: AbortSignal;
  /** Whose call this is (the service passes the organization); tenants take turns in the batcher. */
  tenant?: string;
}

type AnyExample = TrainExample | ClassExample | LabelSetExample;

const kDefaultModel = 'svc-small';

// Insertion order doubles as recency; a pending fit is cached too, so concurrent calls share it.
const heads = new Map<string, { fitting: Promise<Fitted>; examples: number }>();
let cachedExamples = 0;

/** Fitted heads in the cache now (tests, the bench). */
export function cachedClassifyHeads(): number {
  return heads.size;
}

/** Empties the head cache (the bench's uncached runs). */
export function clearClassifyHeads(): void {
  heads.clear();
  cachedExamples = 0;
}

/** The examples a head is fitted on, and their label names in head-row order (sorted, as training orders them). */
function fitExamples(request: ClassifyRequest): { examples: AnyExample[]; labels: string[]; labelText: string | null } {
  if (request.task_type === 'binary-classification') {
    const labelText = request.examples[0]?.label_text ?? (request.label_text as string);
    return { examples: request.examples.length > 0 ? request.examples : binaryZeroShot(labelText), labels: [], labelText };
  }
  if (request.task_type === 'multi-class-classification') {
    const labels = request.labels ?? request.examples.map((example) => example.label);
    return {
      examples: request.examples.length > 0 ? request.examples : classZeroShot(labels),
      labels: [...new Set(labels)].sort(),
      labelText: null,
    };
  }
  const labels = request.labels ?? request.examples.flatMap((example) => example.labels);
  return {
    examples: request.examples.length > 0 ? request.examples : labelSetZeroShot(labels),
    labels: [...new Set(labels)].sort(),
    labelText: null,
  };
}

/**
 * The cache key: whose call it is and everything the head depends on, hashed (the examples in the order given). The
 * tenant is part of it, so one organization's calls never find (or time) another's fitted heads, nor share a fit.
 */
function headKey(tenant: string, request: ClassifyRequest, examples: readonly AnyExample[]): string {
  const truncate = request.truncate ?? kDefaultTruncate;
  return createHash('sha256')
    .update(JSON.stringify([tenant, request.model, request.task_type, truncate, examples]))
    .digest('hex');
}

function forget(key: string): void {
  const entry = heads.get(key);
  if (entry === undefined) return;
  heads.delete(key);
  cachedExamples -= entry.examples;
}

function remember(key: string, fitting: Promise<Fitted>, examples: number): void {
  const entry = { fitting, examples };
  heads.set(key, entry);
  cachedExamples += examples;
  // A failed fit is not kept: the next call tries again.
  fitting.catch(() => heads.get(key) === entry && forget(key));
  while (heads.size > kClassifyCachedHeads || (cachedExamples > kClassifyCachedExamples && heads.size > 1))
    forget(heads.keys().next().value as string);
}

function toPredictions(
  request: ClassifyRequest,
  labels: readonly string[],
  probabilities: Float32Array,
  truncated: boolean[],
  chunks: number[],
) {
  const rows = request.task_type === 'binary-classification' ? 1 : labels.length;
  const withChunks = request.truncate === 'chunks';
  const binaryCut = request.task_type === 'binary-classification' ? (request.threshold ?? kDefaultThreshold) : kDefaultThreshold;
  // Multi-label: the per-label cuts, checked against the call's labels (a label the call does not have is a 400).
  const labelCuts = request.task_type === 'multi-label-classification' ? thresholds(request.threshold, labels) : null;
  return truncated.map((cut, i) => {
    const extra = withChunks ? { chunks: chunks[i] } : {};
    if (request.task_type === 'binary-classification') {
      const probability = probabilities[i];
      return { label: probability >= binaryCut, probability, truncated: cut, ...extra };
    }
    const row = probabilities.subarray(i * rows, (i + 1) * rows);
    const scores: Record<string, number> = {};
    labels.forEach((label, k) => (scores[label] = row[k]));
    if (request.task_type === 'multi-class-classification') {
      let best = 0;
      for (let k = 1; k < rows; k++) if (row[k] > row[best]) best = k;
      return { label: labels[best], probability: row[best], scores, truncated: cut, ...extra };
    }
    return { labels: labels.filter((_, k) => row[k] >= labelCuts![k]), scores, truncated: cut, ...extra };
  });
}

/** A cached fit this call joined failed: the call that started it went away (`cause` says how). */
class JoinedFitError extends Error {}

interface Scored {
  fitted: Fitted;
  inputs: Awaited<ReturnType<typeof embedTexts>>;
  dim: number;
}

/** The inputs' embeddings and the head for the examples: the cached one, or one fitted now. */
async function scoreWithHead(
  request: ClassifyRequest,
  examples: AnyExample[],
  labels: string[],
  key: string,
  options: { signal?: AbortSignal; tenant?: string },
): Promise<Scored> {
  const mode = request.truncate ?? kDefaultTruncate;
  const cached = heads.get(key);
  if (cached !== undefined) {
    heads.delete(key);
    heads.set(key, cached);
    const inputs = await embedTexts(request.model, request.inputs, mode, { ...options, paramOf: (t) => `inputs[${t}]` });
    const fitted = await cached.fitting.catch((cause: unknown) => {
      // Aborted by the call that started the fit, not by this one: worth a fit of this call's own.
      throw cause instanceof SvcError && cause.code === 'aborted' ? new JoinedFitError('joined fit aborted', { cause }) : cause;
    });
    return { fitted, inputs, dim: inputs.embeddings.length / request.inputs.length };
  }
  const n = examples.length;
  const embedded = embedTexts(request.model, [...examples.map((example) => example.text), ...request.inputs], mode, {
    ...options,
    paramOf: (t) => (t < n ? `examples[${t}].text` : `inputs[${t - n}]`),
  });
  const kind = kHeadKinds[request.task_type];
  const { deadlineMs } = predictBounds();
  const fitting = embedded.then(async ({ embeddings }) => {
    const dim = embeddings.length / (n + request.inputs.length);
    const own = embeddings.slice(0, n * dim);
    if (request.examples.length === 0 && request.task_type !== 'multi-class-classification') {
      const reference = await zeroShotReference(request.model, options.tenant);
      const scorer =
        request.task_type === 'binary-classification'
          ? binaryZeroShotScorer(own, reference)
          : labelSetZeroShotScorer(own, request.labels ?? [], labels, reference);
      return { head: null, scorer, embeddings: own };
    }
    const task = {
      kind: 'fit' as const,
      head: kind,
      embeddings: own,
      targets: targetsOf(request.task_type, examples, labels),
      dim,
      C: kHeadC,
      balanced: false,
      validation: null,
      crossValidate: false,
    };
    // Not aborted with this call: another call of the tenant with the same examples may be waiting on the same fit.
    const placement = { tenant: options.tenant, startWithinMs: deadlineMs };
    return { head: headOf(kind, await runTask<FitResult>(task, undefined, undefined, placement)), scorer: null, embeddings: own };
  });
  remember(key, fitting, n);
  const all = await embedded;
  const dim = all.embeddings.length / (n + request.inputs.length);
  const inputs = {
    embeddings: all.embeddings.slice(n * dim),
    truncated: all.truncated.slice(n),
    chunks: all.chunks.slice(n),
    unknownShare: all.unknownShare.slice(n),
  };
  return { fitted: await fitting, inputs, dim };
}

/**
 * Answers a validated classify request: the cached head for its examples, or one fitted now (the
 * examples and the inputs then go to the batcher as one call), applied to the inputs' embeddings.
 * The fit is background work in the pool (its tenant's turn on training's share of the workers,
 * within the predict deadline); a fit this call joined that failed because the call that started it
 * went away is started again once.
 */
export async function classifyRequest(
  request: ClassifyRequest,
  options: { signal?: AbortSignal; tenant?: string } = {},
): Promise<ClassifyResponse> {
  const { examples, labels, labelText } = fitExamples(request);
  const key = headKey(options.tenant ?? '', request, examples);
  let scored: Scored;
  try {
    scored = await scoreWithHead(request, examples, labels, key, options);
  } catch (error) {
    const joined = error instanceof JoinedFitError;
    if (!joined || options.signal?.aborted) throw joined ? error.cause : error;
    scored = await scoreWithHead(request, examples, labels, key, options);
  }
  const { fitted, inputs, dim } = scored;
  const probabilities =
    fitted.scorer !== null
      ? fitted.scorer(inputs.embeddings)
      : scoreSegments(inputs.embeddings, dim, Int32Array.of(request.inputs.length), Int32Array.of(0), packHeads([fitted.head!]));
  const predictions = toPredictions(request, labels, probabilities, inputs.truncated, inputs.chunks);
  markUnknownTokens(predictions, inputs.unknownShare);
  if (request.explain !== undefined) {
    const answers = predictions.map((p) => ('label' in p ? p.label : null));
    const source = { kind: 'memory' as const, examples, embeddings: fitted.embeddings };
    const name = await findNearest(source, request.task_type, inputs.embeddings, dim, request.explain, options);
    const neighbours = name(answers);
    predictions.forEach((p, i) => Object.assign(p, { nearest: neighbours[i] }));
  }
  const zeroShot = request.examples.length === 0;
  if (request.task_type === 'binary-classification') {
    return {
      model: request.model,
      label_text: labelText as string,
      zero_shot: zeroShot,
      predictions: predictions as ClassifyPrediction<Prediction>[],
    };
  }
  if (request.task_type === 'multi-class-classification') {
    return {
      model: request.model,
      task_type: request.task_type,
      zero_shot: zeroShot,
      predictions: predictions as ClassifyPrediction<ClassPrediction>[],
    };
  }
  return {
    model: request.model,
    task_type: request.task_type,
    zero_shot: zeroShot,
    predictions: predictions as ClassifyPrediction<LabelSetPrediction>[],
  };
}

/**
 * Labels `inputs` by a head fitted on `examples` with the frozen base encoder, with no training
 * step and nothing stored: the head is fitted in milliseconds and cached under a hash of the
 * examples. With `examples: []`, zero-shot: give `labels` (or `labelText` for binary) and the head
 * is fitted on template sentences built from the names. Throws `SvcError('invalid_request')` for a
 * bad call, as `POST /v2/classify` answers 400.
 *
 * @example
 * ```ts
 * import { classify } from 'svc-classify';
 * const examples = [
 *   { text: 'I loved it', label: true, label_text: 'positive' }, { text: 'Wonderful acting', label: true, label_text: 'positive' },
 *   { text: 'Dull and far too long', label: false, label_text: 'positive' }, { text: 'A waste of time', label: false, label_text: 'positive' },
 * ];
 * await classify(['What a great film'], examples);
 * // { model: 'svc-small', label_text: 'positive', zero_shot: false,
 * //   predictions: [{ label: true, probability: 0.5534231662750244, truncated: false }] }
 * await classify(['What a great film'], examples, { explain: 1 });
 * // { …, predictions: [{ label: true, probability: 0.5534231662750244, truncated: false,
 * //   nearest: [{ text: 'Wonderful acting', label: true, similarity: 0.6311201505086397, supports: true }] }] }
 * await classify(['The battery died in a day'], [], { taskType: 'multi-class-classification', labels: ['battery', 'screen'] });
 * // { model: 'svc-small', task_type: 'multi-class-classification', zero_shot: true,
 * //   predictions: [{ label: 'battery', probability: 0.7018952965736389,
 * //     scores: { battery: 0.7018952965736389, screen: 0.29810473322868347 }, truncated: false }] }
 * ```
 */
export async function classify(inputs: string[], examples: AnyExample[], options: ClassifyOptions = {}): Promise<ClassifyResponse> {
  const body: Record<string, unknown> = {
    model: options.model ?? kDefaultModel,
    task_type: options.taskType,
    inputs,
    examples,
  };
  if (options.labels !== undefined) body.labels = options.labels;
  if (options.labelText !== undefined) body.label_text = options.labelText;
  if (options.truncate !== undefined) body.truncate = options.truncate;
  if (options.threshold !== undefined) body.threshold = options.threshold;
  if (options.explain !== undefined) body.explain = options.explain;
  return classifyRequest(validateClassifyRequest(body), { signal: options.signal, tenant: options.tenant });
}
