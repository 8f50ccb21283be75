// The training share of the pool, handed out task by task and fairly between organizations. The job runner
// runs several jobs at once (jobs.ts); every pool task of a service job (an embedding chunk, the fine-tuning run,
// a head's fit) passes this gate first. At most `trainingWorkers()` training tasks are in the pool at once, so the
// worker kept for predictions stays theirs; when one ends, the next goes to the organization whose last turn is
// oldest (one that never had one first), its own tasks oldest first. A small job of one organization so waits for
// at most one task of each other organization per task of its own, never for another's whole job. Tasks without an
// organization (the library's `train()`) do not pass the gate: nothing waits beside them.
import { SvcError } from '../errors.js';
import { runTask, trainingWorkers } from './pool.js';
import type { PoolTask } from './tasks.js';
import type { MessagePort } from 'node:worker_threads';

/** Tenants whose last turn is remembered before idle ones are forgotten (see `#forgetIdleTenants`). */
const kMaxRememberedTenants = 256;

interface Waiter {
  start: () => void;
}

/**
 * A round-robin gate by tenant in front of `capacity()` slots. `run(tenant, work)` starts `work` once a slot is
 * free and it is the tenant's turn; the slot is freed when `work` settles.
 *
 * @example
 * ```ts
 * const gate = new TrainingGate(() => 1);
 * const order: string[] = [];
 * const task = (name: string) => () => new Promise<void>((resolve) => setTimeout(() => (order.push(name), resolve()), 10));
 * await Promise.all([gate.run('a', task('a1')), gate.run('a', task('a2')), gate.run('a', task('a3')), gate.run('b', task('b1'))]);
 * order; // ['a1', 'b1', 'a2', 'a3']
 * ```
 */
export class TrainingGate {
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

  /** Runs `work` in the tenant's turn; rejects with `SvcError('aborted')` if `signal` aborts while it waits. */
  run<T>(tenant: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(new SvcError('aborted', 'the operation was aborted'));
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        const queue = this.#waiting.get(tenant);
        const at = queue?.indexOf(waiter) ?? -1;
        if (queue === undefined || at < 0) return;
        queue.splice(at, 1);
        if (queue.length === 0) this.#waiting.delete(tenant);
        reject(new SvcError('aborted', 'the operation was aborted'));
      };
      const waiter: Waiter = {
        start: () => {
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
      const queue = this.#waiting.get(tenant);
      if (queue === undefined) this.#waiting.set(tenant, [waiter]);
      else queue.push(waiter);
      this.#next();
    });
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

/** The gate of this process's pool: training's share is `trainingWorkers()` (all workers but one). */
export const trainingGate = new TrainingGate(trainingWorkers);

/** Options of {@link runTrainingTask}. */
export interface TrainingTaskOptions {
  /** The organization whose turn the task takes; left out: straight to the pool. */
  tenant?: string;
  /** Passed to `runTask` (aborting a running task ends its worker), and stops the wait for the turn. */
  signal?: AbortSignal;
  /** Stops only the wait for the turn: for tasks that stop by their own means (a stop flag) or are left to finish. */
  waitSignal?: AbortSignal;
  transferList?: MessagePort[];
}

/**
 * `runTask` for a training task: with a `tenant` (the service's jobs), it waits for that organization's turn in
 * {@link trainingGate}; without one, it goes straight to the pool.
 */
export function runTrainingTask<T>(task: PoolTask, options: TrainingTaskOptions = {}): Promise<T> {
  const { tenant, signal, transferList } = options;
  const run = () => runTask<T>(task, signal, transferList);
  return tenant === undefined ? run() : trainingGate.run(tenant, run, signal ?? options.waitSignal);
}
