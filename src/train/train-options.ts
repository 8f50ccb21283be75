// What train() takes besides the request: progress, cancellation, publishing, seed, threads and the
// head's levers, and the one check that turns a bad option into a TypeError naming it.
import type { TeacherOptions } from './label-with-teacher.js';
import type { Hub } from '../model/hub.js';
import * as is from '../is.js';
import { checkLabelWordsLever } from './label-words.js';
import type { LabelWordsLever } from './label-words.js';

/** A progress event: `done` of `total` units of the current stage. */
export interface TrainProgress {
  /**
   * `finetune`: contrastive steps done (with `loss`); `embed`: examples embedded by the base
   * encoder (frozen models: to fit the head; fine-tuned ones, after fine-tuning: to estimate
   * accuracy); `fit`: head fitted (0 or 1 of 1); `save`: published (0 or 1 of 1); `labelling`: texts a teacher
   * answered (a request with a `teacher`), before the others.
   */
  stage: 'labelling' | 'finetune' | 'embed' | 'fit' | 'save';
  done: number;
  total: number;
  /** `finetune` only: the cosine-similarity loss, averaged over the last 10 steps. */
  loss?: number;
}

export interface TrainOptions {
  onProgress?: (progress: TrainProgress) => void;
  /** Cancels training; the promise rejects with `SvcError('aborted')`. */
  signal?: AbortSignal;
  /** Publishes the trained model there under `id` (which must then be `<org>/<model_id>`). */
  hub?: Hub;
  /** The model id, or with `hub` the hub id `<org>/<model_id>`. Default: `<model>-<12 hex>`. */
  id?: string;
  /**
   * Seeds the fine-tuning pairs, their order and the dropout masks: the same examples, seed and
   * pool size give the same classifier, bit for bit. Default 42.
   */
  seed?: number;
  /**
   * Engine threads for fine-tuning. Default: the whole pool's (workers x engine threads, every core
   * with the default pool), since nothing waits beside a library call; the service passes its
   * training share instead, so predictions keep their cores. Each thread fine-tunes its own texts of
   * a step and their gradients add up in thread order: the same count gives the same bits.
   */
  threads?: number;
  /**
   * How the head uses the label's own words (`label_text`, or the class names, in the zero-shot
   * templates, embedded by the model's encoder): `{ kind: 'examples', weight }` adds those sentences
   * to the examples, one class's together weighing `weight` examples (weight 2 won on the accuracy
   * bench: docs/benchmark-history.md, "Beyond SetFit"); `{ kind: 'direction', scale }`
   * lets the head move along each label's direction nearly unpenalized. Cross-validation uses them in
   * every fold; the manifest's `training.label_words` records it. Default `{ kind: 'none' }`; with the request's
   * `unlabeled` texts, `{ kind: 'examples', weight: 2 }` (the two won together).
   */
  labelWords?: LabelWordsLever;
  /**
   * After fine-tuning's contrastive steps, SetFit's end-to-end phase for `epochs` passes over the
   * examples: a softmax head trained together with the encoder (or the adapter) on the examples'
   * cross-entropy, two examples a step; the model's head is then fitted on the final embeddings as
   * usual. Single-label requests with `finetune` only; ignored otherwise. Default: none.
   */
  endToEnd?: { epochs: number };
  /**
   * Whose training this is, when several share one pool: each of its pool tasks (embedding chunks, the fine-tuning
   * run, the head's fits) then waits for that tenant's turn in the pool's training share, at most all workers but
   * one at a time, tenants taking turns task by task (src/pool/background-gate.ts). The service passes the
   * organization. Default: none, and the tasks go straight to the pool (every worker).
   */
  tenant?: string;
  /**
   * A request with a `teacher`: how the teacher is reached (provider URLs and keys, else `SVC_PROVIDER_{A,B,C}_*`;
   * see `labelWithTeacher`). Ignored for requests with labelled examples.
   */
  teacher?: TeacherOptions;
}

/** Throws a TypeError naming the first bad option: options come from user code and are checked at run time too. */
export function checkOptions(options: TrainOptions): void {
  is.object(options, 'options');
  if (options.onProgress !== undefined) is.func(options.onProgress, 'options.onProgress');
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new TypeError('options.signal must be an AbortSignal');
  }
  if (options.hub !== undefined && (typeof options.hub !== 'object' || typeof options.hub?.publish !== 'function')) {
    throw new TypeError('options.hub must be a Hub');
  }
  if (options.id !== undefined && (typeof options.id !== 'string' || options.id.length === 0)) {
    throw new TypeError('options.id must be a non-empty string');
  }
  if (options.tenant !== undefined && (typeof options.tenant !== 'string' || options.tenant.length === 0)) {
    throw new TypeError('options.tenant must be a non-empty string');
  }
  if (options.hub && options.id === undefined) throw new TypeError('options.id is required with options.hub');
  if (options.seed !== undefined) is.nonNegativeInteger(options.seed, 'options.seed');
  if (options.threads !== undefined) is.positiveInteger(options.threads, 'options.threads');
  if (options.labelWords !== undefined) checkLabelWordsLever(options.labelWords, 'options.labelWords');
  if (options.teacher !== undefined) is.object(options.teacher, 'options.teacher');
  if (options.endToEnd !== undefined) {
    is.object(options.endToEnd, 'options.endToEnd');
    is.positiveInteger(options.endToEnd.epochs, 'options.endToEnd.epochs');
  }
}
