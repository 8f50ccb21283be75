// Micro-batching: concurrent predict calls on classifiers that share a base model are merged
// into one engine batch. A call waits at most `waitMs` for company, or less when the batch
// fills its text or token budget; while every worker is busy (predicting or training), calls
// keep gathering here, not in the pool's queue, and go out together as soon as one frees up.
// The wait can be bounded (`configurePredictQueue`): beyond `maxWaitingTexts` a call is refused at
// once, and a call no worker started on within `deadlineMs` is dropped, both with
// SvcError('overloaded'). The library leaves it unbounded; `svc serve` bounds it.
import { debuglog } from 'node:util';

import { SvcError } from '../errors.js';
import { isMultiHead } from '../model/directory.js';
import type { Head } from '../model/directory.js';
import { freePredictSlots, onTaskEnd, runTask } from '../pool/pool.js';
import type { HeadTable, PredictResult, PredictTask } from '../pool/tasks.js';
import { publishPredictBatch, rateLimited } from '../telemetry.js';
import * as is from '../is.js';

const debug = debuglog('svc');

/** How long a call waits for others to share its batch. */
export const kBatchWaitMs = 2;
/** Most texts in one engine batch. */
export const kMaxBatchTexts = 256;
/** Most (estimated) tokens in one engine batch. */
export const kMaxBatchTokens = 32_768;
/** Tokens kept per text by the base models. */
const kMaxTokensPerText = 256;

/**
 * A cheap token estimate that needs no tokenizer on the main thread: about four characters
 * per WordPiece token in English, plus [CLS] and [SEP], capped at the truncation length.
 */
export function estimateTokens(text: string): number {
  return Math.min(kMaxTokensPerText, Math.ceil(text.length / 4) + 2);
}

interface Entry {
  texts: string[];
  tokens: number;
  head: Head;
  resolve(scores: PredictResult): void;
  reject(error: unknown): void;
  signal?: AbortSignal;
  onAbort?: () => void;
  call: Call;
}

/**
 * One `scoreTexts` call, whose parts share a deadline: it ends as soon as a worker starts on any of
 * them, so a large call is bounded in how long it waits to start, not in how long it runs.
 */
interface Call {
  entries: Entry[];
  deadline: NodeJS.Timeout | undefined;
  started: boolean;
}

/** Counters for observing the batching (tests and `NODE_DEBUG=svc`). */
export interface BatchStats {
  /** Predict requests received (a call larger than one batch counts once per part). */
  requests: number;
  /** Engine batches sent to the pool. */
  batches: number;
  /** Texts scored. */
  texts: number;
}

const stats: BatchStats = { requests: 0, batches: 0, texts: 0 };

/** Texts waiting for a worker, over every encoder's queue. */
let waitingTexts = 0;

/** What an overloaded service suggests waiting before a retry: a busy queue drains in about that. */
export const kOverloadedRetryAfterSeconds = 2;

/** Options of {@link configurePredictQueue}; all optional. */
export interface PredictQueueOptions {
  /** Predict texts that may wait for a worker; a call that would go beyond is refused (unless nothing waits). */
  maxWaitingTexts?: number;
  /** Milliseconds a call may wait for a worker to start on it before it is dropped. */
  deadlineMs?: number;
}

export type ResolvedPredictQueueOptions = Required<PredictQueueOptions>;

/**
 * The bounds a shared service runs with (`svc serve`, `startServer`). 2,048 texts are a few
 * seconds of work for one worker; a call that waited 10 s for a worker is better answered 503,
 * so that the client can back off or go elsewhere, than served late.
 */
export const kServicePredictQueue: ResolvedPredictQueueOptions = Object.freeze({ maxWaitingTexts: 2048, deadlineMs: 10_000 });

// The library's own callers await their work: no bound unless asked.
const kUnbounded: ResolvedPredictQueueOptions = Object.freeze({ maxWaitingTexts: Infinity, deadlineMs: Infinity });
let bounds = kUnbounded;

