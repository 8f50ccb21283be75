// Micro-batching, shared fairly. Concurrent predict calls on classifiers that share an encoder are
// merged into one engine batch. A call waits at most `waitMs` for company, or less when the batch
// fills; while every worker is busy (predicting or training), calls keep gathering here, not in the
// pool's queue, and go out together as soon as one frees up.
//
// Fairness: every call belongs to a tenant (the service passes the organization; the library's own
// calls share one). Each encoder's queue keeps one line per tenant; tenants take turns to fill a
// batch first (oldest call first, cut text by text to fit), the room left going to the next ones,
// and a tenant that had nothing waiting takes the next turn. Batches are sized by the measured speed
// to about `kTargetBatchMs` of work, so a tenant's 2,048 texts go out as many short batches: another
// tenant's call waits for the batch running when it came, then goes in the next one.
//
// Bounds (`configurePredictQueue`, admission.ts): a call may be refused at once (429 for a tenant
// over its share, 503 when the service could not end it within its deadline); a part of a call no
// worker started on by the deadline is dropped with the call (sooner, as soon as the speed measured
// says it would end past its deadline), and an aborted call (its signal: the
// service aborts when the client closes the connection) drops its texts not yet in a batch.
import { performance } from 'node:perf_hooks';
import { debuglog } from 'node:util';

import { SvcError } from '../errors.js';
import type { Head } from '../model/directory.js';
import { freePredictSlots, onTaskEnd, runTask } from '../pool/pool.js';
import type { PredictResult, PredictTask } from '../pool/tasks.js';
import type { TruncationSide } from '../native/tokenizer.js';
import { isAdapterFile } from '../model/adapter.js';
import { publishAdapterCache, publishPredictBatch, rateLimited } from '../telemetry.js';
import { admission, kOverloadedRetryAfterSeconds, meter, predictBounds, waiting } from './admission.js';
import { Call, fromStartFlags, headRows, kMaxTokensPerText, packHeads, type Segment } from './call.js';

export { estimateTokens, headRows } from './call.js';

export {
  configurePredictQueue,
  kOverloadedRetryAfterSeconds,
  kServicePredictQueue,
  type PredictQueueOptions,
  type ResolvedPredictQueueOptions,
} from './admission.js';

const debug = debuglog('svc');

/** How long a call waits for others to share its batch. */
export const kBatchWaitMs = 2;
/** Most texts in one engine batch. */
export const kMaxBatchTexts = 256;
/** Most (estimated) tokens in one engine batch. */
export const kMaxBatchTokens = 32_768;
/**
 * The work one batch holds, at the measured speed: another tenant's call waits for at most about
 * that (the batch running) before its own batch starts.
 */
export const kTargetBatchMs = 100;
/**
 * The smallest batch budget, whatever the speed measured: four texts of full length, or about fifty
 * sentences. Sentences run 36-40% faster per text in batches of 8 to 32 than one at a time
 * (docs/benchmark-history.md, "UCI sentences"), so concurrent short calls still merge on a slow machine;
 * long texts run as fast one at a time as 128 together ("E-mails").
 */
const kMinBatchTokens = 4 * kMaxTokensPerText;

/** Tokens one batch may hold: about `kTargetBatchMs` of work at the measured speed (the most before any was measured). */
function batchTokens(): number {
  const rate = meter.tokensPerMs();
  if (rate === null) return kMaxBatchTokens;
  return Math.min(kMaxBatchTokens, Math.max(kMinBatchTokens, Math.round(rate * kTargetBatchMs)));
}

/** Counters for observing the batching (tests and `NODE_DEBUG=svc`). */
export interface BatchStats {
  /** Predict calls received. */
  requests: number;
  /** Engine batches sent to the pool. */
  batches: number;
  /** Texts scored. */
  texts: number;
}

const stats: BatchStats = { requests: 0, batches: 0, texts: 0 };

/** A copy of the batching counters since the process started. */
export function batchStats(): BatchStats {
  return { ...stats };
}

/**
 * The texts waiting for one encoder: a base model's (with those of every adapter model on it: one batch mixes
 * them), or one fully fine-tuned model's own.
 */
