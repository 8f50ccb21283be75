import { debuglog } from 'node:util';
import { type RequestLogRow, rowTokens, type Store } from '../store/types.js';
import { logBody, redactSecrets } from './redact.js';

const debug = debuglog('svc');

/**
 * A row as the request path hands it over: bodies still raw, because redacting and truncating them is work
 * the user's request should not wait for.
 */
export type PendingLogRow = Omit<RequestLogRow, 'id' | 'requestBody' | 'responseBody'> & {
  requestBody: string;
  responseBody: Buffer[] | string;
  /** The call's budget hold, given back when the row is written (or when it cannot be). */
  reservationId: number | null;
};

/** How much of the calls' bodies the log keeps (see `ProxyRoutesOptions.requestLog`). */
export interface LogBodyLimits {
  /** Request and response body bytes together, per call. */
  maxBodyBytes: number;
  /** Body bytes of all of one project's rows. */
  maxProjectBodyBytes: number;
}

/**
 * Body bytes (request and response together) a call the upstream rejected keeps: such calls cost no tokens, so
 * their log rows must not be a free way to store megabytes. The error message is what they are kept for.
 */
export const kRejectedBodyBytes = 2 * 1024;

/**
 * The two bodies a row keeps within `limit` bytes, redacted and cut between characters: the request gets up to
 * half, and more when the response leaves room; the response gets the rest.
 *
 * @example
 * ```ts
 * logBodies('a'.repeat(100), 'b'.repeat(100), 100); // ['a'.repeat(50), 'b'.repeat(50)]
 * logBodies('a'.repeat(100), 'b'.repeat(10), 100); // ['a'.repeat(90), 'b'.repeat(10)]
 * ```
 */
export function logBodies(request: string, response: string, limit: number): [string, string] {
  const responseBytes = Buffer.byteLength(redactSecrets(response));
  const kept = logBody(request, Math.max(Math.floor(limit / 2), limit - responseBytes));
  return [kept, logBody(response, limit - Buffer.byteLength(kept))];
}

/** Rows waiting beyond this are dropped (oldest kept): a stuck store must not grow memory without bound. */
const kMaxQueued = 10_000;

/**
 * Writes request-log rows off the request path: `push` only queues, and the queue is flushed on the next
 * `setImmediate`, after the response has gone out. A failed write is traced (`NODE_DEBUG=svc`) and dropped;
 * it never reaches the user's request.
 */
export class RequestLogQueue {
  readonly #store: Store;
  readonly #limits: LogBodyLimits;
  #queue: PendingLogRow[] = [];
  #scheduled = false;
  #inFlight: Promise<void> = Promise.resolve();
  #dropped = 0;
  #failed = 0;
  readonly #onWritten: ((row: RequestLogRow) => void) | undefined;

  /**
   * `onWritten` hears of each row once it is stored, with its id and the call's bodies as the call had them (neither
   * redacted nor cut): the shadow classifier's hook (shadow.ts). It must not throw, nor wait for anything.
   */
  constructor(store: Store, limits: LogBodyLimits, onWritten?: (row: RequestLogRow) => void) {
    this.#store = store;
    this.#limits = limits;
    this.#onWritten = onWritten;
  }

  push(row: PendingLogRow): void {
    if (this.#queue.length >= kMaxQueued) {
      this.#dropped++;
      this.#release(row);
      return;
    }
    this.#queue.push(row);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.#inFlight = this.#inFlight.then(() => this.#flush());
      });
    }
  }

  /**
   * Bytes of a call's answer worth keeping for its row: twice what the row keeps, so that redaction (which can
   * shorten a body) never leaves it below the limit.
   */
  get captureBytes(): number {
    return 2 * this.#limits.maxBodyBytes;
  }

  /** Rows not written: dropped because the queue was full, or because the store failed. */
  get lost(): number {
    return this.#dropped + this.#failed;
  }

  /** Resolves when every row pushed so far has been written (or has failed). */
  async drain(): Promise<void> {
    while (this.#queue.length > 0 || this.#scheduled) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      await this.#inFlight;
    }
    await this.#inFlight;
  }

  async #flush(): Promise<void> {
    const rows = this.#queue;
    this.#queue = [];
    for (const row of rows) {
      try {
        const { reservationId, ...fields } = row;
        const responseText = typeof row.responseBody === 'string' ? row.responseBody : Buffer.concat(row.responseBody).toString('utf8');
        // Rejected: it failed and costs nothing (an upstream 4xx or 5xx, an unreachable or silent upstream).
        const rejected = row.error !== null && rowTokens(row) === 0;
        const limit = rejected ? Math.min(kRejectedBodyBytes, this.#limits.maxBodyBytes) : this.#limits.maxBodyBytes;
        const [requestBody, responseBody] = logBodies(row.requestBody, responseText, limit);
        const id = await this.#store.insertRequestLog(
          {
            ...fields,
            requestBody,
            responseBody,
            // Upstream messages quote what they were sent ("Incorrect API key provided: sk-...").
            error: row.error === null ? null : logBody(row.error, kRejectedBodyBytes),
          },
          { reservationId, maxProjectBodyBytes: this.#limits.maxProjectBodyBytes },
        );
        this.#onWritten?.({ ...fields, id, requestBody: row.requestBody, responseBody: responseText });
      } catch (error) {
        this.#failed++;
        this.#release(row);
        debug('request log write failed: %s', error instanceof Error ? error.message : String(error));
      }
    }
  }

  /** A row that will not be written gives its budget hold back now rather than when the hold lapses. */
  #release(row: PendingLogRow): void {
    if (row.reservationId === null) return;
    this.#store.proxyLedger.release(row.reservationId).catch((error: unknown) => {
      debug('budget hold release failed: %s', error instanceof Error ? error.message : String(error));
    });
  }
}