/**
 * Bounds how long predict calls wait for a worker; takes effect for the next call, also while the
 * pool runs. Options left out are unbounded.
 *
 * @example
 * ```ts
 * import { configurePredictQueue } from 'svc-classify';
 * configurePredictQueue({ maxWaitingTexts: 2048, deadlineMs: 10_000 });
 * // { maxWaitingTexts: 2048, deadlineMs: 10000 }
 * ```
 */
export function configurePredictQueue(options: PredictQueueOptions = {}): ResolvedPredictQueueOptions {
  const maxWaitingTexts = options.maxWaitingTexts ?? Infinity;
  const deadlineMs = options.deadlineMs ?? Infinity;
  if (options.maxWaitingTexts !== undefined) is.positiveInteger(options.maxWaitingTexts, 'options.maxWaitingTexts');
  // setTimeout's range: beyond it Node fires at once.
  if (options.deadlineMs !== undefined) is.positiveInteger(options.deadlineMs, 'options.deadlineMs', 2 ** 31 - 1);
  bounds = Object.freeze({ maxWaitingTexts, deadlineMs });
  return bounds;
}

/** A copy of the batching counters since the process started. */
export function batchStats(): BatchStats {
  return { ...stats };
}

/** The texts waiting for one encoder: a base model's, or one fine-tuned model's own. */
class EncoderQueue {
  readonly #baseModel: string;
  readonly #encoderFile: string | null;
  #pending: Entry[] = [];
  #pendingTexts = 0;
  #pendingTokens = 0;
  #timer: NodeJS.Timeout | undefined;
  #inFlight = 0;

  constructor(baseModel: string, encoderFile: string | null) {
    this.#baseModel = baseModel;
    this.#encoderFile = encoderFile;
  }

  get idle(): boolean {
    return this.#pending.length === 0 && this.#inFlight === 0;
  }

  add(entry: Entry): void {
    this.#pending.push(entry);
    waitingTexts += entry.texts.length;
    this.#pendingTexts += entry.texts.length;
    this.#pendingTokens += entry.tokens;
    if (this.#pendingTexts >= kMaxBatchTexts || this.#pendingTokens >= kMaxBatchTokens) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), kBatchWaitMs);
  }

  remove(entry: Entry): boolean {
    const index = this.#pending.indexOf(entry);
    if (index < 0) return false;
    this.#pending.splice(index, 1);
    waitingTexts -= entry.texts.length;
    this.#pendingTexts -= entry.texts.length;
    this.#pendingTokens -= entry.tokens;
    return true;
  }

  /** Sends what waits if a worker is free and the batch is not still gathering company. */
  flushIfWaiting(): void {
    if (this.#pending.length > 0 && this.#timer === undefined) this.#flush();
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    // No slot free (a batch is running, or every worker is busy): keep gathering; the next task to end sends
    // the rest. Otherwise what waits is spread over the free slots, a batch each (the pool decides how many
    // batches run at once: see `freePredictSlots`).
    for (let free = freePredictSlots(); this.#pending.length > 0 && free > 0; free = freePredictSlots()) {
      this.#send(this.#take(Math.ceil(this.#pendingTexts / free)));
    }
  }

  /** Takes entries from the front while they fit the budget and `share` texts (always at least one). */
  #take(share: number): Entry[] {
    const batch: Entry[] = [];
    let texts = 0;
    let tokens = 0;
    const most = Math.min(kMaxBatchTexts, share);
    while (this.#pending.length > 0) {
      const next = this.#pending[0];
      const fits = texts + next.texts.length <= most && tokens + next.tokens <= kMaxBatchTokens;
      if (batch.length > 0 && !fits) break;
      this.remove(next);
      next.call.started = true;
      clearTimeout(next.call.deadline);
      batch.push(next);
      texts += next.texts.length;
      tokens += next.tokens;
    }
    return batch;
  }

  #send(batch: Entry[]): void {
    const heads = new Map<Head, number>();
    for (const entry of batch) if (!heads.has(entry.head)) heads.set(entry.head, heads.size);
    const table = packHeads([...heads.keys()]);
    const task: PredictTask = {
      kind: 'predict',
      baseModel: this.#baseModel,
      encoderFile: this.#encoderFile,
      texts: batch.flatMap((entry) => entry.texts),
      counts: Int32Array.from(batch, (entry) => entry.texts.length),
      heads: Int32Array.from(batch, (entry) => heads.get(entry.head) ?? 0),
      table,
    };
    stats.batches++;
    stats.texts += task.texts.length;
    publishPredictBatch({ texts: task.texts.length });
    debug('predict batch: %d call(s), %d text(s), %d head(s)', batch.length, task.texts.length, heads.size);
    this.#inFlight++;
    runTask<PredictResult>(task).then(
      ({ probabilities, truncated }) => {
        let offset = 0;
        let at = 0;
        for (const entry of batch) {
          const end = offset + entry.texts.length;
          const values = entry.texts.length * headRows(entry.head);
          const part = { probabilities: probabilities.subarray(at, at + values), truncated: truncated.subarray(offset, end) };
          settle(entry, () => entry.resolve(part));
          offset = end;
          at += values;
        }
        this.#done();
      },
      (error: unknown) => {
        for (const entry of batch) settle(entry, () => entry.reject(error));
        this.#done();
      },
    );
  }

