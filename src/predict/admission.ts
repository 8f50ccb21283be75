// Which predict calls may wait for a worker, and which are refused at once. The library leaves the
// queue unbounded (its callers await their own work); a shared service (`svc serve`) bounds it, and
// checks each call, in this order:
// 1. its tenant (the service's organization) already has texts waiting and would have more than
//    `maxTenantTexts`: 429 `rate_limited` (that tenant sends more than its share; others are not hurt);
// 2. that tenant has texts waiting and all tenants together would have more than `maxWaitingTexts`:
//    503 `overloaded`;
// 3. at the speed measured on recent batches, the call would not end well within `deadlineMs`
//    (`kDeadlineHeadroom`), counting the work that runs before it as the batcher shares batches
//    (every waiting tenant in turn): 503 `overloaded` now, rather than after sitting out the deadline.
// A tenant with nothing waiting is never refused by 1 or 2: refusing it could never succeed. Nor is a call of at
// most one batch's worth refused by 3 while the pool is idle (nothing waiting or running, a worker free): it starts
// at once, and its time corrects the estimate, so that an estimate gone wrong (a slow spell, a cold start) cannot
// keep refusing every call; if the speed it measures is that slow, the rest of a larger call is shed after its
// first batch (batcher.ts).
import { SvcError } from '../errors.js';
import { freePredictSlots } from '../pool/pool.js';
import { rateLimited } from '../telemetry.js';
import * as is from '../is.js';
import { ThroughputMeter } from './throughput.js';

/** What an overloaded service suggests waiting before a retry when nothing better is known: a busy queue drains in about that. */
export const kOverloadedRetryAfterSeconds = 2;

/** Options of {@link configurePredictQueue}; all optional. */
export interface PredictQueueOptions {
  /** Predict texts that may wait for a worker, all tenants together; a call that would go beyond is refused (unless its tenant has nothing waiting). */
  maxWaitingTexts?: number;
  /** Predict texts one tenant (the service: one organization) may have waiting; beyond, its call gets 429 (unless it has nothing waiting). */
  maxTenantTexts?: number;
  /**
   * Milliseconds a call may take: a call the measured speed says would not end in time is refused at
   * once, and a part of a call no worker started on within it is dropped with the call.
   */
  deadlineMs?: number;
}

export type ResolvedPredictQueueOptions = Required<PredictQueueOptions>;

/**
 * The bounds a shared service runs with (`svc serve`, `startServer`). 2,048 texts are a few
 * seconds of work for one worker; a call that cannot be answered in 10 s is better answered 503
 * at once, so that the client can back off or go elsewhere. One organization may hold half the
 * queue, so that a second one always finds room.
 */
export const kServicePredictQueue: ResolvedPredictQueueOptions = Object.freeze({
  maxWaitingTexts: 2048,
  maxTenantTexts: 1024,
  deadlineMs: 10_000,
});

// The library's own callers await their work: no bound unless asked.
const kUnbounded: ResolvedPredictQueueOptions = Object.freeze({
  maxWaitingTexts: Infinity,
  maxTenantTexts: Infinity,
  deadlineMs: Infinity,
});
let bounds = kUnbounded;

/**
 * Bounds which predict calls may wait for a worker; takes effect for the next call, also while the
 * pool runs. Options left out are unbounded.
 *
 * @example
 * ```ts
 * import { configurePredictQueue } from 'svc-classify';
 * configurePredictQueue({ maxWaitingTexts: 2048, maxTenantTexts: 1024, deadlineMs: 10_000 });
 * // { maxWaitingTexts: 2048, maxTenantTexts: 1024, deadlineMs: 10000 }
 * ```
 */
export function configurePredictQueue(options: PredictQueueOptions = {}): ResolvedPredictQueueOptions {
  if (options.maxWaitingTexts !== undefined) is.positiveInteger(options.maxWaitingTexts, 'options.maxWaitingTexts');
  if (options.maxTenantTexts !== undefined) is.positiveInteger(options.maxTenantTexts, 'options.maxTenantTexts');
  // setTimeout's range: beyond it Node fires at once.
  if (options.deadlineMs !== undefined) is.positiveInteger(options.deadlineMs, 'options.deadlineMs', 2 ** 31 - 1);
  bounds = Object.freeze({
    maxWaitingTexts: options.maxWaitingTexts ?? Infinity,
    maxTenantTexts: options.maxTenantTexts ?? Infinity,
    deadlineMs: options.deadlineMs ?? Infinity,
  });
  return bounds;
}

/** The bounds in force. */
export function predictBounds(): ResolvedPredictQueueOptions {
  return bounds;
}

/**
 * The share of its deadline a call may be expected to take and still be admitted: the speed is
 * measured on past batches, and a machine that slows down (a training job starting, other
 * processes) must not turn admitted calls into late refusals. On a shared 2-core machine the speed
 * halved within a second under a burst of 40 calls (in test/e2e/predict-fairness.test.ts): half.
 */
