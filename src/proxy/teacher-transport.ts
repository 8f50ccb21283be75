// The way out for a teacher's labelling calls in the service: each call goes through the proxy's own forwarding code
// (forward.ts), exactly as a client's call through `/v2/{project_id}/...` would, so it is logged on the project's
// dashboard, holds and spends the project's budget, and is refused once the organization loses proxy access. Only
// the reply is collected in memory instead of being relayed to a socket.
import { EventEmitter } from 'node:events';
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';

import { SvcError } from '../errors.js';
import type { Principal, SvcService } from '../service/service.js';
import type { TeacherCallReply, TeacherTransport } from '../teacher/labeller.js';
import { BudgetHold, outputAllowance } from './budget.js';
import { type DialectName, kDialects } from './dialects.js';
import { forwardCall, type ForwardSettings, type ReplySink, type UpstreamTarget } from './forward.js';
import { Meter } from './metering.js';
import type { ProviderConfig, ProviderName } from './types.js';

/** The dialect a teacher's calls to each provider speak: that provider's own API. */
const kTeacherDialect: Readonly<Record<ProviderName, DialectName>> = Object.freeze({
  'provider-a': 'openai',
  'provider-b': 'mistral',
  'provider-c': 'anthropic',
});

export interface TeacherTransportDeps {
  service: SvcService;
  settings: ForwardSettings;
  providers: ProviderConfig;
  /** Every (dialect, provider) pair's upstream, as the proxy routes parsed them. */
  targets: Readonly<Record<DialectName, Partial<Record<ProviderName, UpstreamTarget>>>>;
}

/** Who the calls are for: the caller that asked for the teacher, its project, and the teacher as proxied. */
export interface TeacherCaller {
  principal: Principal;
  projectId: string;
  /** `provider-a:gpt-4o-mini` */
  teacher: string;
}

/**
 * A transport that sends each labelling call through the proxy for `caller`'s project. A refusal that no retry can
 * change (no proxy access, the project gone, its budget spent) comes back with `stop` set.
 *
 * @example
 * ```ts
 * const send = proxyTeacherTransport(deps, { principal, projectId: 'proj_0123456789ab', teacher: 'provider-a:gpt-4o-mini' });
 * const reply = await send(teacherRequestBody('openai', 'gpt-4o-mini', task, texts), signal);
 * // { status: 200, body: '{"id":…}', tokensIn: 41, tokensOut: 12, ms: 380, retryAfterMs: null }; one row in the log
 * ```
 */
export function proxyTeacherTransport(deps: TeacherTransportDeps, caller: TeacherCaller): TeacherTransport {
  const provider = caller.teacher.slice(0, caller.teacher.indexOf(':')) as ProviderName;
  const dialectName = kTeacherDialect[provider];
  const dialect = kDialects[dialectName];
  const upstream = deps.targets[dialectName][provider]!;
  return async (body, signal) => {
    const started = performance.now();
    const refused = (error: unknown): TeacherCallReply => {
      if (!(error instanceof SvcError)) throw error;
      return { status: error.status, body: error.message, tokensIn: null, tokensOut: null, ms: 0, retryAfterMs: null, stop: error.message };
    };
    let budget: BudgetHold | null;
    const clientBody = JSON.stringify({ ...body, model: caller.teacher });
    const meter = new Meter(Buffer.byteLength(clientBody));
    try {
      // Checked per call, as the proxy checks a client's: access withdrawn mid-job stops the job's labelling.
      const project = await deps.service.authorizeProxy(caller.principal, caller.projectId);
      budget = await BudgetHold.take(
        deps.service.store.proxyLedger,
        project,
        meter.inputEstimate + outputAllowance(body),
        deps.settings.upstreamTimeoutMs,
      );
    } catch (error) {
      return refused(error);
    }
    const reply = new CollectedReply(signal);
    forwardCall(
      {
        dialect,
        provider,
        upstream,
        providerKey: deps.providers[provider].key,
        body: Buffer.from(JSON.stringify(body)),
        clientBody,
        stream: false,
        hideUsageChunk: false,
        model: caller.teacher,
        projectId: caller.projectId,
        keyId: caller.principal.keyId,
        meter,
        budget,
      },
      { headers: {} } as IncomingMessage,
      reply,
      deps.settings,
    );
    await reply.finished;
    const text = Buffer.concat(reply.chunks).toString('utf8');
    let usage = { tokensIn: null as number | null, tokensOut: null as number | null };
    if (reply.status >= 200 && reply.status < 300) {
      try {
        usage = dialect.usageFromBody(JSON.parse(text));
      } catch {
        // Not JSON: the reader says so for each text of the call.
      }
    }
    return {
      status: reply.status,
      body: text,
      ...usage,
      ms: performance.now() - started,
      retryAfterMs: retryAfterMs(reply.headers['retry-after']),
    };
  };
}

function retryAfterMs(value: unknown): number | null {
  const seconds = Number(Array.isArray(value) ? value[0] : value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : null;
}

/** The reply side of a forwarded call, kept in memory; `close` is emitted when the job aborts, as a client hanging up. */
class CollectedReply extends EventEmitter implements ReplySink {
  headersSent = false;
  status = 0;
  headers: OutgoingHttpHeaders = {};
  readonly chunks: Buffer[] = [];
  readonly finished: Promise<void>;
  #resolve!: () => void;

  constructor(signal: AbortSignal) {
    super();
    this.finished = new Promise((resolve) => (this.#resolve = resolve));
    const hangUp = () => {
      this.emit('close');
      this.#resolve();
    };
    if (signal.aborted) queueMicrotask(hangUp);
    else signal.addEventListener('abort', hangUp, { once: true });
    void this.finished.then(() => signal.removeEventListener('abort', hangUp));
  }

  writeHead(status: number, headers: OutgoingHttpHeaders = {}): this {
    this.status = status;
    this.headers = headers;
    this.headersSent = true;
    return this;
  }

  flushHeaders(): void {}

  write(chunk: Buffer | string): boolean {
    this.chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    return true;
  }

  end(chunk?: Buffer | string): this {
    if (chunk !== undefined) this.write(chunk);
    this.#resolve();
    return this;
  }

  destroy(): this {
    this.#resolve();
    return this;
  }
}