  #done(): void {
    this.#inFlight--;
    // Fine-tuned models come and go: drop their queues once empty. (Waiting calls go out on the task-end signal.)
    if (this.#encoderFile !== null && this.idle) queues.delete(this.#encoderFile);
  }
}

/** Probabilities a head gives per text: 1 for a binary head, one per label otherwise. */
export function headRows(head: Head): number {
  return isMultiHead(head) ? head.biases.length : 1;
}

/** The heads of a batch, packed one after the other for the predict task. */
function packHeads(heads: readonly Head[]): HeadTable {
  const rows = Int32Array.from(heads, headRows);
  const first = new Int32Array(heads.length);
  for (let h = 1; h < heads.length; h++) first[h] = first[h - 1] + rows[h - 1];
  const total = first[heads.length - 1] + rows[heads.length - 1];
  const dim = heads[0].weights.length / rows[0];
  const weights = new Float64Array(total * dim);
  const biases = new Float64Array(total);
  heads.forEach((head, h) => {
    weights.set(head.weights, first[h] * dim);
    if (isMultiHead(head)) biases.set(head.biases, first[h]);
    else biases[first[h]] = head.bias;
  });
  const softmax = Uint8Array.from(heads, (head) => (isMultiHead(head) && head.kind === 'softmax' ? 1 : 0));
  return { weights, biases, rows, first, softmax };
}

function settle(entry: Entry, action: () => void): void {
  if (entry.onAbort) entry.signal?.removeEventListener('abort', entry.onAbort);
  action();
}

// Keyed by base model name, or by a fine-tuned model's encoder file.
const queues = new Map<string, EncoderQueue>();

// Any task that ends frees a worker: the queues that wait get it, in turn.
onTaskEnd(() => {
  for (const queue of queues.values()) queue.flushIfWaiting();
});

function abortError(): SvcError {
  return new SvcError('aborted', 'the prediction was aborted');
}

/**
 * Scores `texts` with `head` on the embeddings of `baseModel`'s encoder (or of a fine-tuned
 * model's own, `encoderFile`), batched with whatever else is being predicted on that encoder.
 * Resolves to the head's probabilities per text (binary: P(true); see `scoreSegments`), in order,
 * and which texts were cut to the encoder's length.
 */
