import { debuglog } from 'node:util';
import type { RequestLogRow, Store } from '../store/types.js';
import { logBody } from './redact.js';

const debug = debuglog('svc');

/**
 * A row as the request path hands it over: bodies still raw, because redacting and truncating them is work
 * the user's request should not wait for.
 */
export type PendingLogRow = Omit<RequestLogRow, 'id' | 'requestBody' | 'responseBody'> & {
  requestBody: string;
  responseBody: Buffer[] | string;
};

/** Rows waiting beyond this are dropped (oldest kept): a stuck store must not grow memory without bound. */
const kMaxQueued = 10_000;

/**
 * Writes request-log rows off the request path: `push` only queues, and the queue is flushed on the next
 * `setImmediate`, after the response has gone out. A failed write is traced (`NODE_DEBUG=svc`) and dropped;
 * it never reaches the user's request.
 */
export class RequestLogQueue {
  readonly #store: Store;
  #queue: PendingLogRow[] = [];
  #scheduled = false;
  #inFlight: Promise<void> = Promise.resolve();
  #dropped = 0;
  #failed = 0;

  constructor(store: Store) {
    this.#store = store;
  }

  push(row: PendingLogRow): void {
    if (this.#queue.length >= kMaxQueued) {
      this.#dropped++;
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
        const responseText =
          typeof row.responseBody === 'string' ? row.responseBody : Buffer.concat(row.responseBody).toString('utf8');
        await this.#store.insertRequestLog({
          ...row,
          requestBody: logBody(row.requestBody),
          responseBody: logBody(responseText),
          // Upstream messages quote what they were sent ("Incorrect API key provided: sk-...").
          error: row.error === null ? null : logBody(row.error),
        });
      } catch (error) {
        this.#failed++;
        debug('request log write failed: %s', error instanceof Error ? error.message : String(error));
      }
    }
  }
}
