// Evaluation reports the service computes after training, in the background, for what no training job stored: a
// version trained before reports were stored, and a version beside a live one that became live after it trained.
// Each organization's computations run one at a time, in the order they were asked for, so one organization's
// many reports never hold more than one of training's workers (the pool gives each of its tasks training's share,
// never the worker predictions keep). A report once computed is kept in memory: the versions it scores never change.
import type { EvaluationReport } from '../train/evaluation.js';

/** Reports kept, by the versions' stored ids. */
export const kCachedBackgroundReports = 256;

export class BackgroundReports {
  readonly #done = new Map<string, EvaluationReport>();
  readonly #failed = new Map<string, unknown>();
  readonly #computing = new Set<string>();
  /** Each organization's last computation: the next one starts when it ends. */
  readonly #lanes = new Map<string, Promise<void>>();
  readonly #closing = new AbortController();

  /** Aborts the computations when the service closes: they stop before their next chunk of texts. */
  get signal(): AbortSignal {
    return this.#closing.signal;
  }

  /**
   * The report under `key` once computed; until then null, and the first call starts `compute` in `orgId`'s lane. A
   * computation that failed throws its error to the next call, and the call after that starts it again.
   */
  get(orgId: string, key: string, compute: () => Promise<EvaluationReport>): EvaluationReport | null {
    const done = this.#done.get(key);
    if (done !== undefined) {
      this.#done.delete(key); // re-inserted last: most recently used
      this.#done.set(key, done);
      return done;
    }
    if (this.#failed.has(key)) {
      const error = this.#failed.get(key);
      this.#failed.delete(key);
      throw error;
    }
    if (!this.#computing.has(key)) this.#start(orgId, key, compute);
    return null;
  }

  /** Resolves when no computation runs or waits (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#lanes.size > 0) await Promise.all(this.#lanes.values());
  }

  /** Stops the computations (each before its next chunk of texts) and waits for them to end. */
  async close(): Promise<void> {
    this.#closing.abort();
    await this.idle();
  }

  #start(orgId: string, key: string, compute: () => Promise<EvaluationReport>): void {
    this.#computing.add(key);
    const lane = (this.#lanes.get(orgId) ?? Promise.resolve())
      .then(() => compute())
      .then(
        (report) => {
          this.#done.set(key, report);
          if (this.#done.size > kCachedBackgroundReports) this.#done.delete(this.#done.keys().next().value as string);
        },
        (error: unknown) => {
          if (this.#closing.signal.aborted) return;
          this.#failed.set(key, error);
          if (this.#failed.size > kCachedBackgroundReports) this.#failed.delete(this.#failed.keys().next().value as string);
        },
      )
      .finally(() => {
        this.#computing.delete(key);
        if (this.#lanes.get(orgId) === lane) this.#lanes.delete(orgId);
      });
    this.#lanes.set(orgId, lane);
  }
}
