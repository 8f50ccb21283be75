import { createHash, timingSafeEqual } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';

import type { FastifyPluginAsync } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

import { poolStats } from '../pool/pool.js';
import type { SvcService } from '../service/service.js';
import {
  kChannels,
  type AdapterCacheEvent,
  type PredictBatchEvent,
  type ProxyCallEvent,
  type RateLimitedEvent,
  type ShadowJobEvent,
  type TrainingJobEvent,
} from '../telemetry.js';
import { SvcError } from '../errors.js';
import { svcErrorHandler } from './errors.js';
import type { RateLimitOptions } from '../contract/rate-limit.js';
import { requestLimiter } from './rate-limit.js';

// Bucket bounds, seconds or texts, each chosen for what it measures.
const kHttpBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const kUpstreamBuckets = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const kJobBuckets = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800];
const kBatchBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/** The `route` label of a request no route matched (its raw path would make one series per URL). */
export const kUnmatchedRoute = 'unmatched';

/** Options of {@link SvcMetrics}. */
export interface SvcMetricsOptions {
  /** Its store is asked how many training jobs are in each state at each scrape. */
  service: SvcService;
  /**
   * Also prom-client's process metrics (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
   * `nodejs_eventloop_lag_seconds`, ...). Default false: a host app usually collects those itself. `svc serve` turns them on.
   */
  processMetrics?: boolean;
}

/**
 * The service's Prometheus metrics, in a registry of their own (never prom-client's global one, which the
 * host app may use). It listens to the service's diagnostics channels from construction to `close()`;
 * every series is listed, with its labels, in docs/observability.md.
 *
 * @example
 * ```ts
 * const metrics = new SvcMetrics({ service });
 * await app.register(svcRoutes, { prefix: '/v2', service, metrics }); // counts the /v2 requests
 * await app.register(metricsRoutes, { metrics, token: process.env.SVC_METRICS_TOKEN }); // GET /metrics
 * ```
 */
export class SvcMetrics {
  readonly registry = new Registry();
  /** The service measured; `GET /metrics` counts wrong tokens under its request limits. */
  readonly service: SvcService;
  readonly #requests: Counter<'method' | 'route' | 'status'>;
  readonly #requestSeconds: Histogram<'method' | 'route' | 'status'>;
  readonly #listeners: [string, (message: unknown) => void][] = [];

