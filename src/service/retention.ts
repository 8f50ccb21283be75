import { debuglog } from 'node:util';

import * as is from '../is.js';
import type { Store } from '../store/types.js';

const debug = debuglog('svc');

/** How long and how much of the proxy request log is kept: the service's defaults, the one place they live. */
export const kDefaultRetention = Object.freeze({
  /** Rows older than this many days go. */
  days: 30,
  /** Beyond this many rows per project, the oldest go. */
  maxRowsPerProject: 100_000,
});

/** How often `svc serve` prunes: hourly keeps a busy project near its cap without pruning on every request. */
export const kRetentionIntervalMs = 60 * 60 * 1000;

/**
 * Rows per DELETE. SQLite calls are synchronous: each batch holds the event loop (and the write lock) while it
 * runs, so batches stay small (`npm run bench -- retention`: a median of 21 ms per batch on a busy 2-core machine).
 */
export const kRetentionBatchRows = 500;

const kDayMs = 24 * 60 * 60 * 1000;

/** Options of the request-log retention; all optional. */
export interface RetentionOptions {
  /** Days a row is kept. Default 30. */
  days?: number;
  /** Rows kept per project (the newest). Default 100,000. */
  maxRowsPerProject?: number;
}

export type ResolvedRetention = Required<RetentionOptions>;

export function resolveRetention(options: RetentionOptions = {}): ResolvedRetention {
  return {
    days: is.positiveInteger(options.days ?? kDefaultRetention.days, 'retention.days'),
    maxRowsPerProject: is.positiveInteger(options.maxRowsPerProject ?? kDefaultRetention.maxRowsPerProject, 'retention.maxRowsPerProject'),
  };
}

/**
 * Deletes request-log rows older than `days` and, per project, all but the newest `maxRowsPerProject`, a batch
 * at a time with a turn of the event loop between batches; resolves to how many rows went.
 */
export async function pruneRequestLog(store: Store, retention: ResolvedRetention, now: number = Date.now()): Promise<number> {
  const olderThan = now - retention.days * kDayMs;
  let removed = 0;
  for (const projectId of await store.listRequestLogProjects()) {
    for (;;) {
      const batch = await store.pruneRequestLog(projectId, {
        olderThan,
        keepNewest: retention.maxRowsPerProject,
        limit: kRetentionBatchRows,
      });
      removed += batch;
      if (batch < kRetentionBatchRows) break;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  if (removed > 0) debug('request log: pruned %d row(s)', removed);
  return removed;
}

/**
 * Prunes in the background: once when started, then every `intervalMs`. The timer is unref'd (it never keeps
 * a process alive) and a run never overlaps the previous one; a failed run is traced and retried next time.
 */
export class RetentionTimer {
  readonly #store: Store;
  readonly #retention: ResolvedRetention;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();

  constructor(store: Store, retention: ResolvedRetention, intervalMs: number = kRetentionIntervalMs) {
    this.#store = store;
    this.#retention = retention;
    this.#intervalMs = is.positiveInteger(intervalMs, 'retention.intervalMs');
  }

  start(): void {
    if (this.#timer !== undefined) return;
    const tick = (): void => {
      this.#running = pruneRequestLog(this.#store, this.#retention).then(
        () => {},
        (error: unknown) => debug('request log pruning failed: %s', error instanceof Error ? error.message : String(error)),
      );
      void this.#running.then(() => {
        if (this.#timer !== undefined) this.#timer = setTimeout(tick, this.#intervalMs).unref();
      });
    };
    this.#timer = setTimeout(tick, 0).unref();
  }

  /** Stops the timer and waits for a run under way. */
  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
