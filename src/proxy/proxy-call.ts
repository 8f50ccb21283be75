// One proxied call as the proxy routes hand it to forwardCall (forward.ts): what goes upstream, what the log and the
// budget need to know about it. Its own module so that the call's log record (call-record.ts) reads it without
// importing the forwarding state machine.
import type { BudgetHold } from './budget.js';
import type { Dialect } from './dialects.js';
import type { Meter } from './metering.js';
import type { ProviderName } from './types.js';
import type { UpstreamTarget } from './upstream.js';

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
  /** Counts the call's tokens; made before the call so that its reservation used the same input estimate. */
  meter: Meter;
  /** The part of the project's budget the call holds; null when the project has no budget. */
  budget: BudgetHold | null;
}
