import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { BudgetHold } from './budget.js';
import { UsageBody } from './body-usage.js';
import { CallRecord } from './call-record.js';
import { downstreamHeaders, kStreamHeaders, upstreamHeaders } from './headers.js';
import type { ProxyCall } from './proxy-call.js';
import { redactSecrets } from './redact.js';
import type { RequestLogQueue } from './request-log.js';
import { eventsMentioning, SseEventCutter, withoutEvents } from './sse.js';
import { isUsageOnlyChunk } from './stream-usage.js';
import { type UpstreamAgents, upstreamMessage } from './upstream.js';

export type { ProxyCall } from './proxy-call.js';
export { createUpstreamAgents, type UpstreamAgents, type UpstreamTarget, upstreamTarget } from './upstream.js';

export interface ForwardSettings {
  agents: UpstreamAgents;
  upstreamTimeoutMs: number;
  pingIntervalMs: number;
  log: RequestLogQueue;
  /** Told when the provider refused the operator's own key: the operator's problem, which the tenant does not see. */
  operatorWarning: (message: string) => void;
}

/**
 * Where a forwarded call's answer goes: the client's reply (a `ServerResponse`), or a teacher's labelling call
 * collecting it in memory (teacher-transport.ts). Only what the forwarding code uses.
 */
export interface ReplySink {
  readonly headersSent: boolean;
  writeHead(status: number, headers?: OutgoingHttpHeaders): unknown;
  flushHeaders(): void;
  write(chunk: Buffer | string): boolean;
  end(chunk?: Buffer | string): unknown;
  destroy(): unknown;
  on(event: 'close', listener: () => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
}

// An upstream error body is read for its message only; bytes past this are not kept.
const kErrorBodyLimitBytes = 64 * 1024;

// SvcError codes for the errors the proxy itself reports.
const kCodeByStatus: Readonly<Record<number, string>> = { 429: 'rate_limited', 502: 'upstream_error', 504: 'upstream_timeout' };

/** What the provider answers when it refuses the operator's key (401) or the key's account (403). */
const kOperatorKeyRefused: ReadonlySet<number> = new Set([401, 403]);

class UpstreamTimeout extends Error {}

/**
 * Sends the call upstream and relays the answer on `res` (the hijacked reply) as it arrives: a non-streaming body
 * and status pass through; a stream goes out event by event with `: ping` comments until its first byte, and an
 * upstream failure ends it with an error event in the client's dialect. Logs one row when the call is over, with
 * the tokens its meter counted, and the call's budget hold given back in the same write.
 */
export function forwardCall(call: ProxyCall, incoming: IncomingMessage, res: ReplySink | ServerResponse, settings: ForwardSettings): void {
  new ForwardedCall(call, res, settings).start(incoming);
}

/**
 * One call's life as a small state machine. `phase` says where it is: `waiting` (request sent, no answer yet; pings
 * may have opened an SSE reply), `streaming` (SSE events relayed), `relaying` (a plain body relayed), `refusing`
 * (an upstream error body read for its message), `done` (row logged; nothing else happens).
 */
class ForwardedCall {
  readonly #call: ProxyCall;
  readonly #res: ReplySink;
  readonly #settings: ForwardSettings;
  // The account the log row and the telemetry are written from: bytes captured, first byte, status sent, charge.
  readonly #record: CallRecord;
  #phase: 'waiting' | 'streaming' | 'relaying' | 'refusing' | 'done' = 'waiting';
  #sseOpen = false; // the client has an SSE head: failures become error events
  #timedOut = false;
  #pingTimer: NodeJS.Timeout | null = null;
  #request: http.ClientRequest | null = null;
  // While a stream waits for its budget to grow, what the upstream sends waits here (null: not waiting).
  #held: (Buffer | 'end')[] | null = null;
  // Streaming: the upstream's bytes cut at event boundaries, and whether the dialect's final event went by.
  readonly #cutter = new SseEventCutter();
  #terminal = false;

  constructor(call: ProxyCall, res: ReplySink, settings: ForwardSettings) {
    this.#call = call;
    this.#res = res;
    this.#settings = settings;
    this.#record = new CallRecord(call, settings.log);
  }