class EncoderQueue {
  readonly #key: string;
  readonly #baseModel: string;
  readonly #encoderFile: string | null;
  // Each tenant's calls, oldest first; the Map's order is whose turn it is to fill a batch first.
  #tenants = new Map<string, Call[]>();
  #pendingTexts = 0;
  #pendingTokens = 0;
  #timer: NodeJS.Timeout | undefined;
  #inFlight = 0;

  constructor(key: string, baseModel: string, encoderFile: string | null) {
    this.#key = key;
    this.#baseModel = baseModel;
    this.#encoderFile = encoderFile;
  }

  get idle(): boolean {
    return this.#tenants.size === 0 && this.#inFlight === 0;
  }

  add(call: Call): void {
    const line = this.#tenants.get(call.tenant);
    if (line) line.push(call);
    // A tenant that had nothing waiting goes first: it has had no share while the others had theirs.
    else this.#tenants = new Map([[call.tenant, [call]], ...this.#tenants]);
    this.#count(call.tenant, call.unsent, call.unsentTokens);
    if (this.#pendingTexts >= kMaxBatchTexts || this.#pendingTokens >= batchTokens()) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), kBatchWaitMs);
  }

  /** Takes the call's texts not in a batch yet out of the queue; false when none were left. */
  remove(call: Call): boolean {
    const line = this.#tenants.get(call.tenant);
    const index = line?.indexOf(call) ?? -1;
    if (!line || index < 0) return false;
    line.splice(index, 1);
    if (line.length === 0) this.#tenants.delete(call.tenant);
    this.#count(call.tenant, -call.unsent, -call.unsentTokens);
    return true;
  }

  #count(tenant: string, texts: number, tokens: number): void {
    this.#pendingTexts += texts;
    this.#pendingTokens += tokens;
    if (texts >= 0) waiting.add(tenant, texts, tokens);
    else waiting.remove(tenant, -texts, -tokens);
  }

  /** Sends what waits if a worker is free and the batch is not still gathering company. */
  flushIfWaiting(): void {
    if (this.#tenants.size > 0 && this.#timer === undefined) this.#flush();
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    // No slot free (a batch is running, or every worker is busy): keep gathering; the next task to end sends
    // the rest. Otherwise what waits is spread over the free slots, a batch each (the pool decides how many
    // batches run at once: see `freePredictSlots`).
    for (let free = freePredictSlots(); this.#tenants.size > 0 && free > 0; free = freePredictSlots()) {
      this.#send(this.#take(Math.min(kMaxBatchTexts, Math.ceil(this.#pendingTexts / free)), batchTokens()));
    }
  }

  /**
   * One batch of at most `maxTexts` texts and `maxTokens` tokens (its first text always goes in). The
   * tenant whose turn it is fills it first, oldest call first; the room it leaves goes to the next
   * tenants in turn. It then goes to the back of the line.
   */
  #take(maxTexts: number, maxTokens: number): Segment[] {
    const batch: Segment[] = [];
    const room = { texts: maxTexts, tokens: maxTokens };
    const first = this.#tenants.keys().next().value as string;
    for (const tenant of [...this.#tenants.keys()]) {
      if (room.texts <= 0 || room.tokens <= 0) break;
      this.#takeFrom(tenant, batch, room);
    }
    const line = this.#tenants.get(first);
    if (line) {
      this.#tenants.delete(first);
      this.#tenants.set(first, line);
    }
    return batch;
  }

  /** Moves texts of `tenant`'s calls, oldest first, into `batch` while they fit its `room`. */
  #takeFrom(tenant: string, batch: Segment[], room: { texts: number; tokens: number }): void {
    const line = this.#tenants.get(tenant) ?? [];
    let texts = 0;
    let tokens = 0;
    while (line.length > 0) {
      const call = line[0];
      const start = call.next;
      let partTokens = 0;
      while (call.next < call.texts.length && texts < room.texts) {
        const next = call.tokens[call.next];
        const firstOfBatch = batch.length === 0 && call.next === start;
        if (tokens + next > room.tokens && !firstOfBatch) break;
        call.next++;
        texts++;
        tokens += next;
        partTokens += next;
      }
      if (call.next === start) break;
      batch.push({ call, start, end: call.next });
      call.sent(start, call.next, partTokens);
      if (call.unsent > 0) break;
      line.shift();
    }
    if (line.length === 0) this.#tenants.delete(tenant);
    this.#count(tenant, -texts, -tokens);
    room.texts -= texts;
    room.tokens -= tokens;
  }

