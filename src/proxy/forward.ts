import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Dialect, Usage } from './dialects.js';
import { downstreamHeaders, kStreamHeaders, upstreamHeaders } from './headers.js';
import type { RequestLogQueue } from './request-log.js';
import { publishProxyCall } from '../telemetry.js';
import { eventsMentioning, SseEventCutter, withoutEvents } from './sse.js';
import { isUsageOnlyChunk } from './stream-usage.js';
import type { ProviderName } from './types.js';

/** Keep-alive connection pools to the providers, one per plugin instance. */
export interface UpstreamAgents {
  http: http.Agent;
  https: https.Agent;
}

export function createUpstreamAgents(): UpstreamAgents {
  return {
    http: new http.Agent({ keepAlive: true, scheduling: 'lifo' }),
    https: new https.Agent({ keepAlive: true, scheduling: 'lifo' }),
  };
}

/** Where a provider route's requests go, parsed once when the plugin starts. */
export interface UpstreamTarget {
  secure: boolean;
  hostname: string;
  port: number;
  path: string;
}

export function upstreamTarget(url: string): UpstreamTarget {
  const parsed = new URL(url);
  const secure = parsed.protocol === 'https:';
  return {
    secure,
    // URL keeps IPv6 literals bracketed; the socket wants them bare.
    hostname: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port === '' ? (secure ? 443 : 80) : Number(parsed.port),
    path: parsed.pathname + parsed.search,
  };
}

/** One proxied call, checked and ready to go upstream. */
export interface ProxyCall {
  dialect: Dialect;
  provider: ProviderName;
  upstream: UpstreamTarget;
  providerKey: string;
  /** The request body as sent upstream (prefix stripped). */
  body: Buffer;
  /** The request body as the client sent it, for the log. */
  clientBody: string;
  stream: boolean;
  /** The proxy asked the upstream for a usage chunk the client did not ask for: keep it from the client. */
  hideUsageChunk: boolean;
  /** The model as the client sent it. */
  model: string;
  projectId: string;
  keyId: string;
}

export interface ForwardSettings {
  agents: UpstreamAgents;
  upstreamTimeoutMs: number;
  pingIntervalMs: number;
  log: RequestLogQueue;
}

// The log keeps 64 KiB after redaction; capture twice that so redaction never shortens it below the limit.
const kCaptureLimitBytes = 128 * 1024;

// Non-streaming bodies up to this size are parsed for their usage; larger ones are relayed without it.
const kUsageBodyLimitBytes = 16 * 1024 * 1024;

// An upstream error body is read for its message only; bytes past this are not kept.
const kErrorBodyLimitBytes = 64 * 1024;
// The upstream's error message as we repeat it to the client and the log.
const kErrorMessageLimit = 500;

// SvcError codes for the errors the proxy itself reports.
const kCodeByStatus: Readonly<Record<number, string>> = { 429: 'rate_limited', 502: 'upstream_error', 504: 'upstream_timeout' };

class UpstreamTimeout extends Error {}

/**
 * Sends the call upstream and relays the answer on `res` (the hijacked reply) as it arrives: a non-streaming body
 * and status pass through; a stream goes out event by event with `: ping` comments until its first byte, and an
 * upstream failure ends it with an error event in the client's dialect. Logs one row when the call is over.
 */
