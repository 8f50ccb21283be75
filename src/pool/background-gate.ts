// Which pool task that is not a predict batch may start now. Training's embedding chunks, fine-tuning runs
// and head fits, a classify call's fit, explain's neighbour search, saving a model and building its merged
// export all pass here (pool.ts sends every kind but predict, adapter and ping), on a bounded number of workers
// (`capacity`: a shared service keeps one worker for predictions however much of this work is queued).
// Within that share, tenants (organizations) take turns task by task: when a task ends, the next goes to the
// tenant whose last turn is oldest (one that never had one first), its own tasks oldest first. A small job of
// one organization so waits for at most one task of each other organization per task of its own, never for
// another's whole job. Waiting happens here, never in piscina's own queue, where no order or deadline applies.
import { SvcError } from '../errors.js';
import { rateLimited } from '../telemetry.js';

/** Tenants whose last turn is remembered before idle ones are forgotten (see `#forgetIdleTenants`). */
const kMaxRememberedTenants = 256;

/** What a caller refused for want of a background worker is told to wait: about one queued task's run. */
export const kGateRetryAfterSeconds = 5;

/** How a task waits for its turn. */
export interface GateOptions {
  /** Stops the wait: the task leaves the line without running, and `run` rejects with `aborted`. */
  signal?: AbortSignal;
  /**
   * Milliseconds the task may wait for its turn: beyond, it leaves the line and `run` rejects with 503
   * `overloaded`. A call that answers a client has a deadline; a training job's tasks have none.
   */
  startWithinMs?: number;
}

interface Waiter {
  start: () => void;
}

/**
 * A round-robin gate by tenant in front of `capacity()` slots (at least one). `run(tenant, work)` starts `work`
 * once a slot is free and it is the tenant's turn; the slot is freed when `work` settles.
 *
 * @example
 * ```ts
 * const gate = new BackgroundGate(() => 1);
 * const order: string[] = [];
 * const task = (name: string) => () => new Promise<void>((resolve) => setTimeout(() => (order.push(name), resolve()), 10));
 * await Promise.all([gate.run('a', task('a1')), gate.run('a', task('a2')), gate.run('a', task('a3')), gate.run('b', task('b1'))]);
 * order; // ['a1', 'b1', 'a2', 'a3']
 * ```
 */
export class BackgroundGate {
  readonly #capacity: () => number;
  #running = 0;
  // Each tenant's waiting tasks in arrival order; a tenant leaves the map when it has none.
  readonly #waiting = new Map<string, Waiter[]>();
  // When each tenant's last task started (a counter, not a clock), for the turns.
  readonly #lastTurn = new Map<string, number>();
  #turns = 0;

  constructor(capacity: () => number) {
    this.#capacity = capacity;
  }

  /** Tasks running and waiting now, for tests and monitoring. */
  get stats(): { running: number; waiting: number } {
    let waiting = 0;
    for (const queue of this.#waiting.values()) waiting += queue.length;
    return { running: this.#running, waiting };
  }

  /** Runs `work` in the tenant's turn (see {@link GateOptions} for how the wait may end without it). */
  run<T>(tenant: string, work: () => Promise<T>, options: GateOptions = {}): Promise<T> {
    const { signal, startWithinMs } = options;
    if (signal?.aborted) return Promise.reject(new SvcError('aborted', 'the operation was aborted'));
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const leave = (error: SvcError) => {
        const queue = this.#waiting.get(tenant);
        const at = queue?.indexOf(waiter) ?? -1;
        if (queue === undefined || at < 0) return; // started meanwhile
        queue.splice(at, 1);
        if (queue.length === 0) this.#waiting.delete(tenant);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(error);
      };
      const onAbort = () => leave(new SvcError('aborted', 'the operation was aborted'));
      const waiter: Waiter = {
        start: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          work()
            .then(resolve, reject)
            .finally(() => {
              this.#running--;
              this.#next();
            });
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (startWithinMs !== undefined && Number.isFinite(startWithinMs)) {
        timer = setTimeout(() => leave(overloaded(startWithinMs)), startWithinMs);
      }
      const queue = this.#waiting.get(tenant);
      if (queue === undefined) this.#waiting.set(tenant, [waiter]);
      else queue.push(waiter);
      this.#next();
    });
  }

  /** The capacity may have grown: start what fits now. */
  poke(): void {
    this.#next();
  }

  /** Starts waiting tasks while slots are free, each time the tenant whose last turn is oldest. */
  #next(): void {
    while (this.#running < Math.max(1, this.#capacity()) && this.#waiting.size > 0) {
      let tenant: string | undefined;
      let oldest = Infinity;
      for (const name of this.#waiting.keys()) {
        const turn = this.#lastTurn.get(name) ?? -1;
        if (turn < oldest) {
          oldest = turn;
          tenant = name;
        }
      }
      const queue = this.#waiting.get(tenant!)!;
      const waiter = queue.shift()!;
      if (queue.length === 0) this.#waiting.delete(tenant!);
      this.#lastTurn.set(tenant!, this.#turns++);
      this.#running++;
      waiter.start();
    }
    if (this.#lastTurn.size > kMaxRememberedTenants) this.#forgetIdleTenants();
  }

  /**
   * Forgets the turns of tenants with nothing waiting whose last turn is older than every waiting tenant's: back,
   * they would go first anyway (as a tenant never seen does), so the order is the same and the map stays small.
   */
  #forgetIdleTenants(): void {
    let oldestWaiting = Infinity;
    for (const name of this.#waiting.keys()) oldestWaiting = Math.min(oldestWaiting, this.#lastTurn.get(name) ?? -1);
    for (const [name, turn] of this.#lastTurn) {
      if (turn < oldestWaiting && !this.#waiting.has(name)) this.#lastTurn.delete(name);
    }
  }
}

function overloaded(waitedMs: number): SvcError {
  rateLimited('overloaded');
  return new SvcError(
    'overloaded',
    `The service is overloaded: this work waited ${waitedMs} ms for a worker of the share that training and other ` +
      `background work use; retry in ${kGateRetryAfterSeconds} seconds`,
    { retryAfterSeconds: kGateRetryAfterSeconds },
  );
}