  constructor(options: SvcMetricsOptions) {
    this.service = options.service;
    const registers = [this.registry];
    if (options.processMetrics === true) collectDefaultMetrics({ register: this.registry });
    const labels = ['method', 'route', 'status'] as const;
    this.#requests = new Counter({
      name: 'svc_http_requests_total',
      help: 'HTTP requests answered, by route pattern and status',
      labelNames: labels,
      registers,
    });
    this.#requestSeconds = new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'Time from request to response, by route pattern and status',
      labelNames: labels,
      buckets: kHttpBuckets,
      registers,
    });
    new Gauge({
      name: 'svc_pool_workers',
      help: 'Worker threads in the native pool',
      registers,
      collect() {
        this.set(poolStats().workers);
      },
    });
    new Gauge({
      name: 'svc_pool_busy_workers',
      help: 'Pool workers running a task',
      registers,
      collect() {
        this.set(poolStats().busy);
      },
    });
    new Gauge({
      name: 'svc_pool_queue_depth',
      help: 'Pool tasks waiting for a free worker',
      registers,
      collect() {
        this.set(poolStats().queued);
      },
    });
    const store = options.service.store;
    new Gauge({
      name: 'svc_training_jobs',
      help: 'Training jobs in the store, by state',
      labelNames: ['state'],
      registers,
      async collect() {
        for (const [state, count] of Object.entries(await store.countJobs())) this.set({ state }, count);
      },
    });
    const jobSeconds = new Histogram({
      name: 'svc_training_job_duration_seconds',
      help: 'Training runs, by how they ended (done, failed, released, cancelled)',
      labelNames: ['outcome'],
      buckets: kJobBuckets,
      registers,
    });
    const batchTexts = new Histogram({
      name: 'svc_predict_batch_texts',
      help: 'Texts per engine batch sent to the pool',
      buckets: kBatchBuckets,
      registers,
    });
    const proxyRequests = new Counter({
      name: 'svc_proxy_requests_total',
      help: 'Proxied calls, by provider and status sent',
      labelNames: ['provider', 'status'],
      registers,
    });
    const upstreamSeconds = new Histogram({
      name: 'svc_proxy_upstream_duration_seconds',
      help: 'Proxied calls from start to last byte, by provider',
      labelNames: ['provider'],
      buckets: kUpstreamBuckets,
      registers,
    });
    const tokens = new Counter({
      name: 'svc_proxy_tokens_total',
      help: 'Tokens the providers reported, by direction (input, output)',
      labelNames: ['provider', 'direction'],
      registers,
    });
    const proxyErrors = new Counter({
      name: 'svc_proxy_errors_total',
      help: 'Proxied calls that failed (upstream error status, unreachable, timeout, cut short)',
      labelNames: ['provider'],
      registers,
    });
    const rateLimited = new Counter({
      name: 'svc_rate_limited_total',
      help: 'Requests turned away by a limit, by kind',
      labelNames: ['kind'],
      registers,
    });

    this.#listen<PredictBatchEvent>(kChannels.predictBatch, (event) => batchTexts.observe(event.texts));
    this.#listen<TrainingJobEvent>(kChannels.trainingJob, (event) => jobSeconds.observe({ outcome: event.outcome }, event.seconds));
    this.#listen<ProxyCallEvent>(kChannels.proxyCall, (event) => {
      const { provider } = event;
      proxyRequests.inc({ provider, status: String(event.status) });
      upstreamSeconds.observe({ provider }, event.seconds);
      if (event.tokensIn !== null) tokens.inc({ provider, direction: 'input' }, event.tokensIn);
      if (event.tokensOut !== null) tokens.inc({ provider, direction: 'output' }, event.tokensOut);
      if (event.error !== null) proxyErrors.inc({ provider });
    });
    this.#listen<RateLimitedEvent>(kChannels.rateLimited, (event) => rateLimited.inc({ kind: event.kind }));
    const shadowJobs = new Counter({
      name: 'svc_shadow_jobs_total',
      help: 'Shadow classifier jobs of proxied calls, by outcome (recorded, error, dropped, failed)',
      labelNames: ['outcome'],
      registers,
    });
    this.#listen<ShadowJobEvent>(kChannels.shadowJob, (event) => shadowJobs.inc({ outcome: event.outcome }));
    this.#adapterCacheMetrics(registers);
  }

  // Workers report their cache's counters since they started: the counters here go up by the difference.
  #adapterCacheMetrics(registers: Registry[]): void {
    const counter = (what: string, help: string) => new Counter({ name: `svc_adapter_cache_${what}_total`, help, registers });
    const hits = counter('hits', "Adapter lookups of predict batches that found the adapter in the worker's memory");
    const misses = counter('misses', 'Adapter lookups that read the adapter from its file (first use, evicted, or the model saved again)');
    const evictions = counter('evictions', "Adapters dropped from a worker's memory to keep its cache within its bytes");
    const last = new Map<number, AdapterCacheEvent>();
    new Gauge({
      name: 'svc_adapter_cache_bytes',
      help: 'Bytes of LoRA adapters the pool workers hold (fp32), all workers together',
      registers,
      collect() {
        this.set([...last.values()].reduce((sum, event) => sum + event.bytes, 0));
      },
    });
    this.#listen<AdapterCacheEvent>(kChannels.adapterCache, (event) => {
      const before = last.get(event.worker);
      hits.inc(event.hits - (before?.hits ?? 0));
      misses.inc(event.misses - (before?.misses ?? 0));
      evictions.inc(event.evictions - (before?.evictions ?? 0));
      last.set(event.worker, event);
    });
  }

  /** Counts one answered HTTP request; `route` is the route's pattern (`/v2/models/:model_id`), never the raw URL. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.#requests.inc(labels);
    this.#requestSeconds.observe(labels, seconds);
  }

  /** The metrics in Prometheus text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** Stops listening to the service's channels. */
  close(): void {
    for (const [name, listener] of this.#listeners.splice(0)) unsubscribe(name, listener);
  }

  #listen<T>(name: string, handle: (event: T) => void): void {
    const listener = (message: unknown): void => handle(message as T);
    subscribe(name, listener);
    this.#listeners.push([name, listener]);
  }
}

/** Options of {@link metricsRoutes}. */
export interface MetricsRoutesOptions {
  metrics: SvcMetrics;
  /** When set, a scrape must send `Authorization: Bearer <token>`; otherwise the host app protects the route. */
  token?: string;
  /**
   * The request limits a wrong token counts under, as a wrong API key does (per client address): those of the
   * service's /v2 plugin when it was registered first (as `startServer` does), else these.
   */
  rateLimit?: RateLimitOptions;
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/**
 * `GET /metrics` (under the plugin's prefix) in Prometheus text format. Not wrapped in `fastify-plugin`.
 *
 * @example
 * ```ts
 * await app.register(metricsRoutes, { metrics, token: 'a-long-random-string' });
 * // curl -H 'Authorization: Bearer a-long-random-string' http://127.0.0.1:8080/metrics
 * // # HELP svc_http_requests_total HTTP requests answered, by route pattern and status ...
 * ```
 */
export const metricsRoutes: FastifyPluginAsync<MetricsRoutesOptions> = async (app, { metrics, token, rateLimit }) => {
  // Hashes have one length, so the comparison takes the same time whatever was sent.
  const expected = token === undefined ? undefined : digest(`Bearer ${token}`);
  app.setErrorHandler(svcErrorHandler);
  // A token can be guessed like a key: wrong ones count against the address in the same tally as wrong keys.
  const limiter = expected === undefined ? undefined : await requestLimiter(app, metrics.service, rateLimit);
  app.get('/metrics', async (request, reply) => {
    if (expected !== undefined && !timingSafeEqual(digest(request.headers.authorization ?? ''), expected)) {
      const failure = new SvcError('authentication', "Send the metrics token as 'Authorization: Bearer <token>'");
      throw await limiter!.failedAuthentication(request, reply, failure);
    }
    return reply.type(metrics.registry.contentType).send(await metrics.text());
  });
};