export function scoreTexts(
  baseModel: string,
  encoderFile: string | null,
  head: Head,
  texts: readonly string[],
  signal?: AbortSignal,
): Promise<PredictResult> {
  if (texts.length === 0) return Promise.resolve({ probabilities: new Float32Array(0), truncated: new Uint8Array(0) });
  if (signal?.aborted) return Promise.reject(abortError());
  const { maxWaitingTexts } = bounds;
  // A call alone in the queue always goes in, however large: refusing it could never succeed.
  if (waitingTexts > 0 && waitingTexts + texts.length > maxWaitingTexts) {
    rateLimited('overloaded');
    return Promise.reject(
      new SvcError(
        'overloaded',
        `The service is overloaded: ${waitingTexts} texts are waiting for a worker and the queue holds ${maxWaitingTexts}; retry in ${kOverloadedRetryAfterSeconds} seconds`,
        { retryAfterSeconds: kOverloadedRetryAfterSeconds },
      ),
    );
  }
  const key = encoderFile ?? baseModel;
  let queue = queues.get(key);
  if (!queue) {
    queue = new EncoderQueue(baseModel, encoderFile);
    queues.set(key, queue);
  }
  // Cut large calls into parts that fit one batch each.
  const call: Call = { entries: [], deadline: undefined, started: false };
  const parts: Promise<PredictResult>[] = [];
  let start = 0;
  while (start < texts.length) {
    let tokens = 0;
    let end = start;
    while (end < texts.length && end - start < kMaxBatchTexts) {
      const next = estimateTokens(texts[end]);
      if (end > start && tokens + next > kMaxBatchTokens) break;
      tokens += next;
      end++;
    }
    parts.push(enqueue(queue, call, texts.slice(start, end), tokens, head, signal));
    start = end;
  }
  // A part that filled a batch may have gone out already: then the call has started. Waiting calls
  // wait for running tasks, which keep the process alive; the deadline need not.
  const { deadlineMs } = bounds;
  if (!call.started && deadlineMs !== Infinity) {
    call.deadline = setTimeout(() => dropLate(queue, call, deadlineMs), deadlineMs);
    call.deadline.unref();
  }
  if (parts.length === 1) return parts[0];
  return Promise.all(parts).then((results) => {
    const out: PredictResult = {
      probabilities: new Float32Array(texts.length * headRows(head)),
      truncated: new Uint8Array(texts.length),
    };
    let offset = 0;
    let at = 0;
    for (const result of results) {
      out.probabilities.set(result.probabilities, at);
      out.truncated.set(result.truncated, offset);
      offset += result.truncated.length;
      at += result.probabilities.length;
    }
    return out;
  });
}

/** The call's deadline passed before a worker started on it: its parts leave the queue, refused. */
function dropLate(queue: EncoderQueue, call: Call, deadlineMs: number): void {
  rateLimited('overloaded');
  const late = new SvcError(
    'overloaded',
    `The service is overloaded: the prediction waited ${deadlineMs} ms for a worker; retry in ${kOverloadedRetryAfterSeconds} seconds`,
    { retryAfterSeconds: kOverloadedRetryAfterSeconds },
  );
  for (const entry of call.entries) if (queue.remove(entry)) settle(entry, () => entry.reject(late));
}

function enqueue(
  queue: EncoderQueue,
  call: Call,
  texts: string[],
  tokens: number,
  head: Head,
  signal?: AbortSignal,
): Promise<PredictResult> {
  stats.requests++;
  return new Promise((resolve, reject) => {
    const entry: Entry = { texts, tokens, head, resolve, reject, signal, call };
    call.entries.push(entry);
    if (signal) {
      // Still waiting: leave the queue. Already in a batch: the batch runs on, the caller stops waiting.
      entry.onAbort = () => {
        queue.remove(entry);
        reject(abortError());
      };
      signal.addEventListener('abort', entry.onAbort, { once: true });
    }
    queue.add(entry);
  });
}