  /** Refuses, now, every waiting call that `endsAt` (given the call and its tenant's tokens up to its end) says would end past its deadline. */
  shed(endsAt: (call: Call, ownTokens: number) => number, refusal: () => SvcError): void {
    for (const line of [...this.#tenants.values()]) {
      let own = 0;
      for (const call of [...line]) {
        own += call.unsentTokens;
        if (endsAt(call, own) <= call.deadlineAt) continue;
        own -= call.unsentTokens;
        this.remove(call);
        call.fail(refusal());
      }
    }
  }

  #send(batch: Segment[]): void {
    const heads = new Map<Head, number>();
    for (const { call } of batch) if (!heads.has(call.head)) heads.set(call.head, heads.size);
    const table = packHeads([...heads.keys()]);
    const task: PredictTask = {
      kind: 'predict',
      baseModel: this.#baseModel,
      encoderFile: this.#encoderFile,
      texts: batch.flatMap(({ call, start, end }) => call.texts.slice(start, end)),
      counts: Int32Array.from(batch, ({ start, end }) => end - start),
      heads: Int32Array.from(batch, ({ call }) => heads.get(call.head) ?? 0),
      table,
    };
    if (batch.some(({ call }) => call.adapter !== null)) task.adapters = batch.map(({ call }) => call.adapter);
    if (batch.some(({ call }) => call.truncate === 'start')) task.fromStart = fromStartFlags(batch);
    let tokens = 0;
    for (const { call, start, end } of batch) for (let i = start; i < end; i++) tokens += call.tokens[i];
    stats.batches++;
    stats.texts += task.texts.length;
    publishPredictBatch({ texts: task.texts.length });
    debug('predict batch: %d part(s), %d text(s), ~%d tokens, %d head(s)', batch.length, task.texts.length, tokens, heads.size);
    // Encoders take turns for the free slot too: this one goes to the back.
    if (queues.get(this.#key) === this) {
      queues.delete(this.#key);
      queues.set(this.#key, this);
    }
    this.#inFlight++;
    const timing = meter.start(tokens);
    runTask<PredictResult>(task).then(
      ({ probabilities, truncated, unknownShare, adapterCache, setup }) => {
        meter.end(timing, true, setup);
        if (adapterCache) publishAdapterCache(adapterCache);
        shedLate();
        let offset = 0;
        let at = 0;
        for (const { call, start, end } of batch) {
          const values = (end - start) * headRows(call.head);
          const texts = [offset, offset + end - start] as const;
          call.fill(start, end, probabilities.subarray(at, at + values), truncated.subarray(...texts), unknownShare.subarray(...texts));
          offset += end - start;
          at += values;
        }
        this.#done();
      },
      (error: unknown) => {
        meter.end(timing, false);
        for (const { call } of batch) {
          this.remove(call);
          call.fail(error);
        }
        this.#done();
      },
    );
  }

  #done(): void {
    this.#inFlight--;
    // Fine-tuned models come and go: drop their queues once empty. (Waiting calls go out on the task-end signal.)
    if (this.#encoderFile !== null && this.idle) queues.delete(this.#key);
  }
}

// Keyed by base model name (base and adapter models), or by a fully fine-tuned model's encoder file; the order is
// whose turn it is.
const queues = new Map<string, EncoderQueue>();

// Any task that ends frees a worker: the queues that wait get it, in turn (a snapshot: a queue that
// sends moves to the back of the Map, and must not be visited twice).
onTaskEnd(() => {
  for (const queue of [...queues.values()]) queue.flushIfWaiting();
});

function abortError(): SvcError {
  return new SvcError('aborted', 'the prediction was aborted');
}

/**
 * Throws at once the refusal a call of `texts` texts and `tokens` estimated tokens from `tenant` would get, for work
 * that prepares its texts before it reaches the batcher (windowing a long text), so that a call the service could
 * not answer costs no preparation.
 */
export function checkAdmission(tenant: string, texts: number, tokens: number): void {
  const refusal = admission(tenant, texts, tokens, kMaxBatchTokens);
  if (refusal) throw refusal;
}

/** Options of {@link scoreTexts}. */
export interface ScoreOptions {
  /** Stops waiting; the texts not in a batch yet leave the queue. */
  signal?: AbortSignal;
  /** Whose call this is: tenants share the batches in turn (default: one tenant for everyone). */
  tenant?: string;
  /** Which tokens a text too long for the encoder loses: `'end'` (default) its last ones, `'start'` its first ones. */
  truncate?: TruncationSide;
}

/**
 * Scores `texts` with `head` on the embeddings of `baseModel`'s encoder (or of a fine-tuned
 * model's own, `encoderFile`), batched with whatever else is being predicted on that encoder. An adapter model's
 * `encoderFile` (its adapter_model.safetensors) joins the base model's batches, its texts through its adapter.
 * Resolves to the head's probabilities per text (binary: P(true); see `scoreSegments`), in order,
 * and which texts were cut to the encoder's length.
 */
export function scoreTexts(
  baseModel: string,
  encoderFile: string | null,
  head: Head,
  texts: readonly string[],
  options: ScoreOptions = {},
): Promise<PredictResult> {
  if (texts.length === 0) {
    return Promise.resolve({ probabilities: new Float32Array(0), truncated: new Uint8Array(0), unknownShare: new Float64Array(0) });
  }
  const { signal, tenant = '' } = options;
  if (signal?.aborted) return Promise.reject(abortError());
  let resolve!: (r: PredictResult) => void;
  let reject!: (e: unknown) => void;
  const result = new Promise<PredictResult>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const call = new Call(texts, head, tenant, signal, resolve, reject);
  call.truncate = options.truncate;
  const refusal = admission(tenant, texts.length, call.unsentTokens, kMaxBatchTokens);
  if (refusal) return Promise.reject(refusal);
  stats.requests++;
  const ownEncoder = encoderFile !== null && !isAdapterFile(encoderFile) ? encoderFile : null;
  if (encoderFile !== null && ownEncoder === null) call.adapter = encoderFile;
  const key = ownEncoder ?? baseModel;
  let queue = queues.get(key);
  if (!queue) {
    queue = new EncoderQueue(key, baseModel, ownEncoder);
    queues.set(key, queue);
  }
  const owner = queue;
  // Still waiting: leave the queue. Parts already in a batch run on; the caller stops waiting.
  if (signal)
    call.onAbort(() => {
      owner.remove(call);
      call.fail(abortError());
    });
  queue.add(call);
  // Parts may have gone out already (a full batch); the rest wait at most the deadline. Waiting calls
  // wait for running tasks, which keep the process alive; the deadline need not.
  const { deadlineMs } = predictBounds();
  if (call.unsent > 0 && deadlineMs !== Infinity) {
    call.deadlineAt = performance.now() + deadlineMs;
    call.deadline = setTimeout(() => dropLate(owner, call, deadlineMs), deadlineMs);
    call.deadline.unref();
  }
  return result;
}

/**
 * After each batch, at the speed now measured: a waiting call that would end past its deadline is refused
 * now, not when the deadline passes (the speed can drop well below what admitted it: other processes, a
 * training job, a burst of requests on the event loop).
 */
function shedLate(): void {
  const { deadlineMs } = predictBounds();
  const rate = meter.tokensPerMs();
  if (deadlineMs === Infinity || rate === null) return;
  const now = performance.now() + meter.busyMs(rate);
  for (const queue of [...queues.values()]) {
    queue.shed(
      (call, own) => now + waiting.aheadThrough(call.tenant, own) / rate,
      () => {
        rateLimited('overloaded');
        return new SvcError(
          'overloaded',
          `The service is overloaded: at the ${Math.round(rate * 1000)} tokens/s measured, the prediction would end past its deadline of ${deadlineMs} ms; retry in ${kOverloadedRetryAfterSeconds} seconds`,
          { retryAfterSeconds: kOverloadedRetryAfterSeconds },
        );
      },
    );
  }
}

/** The deadline passed with parts of the call that no worker had started on: they leave the queue, and the call is refused. */
function dropLate(queue: EncoderQueue, call: Call, deadlineMs: number): void {
  if (!queue.remove(call)) return;
  rateLimited('overloaded');
  call.fail(
    new SvcError(
      'overloaded',
      `The service is overloaded: the prediction waited ${deadlineMs} ms for a worker; retry in ${kOverloadedRetryAfterSeconds} seconds`,
      { retryAfterSeconds: kOverloadedRetryAfterSeconds },
    ),
  );
}
