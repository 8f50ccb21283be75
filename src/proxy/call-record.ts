// What one proxied call leaves behind once it is over: its request-log row (status, timings, tokens, the response
// bytes kept up to the log's limit, the budget hold to give back) and its telemetry event. The forwarding state
// machine (forward.ts) decides what happens to the call; this record only keeps the account of it.
import { performance } from 'node:perf_hooks';
import { publishProxyCall } from '../telemetry.js';
import type { Charge } from './metering.js';
import type { ProxyCall } from './proxy-call.js';
import type { RequestLogQueue } from './request-log.js';

export class CallRecord {
  readonly #call: ProxyCall;
  readonly #log: RequestLogQueue;
  readonly #createdAt = Date.now();
  readonly #t0 = performance.now();
  /** The response bytes the client got, up to the log's capture limit. */
  readonly captured: Buffer[] = [];
  #capturedBytes = 0;
  /** How much of the call the provider is paid for (see `Charge`). */
  charge: Charge = 'nothing';
  /** The status the client was sent; 0 when it got none (or went away). */
  statusSent = 0;
  #ttfbMs: number | null = null;

  constructor(call: ProxyCall, log: RequestLogQueue) {
    this.#call = call;
    this.#log = log;
  }

  capture(chunk: Buffer): void {
    if (this.#capturedBytes >= this.#log.captureBytes) return;
    this.captured.push(chunk);
    this.#capturedBytes += chunk.length;
  }

  markFirstByte(): void {
    if (this.#ttfbMs === null) this.#ttfbMs = performance.now() - this.#t0;
  }

  /** Publishes the call and queues its log row; `error` is what the log says went wrong (null: nothing). */
  write(error: string | null): void {
    const call = this.#call;
    const usage = call.meter.final(this.charge);
    const totalMs = performance.now() - this.#t0;
    publishProxyCall({
      provider: call.provider,
      status: this.statusSent,
      seconds: totalMs / 1000,
      tokensIn: usage.tokensIn,
      tokensOut: usage.tokensOut,
      error,
    });
    this.#log.push({
      projectId: call.projectId,
      keyId: call.keyId,
      provider: call.provider,
      model: call.model,
      stream: call.stream,
      status: this.statusSent,
      ttfbMs: this.#ttfbMs === null ? null : round(this.#ttfbMs),
      totalMs: round(totalMs),
      tokensIn: usage.tokensIn,
      tokensOut: usage.tokensOut,
      error,
      requestBody: call.clientBody,
      responseBody: this.captured,
      createdAt: this.#createdAt,
      reservationId: call.budget?.id ?? null,
    });
  }
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
