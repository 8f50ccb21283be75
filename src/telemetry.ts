// What the service reports about its own work, as node:diagnostics_channel messages. The pool, the batcher,
// the job runner and the proxy publish here and know nothing of Prometheus; `svc-classify/server`'s
// SvcMetrics subscribes. A channel nobody subscribes to costs one boolean check per event.
import { channel } from 'node:diagnostics_channel';

/** One engine batch sent to the pool. */
export interface PredictBatchEvent {
  /** Texts in the batch. */
  texts: number;
}

/**
 * A training job that stopped running: `done`, `failed`, `released` (the service shut down; the job waits for the
 * next start) or `cancelled` (its model was deleted).
 */
export interface TrainingJobEvent {
  outcome: 'done' | 'failed' | 'released' | 'cancelled';
  /** From the start of this run. */
  seconds: number;
}

/** One proxied call, when it is over. */
export interface ProxyCallEvent {
  provider: string;
  /** Status sent to the client (0 when the client went away first). */
  status: number;
  /** Until the last byte. */
  seconds: number;
  tokensIn: number | null;
  tokensOut: number | null;
  /** Why it failed (an upstream error status, unreachable, timeout, cut short), or null. */
  error: string | null;
}

/** A request turned away by a limit. */
export interface RateLimitedEvent {
  /** Which limit: e.g. `requests` (per key per minute), `auth` (failed authentication per address), `jobs`. */
  kind: string;
}

/** A pool worker's adapter cache after a batch that used it: counters since the worker started, bytes held now. */
export interface AdapterCacheEvent {
  worker: number;
  hits: number;
  misses: number;
  evictions: number;
  bytes: number;
}

/**
 * One proxied call's shadow job (proxy/shadow.ts): `recorded` (a result row, both labels or not), `error` (a row that
 * says why the classifier did not answer), `dropped` (the queue was full), `failed` (the job itself failed).
 */
export interface ShadowJobEvent {
  outcome: 'recorded' | 'error' | 'dropped' | 'failed';
}

/** The channels, by the name a subscriber uses with `diagnostics_channel.subscribe`. */
export const kChannels = Object.freeze({
  predictBatch: 'svc-classify:predict-batch',
  trainingJob: 'svc-classify:training-job',
  proxyCall: 'svc-classify:proxy-call',
  rateLimited: 'svc-classify:rate-limited',
  adapterCache: 'svc-classify:adapter-cache',
  shadowJob: 'svc-classify:shadow-job',
});

const predictBatch = channel(kChannels.predictBatch);
const trainingJob = channel(kChannels.trainingJob);
const proxyCall = channel(kChannels.proxyCall);
const rateLimitedChannel = channel(kChannels.rateLimited);
const adapterCache = channel(kChannels.adapterCache);
const shadowJob = channel(kChannels.shadowJob);

/**
 * Counts one shadow job's outcome (`svc_shadow_jobs_total{outcome}` on /metrics).
 *
 * @example
 * ```ts
 * publishShadowJob({ outcome: 'dropped' }); // svc_shadow_jobs_total{outcome="dropped"} goes up by one
 * ```
 */
export function publishShadowJob(event: ShadowJobEvent): void {
  if (shadowJob.hasSubscribers) shadowJob.publish(event);
}

export function publishAdapterCache(event: AdapterCacheEvent): void {
  if (adapterCache.hasSubscribers) adapterCache.publish(event);
}

export function publishPredictBatch(event: PredictBatchEvent): void {
  if (predictBatch.hasSubscribers) predictBatch.publish(event);
}

export function publishTrainingJob(event: TrainingJobEvent): void {
  if (trainingJob.hasSubscribers) trainingJob.publish(event);
}

export function publishProxyCall(event: ProxyCallEvent): void {
  if (proxyCall.hasSubscribers) proxyCall.publish(event);
}

/**
 * Counts one request a limiter turned away (`svc_rate_limited_total{kind}` on /metrics).
 *
 * @example
 * ```ts
 * rateLimited('requests'); // svc_rate_limited_total{kind="requests"} goes up by one
 * ```
 */
export function rateLimited(kind: string): void {
  if (rateLimitedChannel.hasSubscribers) rateLimitedChannel.publish({ kind } satisfies RateLimitedEvent);
}