export const kDeadlineHeadroom = 0.5;

/** Speed of the recent predict batches, shared by batch sizing and admission. */
export const meter = new ThroughputMeter();

/** Texts (and their estimated tokens) not in a batch yet, per tenant and in all. */
class Waiting {
  readonly #byTenant = new Map<string, { texts: number; tokens: number }>();
  texts = 0;
  tokens = 0;

  of(tenant: string): { texts: number; tokens: number } {
    return this.#byTenant.get(tenant) ?? { texts: 0, tokens: 0 };
  }

  add(tenant: string, texts: number, tokens: number): void {
    const own = this.#byTenant.get(tenant) ?? { texts: 0, tokens: 0 };
    own.texts += texts;
    own.tokens += tokens;
    this.#byTenant.set(tenant, own);
    this.texts += texts;
    this.tokens += tokens;
  }

  remove(tenant: string, texts: number, tokens: number): void {
    this.add(tenant, -texts, -tokens);
    if (this.of(tenant).texts <= 0) this.#byTenant.delete(tenant);
  }

  /**
   * Tokens that run before `tenant`'s waiting texts plus `tokens` more are done, tenants served in
   * turn: its own, and of every other tenant as much as it (or what that one has).
   */
  aheadOf(tenant: string, tokens: number): number {
    return this.aheadThrough(tenant, this.of(tenant).tokens + tokens);
  }

  /** Tokens that run before the first `own` tokens of `tenant`'s waiting texts are done, tenants served in turn. */
  aheadThrough(tenant: string, own: number): number {
    let ahead = own;
    for (const [other, waiting] of this.#byTenant) if (other !== tenant) ahead += Math.min(waiting.tokens, own);
    return ahead;
  }
}

export const waiting = new Waiting();

/** Milliseconds until `tenant`'s waiting texts plus `tokens` more have run, at the measured speed (null before any batch came back). */
export function estimateMs(tenant: string, tokens: number): number | null {
  const rate = meter.tokensPerMs();
  if (rate === null) return null;
  return meter.busyMs(rate) + waiting.aheadOf(tenant, tokens) / rate;
}

function overloaded(message: string, retryAfterSeconds = kOverloadedRetryAfterSeconds): SvcError {
  rateLimited('overloaded');
  return new SvcError('overloaded', `The service is overloaded: ${message}; retry in ${retryAfterSeconds} seconds`, { retryAfterSeconds });
}

/** Whole seconds, at least one. */
function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** Nothing waiting, no predict batch running, and a worker free: a call sent now starts at once. */
function poolIdle(): boolean {
  return waiting.tokens <= 0 && !meter.busy && freePredictSlots() > 0;
}

/**
 * The refusal of a call of `texts` texts (`tokens` estimated tokens) from `tenant`, or null when it
 * may wait. `firstBatchTokens` is one batch's worth: what the queue holds before any batch was timed,
 * and what an idle pool takes whatever the estimate.
 */
export function admission(tenant: string, texts: number, tokens: number, firstBatchTokens: number): SvcError | null {
  const { maxWaitingTexts, maxTenantTexts, deadlineMs } = bounds;
  const own = waiting.of(tenant).texts;
  if (own > 0 && own + texts > maxTenantTexts) {
    rateLimited('predict_queue');
    const retry = seconds(estimateMs(tenant, 0) ?? kOverloadedRetryAfterSeconds * 1000);
    const whose = tenant === '' ? '' : ` of '${tenant}'`;
    return new SvcError(
      'rate_limited',
      `Too many predictions queued: ${own} texts${whose} are waiting for a worker and one organization may have ${maxTenantTexts} waiting; retry in ${retry} seconds`,
      { retryAfterSeconds: retry },
    );
  }
  if (own > 0 && waiting.texts + texts > maxWaitingTexts) {
    return overloaded(`${waiting.texts} texts are waiting for a worker and the queue holds ${maxWaitingTexts}`);
  }
  if (deadlineMs === Infinity) return null;
  const ms = estimateMs(tenant, tokens);
  if (ms === null) {
    // No batch timed yet (a cold start): hold one batch's worth beyond the running one, no more.
    if (waiting.tokens > 0 && waiting.tokens + tokens > firstBatchTokens) {
      return overloaded(`${waiting.texts} texts are waiting for a worker before the first batch has been timed`);
    }
    return null;
  }
  const within = kDeadlineHeadroom * deadlineMs;
  if (ms <= within || (tokens <= firstBatchTokens && poolIdle())) return null;
  const rate = meter.tokensPerMs() ?? 0;
  return overloaded(
    `at the ${Math.round(rate * 1000)} tokens/s measured, this prediction would end in about ${Math.round(ms)} ms, too close to its deadline of ${deadlineMs} ms`,
    seconds(ms - within),
  );
}