  start(incoming: IncomingMessage): void {
    const { secure, hostname, port, path } = this.#call.upstream;
    const request = (secure ? https : http).request({
      method: 'POST',
      hostname,
      port,
      path,
      agent: secure ? this.#settings.agents.https : this.#settings.agents.http,
      headers: upstreamHeaders(incoming.headers, this.#call.provider, this.#call.providerKey, this.#call.body.length),
    });
    this.#request = request;
    request.setTimeout(this.#settings.upstreamTimeoutMs, () => {
      this.#timedOut = true;
      request.destroy(new UpstreamTimeout());
    });
    request.on('error', (error) => this.#upstreamFailed(error));
    request.on('response', (upstream) => this.#onResponse(upstream));
    request.end(this.#call.body);

    if (this.#call.stream) {
      this.#pingTimer = setInterval(() => {
        if (this.#phase === 'done') return this.#stopPing();
        if (!this.#sseOpen) this.#openSse(200, { 'content-type': 'text/event-stream; charset=utf-8', ...kStreamHeaders });
        this.#res.write(': ping\n\n');
      }, this.#settings.pingIntervalMs);
    }

    // The client went away before we finished: stop the upstream work it was paying for, and charge what the
    // provider had by then (its prompt, and what it had streamed).
    this.#res.on('close', () => {
      if (this.#phase === 'done') return;
      // Still waiting: the provider has the prompt. Streaming or relaying a 2xx answer: already charged as partial.
      if (this.#phase === 'waiting') this.#record.charge = 'partial';
      this.#record.statusSent = 0;
      request.destroy();
      this.#finish('client closed the connection');
    });
  }

  #stopPing(): void {
    if (this.#pingTimer) clearInterval(this.#pingTimer);
    this.#pingTimer = null;
  }

  #openSse(status: number, headers: http.OutgoingHttpHeaders): void {
    this.#record.statusSent = status;
    this.#sseOpen = true;
    this.#res.writeHead(status, headers);
    this.#res.flushHeaders();
  }

  /** Logs the call's row; `error` is what the log says went wrong (null: nothing). */
  #finish(error: string | null): void {
    if (this.#phase === 'done') return;
    this.#phase = 'done';
    this.#stopPing();
    this.#record.write(error);
  }

  /** Ends the client's reply with an error in its dialect; `logged` is the log's account when it says more. */
  #sendError(status: number, message: string, options: { code?: string; logged?: string } = {}): void {
    const detail = { code: options.code ?? kCodeByStatus[status] ?? (status >= 500 ? 'upstream_error' : 'invalid_request') };
    const res = this.#res;
    if (this.#sseOpen) {
      const event = Buffer.from(this.#call.dialect.streamErrorEvent(status, message, detail));
      this.#record.capture(event);
      this.#record.markFirstByte();
      res.end(event);
    } else if (!res.headersSent) {
      const body = Buffer.from(JSON.stringify(this.#call.dialect.errorBody(status, message, detail)));
      this.#record.capture(body);
      this.#record.statusSent = status;
      this.#record.markFirstByte();
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    } else {
      // A non-streaming body was already under way: cutting the connection is the only honest signal left.
      res.destroy();
    }
    this.#finish(options.logged ?? message);
  }

  #upstreamFailed(error: Error): void {
    if (this.#phase === 'done') return;
    this.#request?.destroy();
    const { provider } = this.#call;
    if (this.#timedOut || error instanceof UpstreamTimeout) {
      this.#sendError(504, `${provider} sent nothing for ${this.#settings.upstreamTimeoutMs} ms`);
    } else if (this.#phase === 'waiting') {
      const reason = (error as NodeJS.ErrnoException).code ?? error.message;
      this.#sendError(502, `${provider} is unreachable (${reason})`);
    } else {
      this.#sendError(502, `${provider} closed the connection mid-response`);
    }
  }

  // Pipes with backpressure: a slow client slows the upstream read instead of growing memory.
  #relay(upstream: IncomingMessage, data: Buffer): void {
    this.#record.markFirstByte();
    if (!this.#res.write(data)) {
      upstream.pause();
      this.#res.once('drain', () => {
        if (this.#held === null) upstream.resume();
      });
    }
  }

  #onResponse(upstream: IncomingMessage): void {
    if (this.#phase === 'done') return upstream.resume() as unknown as void;
    const status = upstream.statusCode ?? 502;
    const isSse = (upstream.headers['content-type'] ?? '').includes('text/event-stream');
    upstream.on('error', (error) => this.#upstreamFailed(error));
    upstream.on('aborted', () => this.#upstreamFailed(new Error('upstream closed the connection')));

    if (this.#call.stream && isSse && status < 300) return this.#stream(upstream, status);
    // Pings already committed us to a 200 stream, or the provider refused the operator's key: read its message only.
    if (this.#sseOpen || kOperatorKeyRefused.has(status)) return this.#refuse(upstream, status);
    this.#passThrough(upstream, status);
  }

  #stream(upstream: IncomingMessage, status: number): void {
    this.#phase = 'streaming';
    this.#record.charge = 'partial';
    if (!this.#sseOpen) this.#openSse(status, downstreamHeaders(upstream.headers, true));
    upstream.on('data', (chunk: Buffer) => this.#streamData(upstream, chunk));
    upstream.on('end', () => this.#streamEnd());
  }

  /** Relays the complete events of a stream's chunk, counting their tokens; holds the chunk while the budget grows. */
  #streamData(upstream: IncomingMessage, chunk: Buffer): void {
    if (this.#phase === 'done') return;
    if (this.#held !== null) return void this.#held.push(chunk);
    this.#stopPing();
    this.#record.capture(chunk);
    const events = this.#cutter.push(chunk);
    if (events.length === 0) return;
    const { dialect, meter } = this.#call;
    const text = events.toString('utf8');
    if (!this.#terminal && dialect.isTerminal(text)) this.#terminal = true;
    for (const data of eventsMentioning(text, '{')) {
      meter.report(dialect.usageFromEvent(data, meter.reported));
      meter.addStreamed(dialect.streamedText(data));
    }
    if (!this.#call.hideUsageChunk) this.#relay(upstream, events);
    else {
      const shown = withoutEvents(text, '"usage"', isUsageOnlyChunk);
      if (shown !== '') this.#relay(upstream, shown.length === text.length ? events : Buffer.from(shown));
    }
    const budget = this.#call.budget;
    if (budget !== null && !this.#terminal && meter.running() > budget.granted) this.#growBudget(upstream, budget);
  }

  /** The upstream ended the stream: complete after the dialect's final event, else a 502 error event. */
  #streamEnd(): void {
    if (this.#phase === 'done') return;
    if (this.#held !== null) return void this.#held.push('end');
    if (this.#terminal && this.#cutter.pending.toString('utf8').trim() === '') {
      this.#record.charge = 'complete';
      this.#res.end();
      this.#finish(null);
    } else {
      this.#sendError(502, `${this.#call.provider} ended the stream before its final event`);
    }
  }

  /**
   * The stream outgrew its budget hold: hold back the upstream while the hold grows; when the budget has no room
   * left, end the stream with the dialect's error event (403 budget_exceeded) and stop the upstream.
   */
  #growBudget(upstream: IncomingMessage, budget: BudgetHold): void {
    this.#held = [];
    upstream.pause();
    const running = this.#call.meter.running();
    budget.grow(running).then(
      (grown) => this.#afterGrowth(grown, upstream, budget, running),
      () => this.#afterGrowth(false, upstream, budget, running),
    );
  }

  #afterGrowth(grown: boolean, upstream: IncomingMessage, budget: BudgetHold, running: number): void {
    const held = this.#held ?? [];
    this.#held = null;
    if (this.#phase === 'done') return;
    if (!grown) {
      this.#request?.destroy();
      const error = budget.exhausted(running);
      this.#sendError(403, error.message, { code: error.code });
      return;
    }
    upstream.resume();
    for (let i = 0; i < held.length; i++) {
      const item = held[i];
      if (item === 'end') this.#streamEnd();
      else this.#streamData(upstream, item);
      // Outgrew the hold again (#streamData started a growth): what is left waits for the next one.
      const again = this.#held as (Buffer | 'end')[] | null;
      if (again !== null) {
        again.push(...held.slice(i + 1));
        return;
      }
    }
  }

  /** An upstream error after pings, or a refusal of the operator's key: only its message is wanted. */
  #refuse(upstream: IncomingMessage, status: number): void {
    this.#phase = 'refusing';
    const body: Buffer[] = [];
    let bodyBytes = 0;
    // An endless error body must not grow memory.
    upstream.on('data', (chunk: Buffer) => {
      if (bodyBytes >= kErrorBodyLimitBytes) return;
      body.push(chunk);
      bodyBytes += chunk.length;
    });
    upstream.on('end', () => {
      if (this.#phase === 'done') return;
      const { provider } = this.#call;
      const text = Buffer.concat(body).subarray(0, kErrorBodyLimitBytes).toString('utf8');
      const detail = `${provider} answered ${status}: ${upstreamMessage(text)}`;
      if (kOperatorKeyRefused.has(status)) {
        // The operator's key and account are not the tenant's business (and the message may quote the key): the
        // tenant hears the proxy failed, the operator reads why.
        this.#settings.operatorWarning(redactSecrets(`the proxy's ${provider} key was refused: ${detail}`));
        this.#sendError(502, `${provider} refused this service's credentials; the operator must fix its provider settings`, {
          code: 'upstream_error',
          logged: detail,
        });
      } else {
        this.#sendError(status >= 400 ? status : 502, detail);
      }
    });
  }

  /** Status, headers and body as the upstream sent them; the usage is read from the body as it goes by. */
  #passThrough(upstream: IncomingMessage, status: number): void {
    this.#phase = 'relaying';
    if (status < 300) this.#record.charge = 'partial';
    this.#stopPing();
    this.#record.statusSent = status;
    this.#res.writeHead(status, downstreamHeaders(upstream.headers, false));
    const usageBody = new UsageBody();
    upstream.on('data', (chunk: Buffer) => {
      this.#record.capture(chunk);
      if (status < 300) {
        usageBody.push(chunk);
        this.#call.meter.addBodyBytes(chunk.length);
      }
      this.#relay(upstream, chunk);
    });
    upstream.on('end', () => {
      if (this.#phase === 'done') return;
      this.#record.markFirstByte();
      if (status < 300) {
        const { dialect, meter } = this.#call;
        meter.report(dialect.usageFromBody(usageBody.body()));
        this.#record.charge = 'complete';
      }
      this.#res.end();
      const provider = this.#call.provider;
      this.#finish(
        status >= 400 ? `${provider} answered ${status}: ${upstreamMessage(Buffer.concat(this.#record.captured).toString('utf8'))}` : null,
      );
    });
  }
}