export function forwardCall(call: ProxyCall, incoming: IncomingMessage, res: ServerResponse, settings: ForwardSettings): void {
  const { dialect, provider } = call;
  const createdAt = Date.now();
  const t0 = performance.now();
  const captured: Buffer[] = [];
  let capturedBytes = 0;
  let usage: Usage = { tokensIn: null, tokensOut: null };
  let statusSent = 0;
  let ttfbMs: number | null = null;
  let sseOpen = false; // the client has an SSE head: failures become error events
  let finished = false;
  let timedOut = false;
  let pingTimer: NodeJS.Timeout | null = null;

  const capture = (chunk: Buffer): void => {
    if (capturedBytes >= kCaptureLimitBytes) return;
    captured.push(chunk);
    capturedBytes += chunk.length;
  };
  const markFirstByte = (): void => {
    if (ttfbMs === null) ttfbMs = performance.now() - t0;
  };
  const stopPing = (): void => {
    if (pingTimer) clearInterval(pingTimer);
    pingTimer = null;
  };

  const finish = (error: string | null): void => {
    if (finished) return;
    finished = true;
    stopPing();
    const totalMs = performance.now() - t0;
    publishProxyCall({ provider, status: statusSent, seconds: totalMs / 1000, tokensIn: usage.tokensIn, tokensOut: usage.tokensOut, error });
    settings.log.push({
      projectId: call.projectId,
      keyId: call.keyId,
      provider,
      model: call.model,
      stream: call.stream,
      status: statusSent,
      ttfbMs: ttfbMs === null ? null : round(ttfbMs),
      totalMs: round(totalMs),
      tokensIn: usage.tokensIn,
      tokensOut: usage.tokensOut,
      error,
      requestBody: call.clientBody,
      responseBody: captured,
      createdAt,
    });
  };

  const sendError = (status: number, message: string): void => {
    const detail = { code: kCodeByStatus[status] ?? (status >= 500 ? 'upstream_error' : 'invalid_request') };
    if (sseOpen) {
      const event = Buffer.from(dialect.streamErrorEvent(status, message, detail));
      capture(event);
      markFirstByte();
      res.end(event);
    } else if (!res.headersSent) {
      const body = Buffer.from(JSON.stringify(dialect.errorBody(status, message, detail)));
      capture(body);
      statusSent = status;
      markFirstByte();
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    } else {
      // A non-streaming body was already under way: cutting the connection is the only honest signal left.
      res.destroy();
    }
    finish(message);
  };

  const openSse = (status: number, headers: http.OutgoingHttpHeaders): void => {
    statusSent = status;
    sseOpen = true;
    res.writeHead(status, headers);
    res.flushHeaders();
  };

  const upstreamFailed = (error: Error): void => {
    if (finished) return;
    upstreamRequest.destroy();
    if (timedOut || error instanceof UpstreamTimeout) {
      sendError(504, `${provider} sent nothing for ${settings.upstreamTimeoutMs} ms`);
    } else if (!responseStarted) {
      const reason = (error as NodeJS.ErrnoException).code ?? error.message;
      sendError(502, `${provider} is unreachable (${reason})`);
    } else {
      sendError(502, `${provider} closed the connection mid-response`);
    }
  };

  // Pipes with backpressure: a slow client slows the upstream read instead of growing memory.
  const relay = (upstream: IncomingMessage, data: Buffer): void => {
    markFirstByte();
    if (!res.write(data)) {
      upstream.pause();
      res.once('drain', () => upstream.resume());
    }
  };

  let responseStarted = false;
  const onResponse = (upstream: IncomingMessage): void => {
    responseStarted = true;
    if (finished) return upstream.resume() as unknown as void;
    const status = upstream.statusCode ?? 502;
    const isSse = (upstream.headers['content-type'] ?? '').includes('text/event-stream');
    upstream.on('error', upstreamFailed);
    upstream.on('aborted', () => upstreamFailed(new Error('upstream closed the connection')));

    if (call.stream && isSse && status < 300) {
      if (!sseOpen) openSse(status, downstreamHeaders(upstream.headers, true));
      const cutter = new SseEventCutter();
      let terminal = false;
      upstream.on('data', (chunk: Buffer) => {
        stopPing();
        capture(chunk);
        const events = cutter.push(chunk);
        if (events.length === 0) return;
        const text = events.toString('utf8');
        if (!terminal && dialect.isTerminal(text)) terminal = true;
        for (const data of eventsMentioning(text, '"usage"')) usage = dialect.usageFromEvent(data, usage);
        if (!call.hideUsageChunk) return relay(upstream, events);
        const shown = withoutEvents(text, '"usage"', isUsageOnlyChunk);
        if (shown !== '') relay(upstream, shown.length === text.length ? events : Buffer.from(shown));
      });
      upstream.on('end', () => {
        if (finished) return;
        if (terminal && cutter.pending.toString('utf8').trim() === '') {
          res.end();
          finish(null);
        } else {
          sendError(502, `${provider} ended the stream before its final event`);
        }
      });
      return;
    }

    if (sseOpen) {
      // Pings already committed us to a 200 stream; the upstream answered with an error instead.
      const body: Buffer[] = [];
      let bodyBytes = 0;
      // Only the message is wanted: an endless error body must not grow memory.
      upstream.on('data', (chunk: Buffer) => {
        if (bodyBytes >= kErrorBodyLimitBytes) return;
        body.push(chunk);
        bodyBytes += chunk.length;
      });
      upstream.on('end', () => {
        if (finished) return;
        const text = Buffer.concat(body).subarray(0, kErrorBodyLimitBytes).toString('utf8');
        sendError(status >= 400 ? status : 502, `${provider} answered ${status}: ${upstreamMessage(text)}`);
      });
      return;
    }

    // Pass-through: status, headers and body as the upstream sent them.
    stopPing();
    statusSent = status;
    res.writeHead(status, downstreamHeaders(upstream.headers, false));
    // Usage sits at the end of the JSON: keep the whole body (bounded) to read it.
    const whole: Buffer[] = [];
    let wholeBytes = 0;
    upstream.on('data', (chunk: Buffer) => {
      capture(chunk);
      if (wholeBytes <= kUsageBodyLimitBytes) whole.push(chunk);
      wholeBytes += chunk.length;
      relay(upstream, chunk);
    });
    upstream.on('end', () => {
      if (finished) return;
      if (ttfbMs === null) markFirstByte();
      if (status < 300 && wholeBytes <= kUsageBodyLimitBytes) usage = dialect.usageFromBody(parseJson(whole));
      res.end();
      finish(status >= 400 ? `${provider} answered ${status}: ${upstreamMessage(Buffer.concat(captured).toString('utf8'))}` : null);
    });
  };

  const { secure, hostname, port, path } = call.upstream;
  const upstreamRequest = (secure ? https : http).request({
    method: 'POST',
    hostname,
    port,
    path,
    agent: secure ? settings.agents.https : settings.agents.http,
    headers: upstreamHeaders(incoming.headers, provider, call.providerKey, call.body.length),
  });
  upstreamRequest.setTimeout(settings.upstreamTimeoutMs, () => {
    timedOut = true;
    upstreamRequest.destroy(new UpstreamTimeout());
  });
  upstreamRequest.on('error', upstreamFailed);
  upstreamRequest.on('response', onResponse);
  upstreamRequest.end(call.body);

  if (call.stream) {
    pingTimer = setInterval(() => {
      if (finished) return stopPing();
      if (!sseOpen) openSse(200, { 'content-type': 'text/event-stream; charset=utf-8', ...kStreamHeaders });
      res.write(': ping\n\n');
    }, settings.pingIntervalMs);
  }

  // The client went away before we finished: stop the upstream work it was paying for.
  res.on('close', () => {
    if (finished) return;
    statusSent = 0;
    upstreamRequest.destroy();
    finish('client closed the connection');
  });
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

function parseJson(chunks: Buffer[]): unknown {
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return null;
  }
}

/** The human message inside a provider's error body (any of the three shapes), else the body itself, shortened. */
function upstreamMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: { message?: unknown } | string };
    const message =
      typeof body.error === 'object' && body.error !== null ? body.error.message : body.message ?? body.error;
    if (typeof message === 'string') return shorten(message, kErrorMessageLimit);
  } catch {
    // not JSON
  }
  return shorten(text, 200);
}

function shorten(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}...` : text;
}
