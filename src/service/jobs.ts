import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { debuglog } from 'node:util';

import { SvcError } from '../errors.js';
import type { JobLease, JobProgress, ModelRecord, Store, TrainingExample } from '../store/types.js';
import { isUnreachable } from '../store/unreachable.js';
import { publishTrainingJob, type TrainingJobEvent } from '../telemetry.js';
import type { TrainProgress } from '../train/train.js';
import * as is from '../is.js';
import { kDefaultOrgLimits } from './limits.js';
import type { ModelRuntime, ModelScorer } from './runtime.js';

const debug = debuglog('svc');

/** A job started this many times without finishing (the process died each time) is failed, not retried. */
export const kDefaultMaxAttempts = 3;
/** A job still running after this long is stopped and its model failed (a stuck worker must not keep it `training`). */
export const kDefaultJobTimeoutMs = 30 * 60 * 1000;
/**
 * How long a claim holds a job without a heartbeat: a replica that died leaves its job to the others this long
 * after its last heartbeat. The heartbeat renews it three times per lease, so one missed beat loses nothing.
 */
export const kDefaultLeaseMs = 30_000;
/**
 * A running job's progress goes to the store at most this often (ms), so `/progress` on any replica lags the holder's
 * by about this much while a fine-tuning job reports a step every few hundred milliseconds.
 */
export const kProgressWriteMs = 1_000;
/** How often a runner on a shared store looks for jobs that other replicas queued or left behind. */
export const kDefaultPollMs = 2_000;
/**
 * Jobs the library runtime runs at once per training worker (its `concurrentJobs`): 4 on 2 cores. They take turns
 * task by task in the training share (pool/background-gate.ts), so a small job of one organization runs beside
 * another's large one instead of after it; more at once would only hold their texts in memory while they wait.
 */
export const kJobsPerTrainingSlot = 4;

/**
 * What a training job scores and stores with its model before publishing it: its evaluation report
 * (`VersionEvaluations.atTraining`), from the job's stored options and a scorer of the new model.
 */
export type JobEvaluator = (modelId: string, options: Record<string, unknown>, score: ModelScorer) => Promise<unknown>;

/**
 * A stage some jobs run before training: it makes the examples and options training goes on with (a teacher's
 * labelling, service/teacher-stage.ts), or returns null when the job has none.
 */
export type JobPreparer = (
  job: { modelId: string; model: ModelRecord; examples: TrainingExample[]; options: Record<string, unknown> },
  hooks: { lease: JobLease; signal: AbortSignal; onProgress: (p: TrainProgress) => void },
) => Promise<{ examples: TrainingExample[]; options: Record<string, unknown> } | null>;

export interface JobRunnerOptions {
  maxAttempts?: number;
  /** Milliseconds one training run may take; default 30 minutes. */
  timeoutMs?: number;
  /** Milliseconds; the default clock is `Date.now`. */
  now?: () => number;
  /** Milliseconds a claim holds a job between heartbeats; default 30 s. */
  leaseMs?: number;
  /** Milliseconds between looks at a shared store's queue; default 2 s. */
  pollMs?: number;
  /** This runner's name in the jobs it holds; default `<host>:<pid>:<random>`. */
  holder?: string;
  /** Jobs running at once on this runner; default `runtime.concurrentJobs`, else `runtime.trainingSlots`. */
  concurrentJobs?: number;
}

interface RunningJob {
  /** The claim, named in every write about the job: refused once the job was claimed again. */
  lease: JobLease;
  controller: AbortController;
  progress: TrainProgress | null;
  /** The pending write of `progress` to the store, while one waits for its turn. */
  progressWrite: NodeJS.Timeout | undefined;
  /** `performance.now()` of the last write. */
  progressWrittenAt: number;
  done: Promise<void>;
  /**
   * Why the job was aborted: the model was deleted, the service is shutting down, the time limit, or the lease
   * was lost (another replica took the job after a heartbeat could not reach the store in time).
   */
  abortedFor: 'delete' | 'shutdown' | 'timeout' | 'lost' | null;
}

/**
 * Runs training jobs from the store's queue, in the store's fair order: organizations take turns, oldest job first
 * within one, none beyond its cap of running jobs (`maxRunningJobs`, 1 by default, on every replica together). Up to
 * `runtime.concurrentJobs` jobs run at once here (the library runtime's: 4 per training worker), which is what lets
 * organizations share the training worker: the pool runs at most `runtime.trainingSlots` of their tasks at once (the
 * pool's share for training), and the runtime hands those out round robin by organization, task by task
 * (pool/background-gate.ts), so a job of one organization never waits for another's whole job, only for the task
 * running. A runtime without `concurrentJobs` runs `trainingSlots` jobs at once, each holding its slot. The queue lives in
 * the store, so a job survives a crash: at start-up, jobs left `running` go
 * back to the queue in their original place and run again. A job always ends
 * with its model `trained` or `failed` (with the reason), never `training` forever.
 */
export class JobRunner {
  readonly #store: Store;
  readonly #runtime: ModelRuntime;
  readonly #maxAttempts: number;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #holder: string;
  readonly #evaluator: JobEvaluator | null;
  readonly #prepare: JobPreparer | null;
  readonly #concurrentJobs: number;
  #poll: NodeJS.Timeout | undefined;
  readonly #running = new Map<string, RunningJob>();
  #pumping: Promise<void> | null = null;
  #pumpAgain = false;
  #closed = false;
  #idleWaiters: (() => void)[] = [];

  constructor(
    store: Store,
    runtime: ModelRuntime,
    options: JobRunnerOptions = {},
    evaluator: JobEvaluator | null = null,
    prepare: JobPreparer | null = null,
  ) {
    this.#store = store;
    this.#evaluator = evaluator;
    this.#prepare = prepare;
    this.#runtime = runtime;
    this.#maxAttempts = options.maxAttempts ?? kDefaultMaxAttempts;
    this.#timeoutMs = options.timeoutMs ?? kDefaultJobTimeoutMs;
    this.#now = options.now ?? Date.now;
    this.#leaseMs = is.positiveInteger(options.leaseMs ?? kDefaultLeaseMs, 'options.leaseMs');
    this.#pollMs = is.positiveInteger(options.pollMs ?? kDefaultPollMs, 'options.pollMs');
    this.#holder = options.holder ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.#concurrentJobs = is.positiveInteger(
      options.concurrentJobs ?? runtime.concurrentJobs ?? runtime.trainingSlots,
      'options.concurrentJobs',
    );
  }

  /**
   * Requeues jobs a dead process left `running`, then starts working the queue. Returns how many were requeued.
   * Alone on its store, every running job is a dead process's; on a shared store only those whose lease ended
   * are (the others belong to live replicas), and the runner then looks at the queue every `pollMs`.
   */
  async start(): Promise<number> {
    const now = this.#now();
    const requeued = await this.#store.requeueInterruptedJobs(this.#store.shared ? now : Number.MAX_SAFE_INTEGER);
    if (requeued > 0) debug('requeued %d interrupted training job(s)', requeued);
    if (this.#store.shared && !this.#closed) this.#poll = setInterval(() => this.kick(), this.#pollMs).unref();
    this.kick();
    return requeued;
  }

  /** Looks at the queue again (call after enqueuing). */
  kick(): void {
    if (this.#closed) return;
    if (this.#pumping !== null) {
      this.#pumpAgain = true;
      return;
    }
    // A store that cannot be reached right now leaves the queue where it is: the next poll or kick looks again.
    this.#pumping = this.#pump()
      .catch((error: unknown) => debug('job queue not read: %s', messageOf(error)))
      .finally(() => {
        this.#pumping = null;
        if (this.#pumpAgain) {
          this.#pumpAgain = false;
          this.kick();
        } else {
          this.#notifyIfIdle();
        }
      });
  }

  /**
   * The latest progress of a job running here, else what the store holds: the last one written for a job another
   * replica runs, or for any job that ended (the final progress goes in before the job ends), or null.
   */
  async progress(modelId: string): Promise<JobProgress | null> {
    const local = this.#running.get(modelId)?.progress ?? null;
    return local === null ? this.#store.getJobProgress(modelId) : asJobProgress(local);
  }

  /** Stops a running job because its model is being deleted; resolves when it has stopped. */
  async cancel(modelId: string): Promise<void> {
    const job = this.#running.get(modelId);
    if (job === undefined) return;
    job.abortedFor ??= 'delete';
    job.controller.abort(new Error('the model was deleted'));
    await job.done;
  }

  /** Resolves when nothing is running and nothing is queued that this runner could start. */
  idle(): Promise<void> {
    if (this.#running.size === 0 && this.#pumping === null) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Stops claiming jobs and aborts running ones, putting them back in the
   * queue so that the next start runs them again.
   */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#poll);
    for (const job of this.#running.values()) {
      job.abortedFor ??= 'shutdown';
      job.controller.abort(new Error('the service is shutting down'));
    }
    await this.#pumping;
    await Promise.all([...this.#running.values()].map((job) => job.done));
  }

  async #pump(): Promise<void> {
    while (!this.#closed && this.#running.size < this.#concurrentJobs) {
      const job = await this.#store.claimNextJob(this.#now(), {
        maxRunningJobs: kDefaultOrgLimits.maxRunningJobs,
        holder: this.#holder,
        leaseMs: this.#leaseMs,
      });
      if (job === null) return;
      const entry: RunningJob = {
        lease: { holder: this.#holder, token: job.leaseToken },
        controller: new AbortController(),
        progress: null,
        progressWrite: undefined,
        progressWrittenAt: -Infinity,
        done: Promise.resolve(),
        abortedFor: null,
      };
      this.#running.set(job.modelId, entry);
      // A job whose end could not be written (the store went away) stays claimed until its lease lapses, then runs again.
      entry.done = this.#run(job.modelId, job.attempts, job.options, entry)
        .catch((error: unknown) => {
          debug('the end of %s was not recorded: %s', job.modelId, messageOf(error));
        })
        .finally(() => {
          this.#running.delete(job.modelId);
          this.kick();
        });
    }
  }

  async #run(modelId: string, attempts: number, jobOptions: Record<string, unknown>, entry: RunningJob): Promise<void> {
    const model = await this.#store.getModel(modelId);
    if (model === null) return; // deleted between claim and start; its job row went with it
    if (attempts > this.#maxAttempts) {
      await this.#fail(modelId, entry, `training was interrupted ${attempts - 1} times (the service stopped while it ran)`);
      return;
    }
    debug('training %s (attempt %d)', modelId, attempts);
    const started = performance.now();
    const ended = (outcome: TrainingJobEvent['outcome']): void =>
      publishTrainingJob({ outcome, seconds: (performance.now() - started) / 1000 });
    const timer = setTimeout(() => {
      entry.abortedFor ??= 'timeout';
      entry.controller.abort(new Error('training timed out'));
    }, this.#timeoutMs);
    const heartbeat = setInterval(() => void this.#heartbeat(modelId, entry), Math.max(1, Math.floor(this.#leaseMs / 3)));
    try {
      const stored = await this.#store.getJobExamples(modelId);
      const onProgress = (p: TrainProgress) => this.#noteProgress(modelId, entry, p);
      const prepared =
        this.#prepare === null
          ? null
          : await this.#prepare(
              { modelId, model, examples: stored, options: jobOptions },
              { lease: entry.lease, signal: entry.controller.signal, onProgress },
            );
      const examples = prepared?.examples ?? stored;
      const options = prepared?.options ?? jobOptions;
      await this.#runtime.train(
        { orgId: model.orgId, modelId, baseModel: model.baseModel, taskType: model.taskType, examples, options },
        {
          signal: entry.controller.signal,
          onProgress,
          fence: () => this.#fence(modelId, entry),
          // The report is part of the job: scored on training's share of the pool, before the fence.
          ...(this.#evaluator === null ? {} : { evaluate: (score: ModelScorer) => this.#evaluator!(modelId, options, score) }),
        },
      );
      if (entry.abortedFor === 'shutdown') {
        await this.#store.releaseJob(modelId, entry.lease, this.#now());
        ended('released');
        return;
      }
      if (entry.abortedFor === 'lost') {
        ended('cancelled');
        return;
      }
      // From the fence to the job's end as few round trips as may be: the lease the fence renewed must outlast them.
      // The final progress goes in before the job ends: afterwards the job is no longer this runner's to write.
      clearTimeout(entry.progressWrite);
      if (entry.progress !== null) {
        entry.progress = { ...entry.progress, done: entry.progress.total };
        await this.#writeProgress(modelId, entry, entry.progress);
      }
      if (!(await this.#store.finishJob(modelId, entry.lease, this.#now(), null))) {
        // Deleted while the last step ran: do not leave its files behind. Else another claim took the job over (this
        // runner stalled past its lease after the fence): that one's result counts.
        if ((await this.#store.getModel(modelId)) === null) await this.#runtime.remove(model.orgId, modelId);
        ended('cancelled');
        return;
      }
      ended('done');
      debug('trained %s', modelId);
    } catch (error) {
      if (entry.abortedFor === 'shutdown') {
        await this.#store.releaseJob(modelId, entry.lease, this.#now());
        ended('released');
        return;
      }
      // The job's new holder writes the same model directory: leave it alone.
      if (entry.abortedFor === 'lost') return ended('cancelled');
      if (isUnreachable(error)) {
        // The store went away under the job: that says nothing about the model. Back to the queue (or, if even that
        // cannot be written, the lapsed lease puts it back), and it runs again once the store is back.
        debug('training %s stopped, the store is unreachable: %s', modelId, messageOf(error));
        await this.#store.releaseJob(modelId, entry.lease, this.#now());
        return ended('released');
      }
      await this.#runtime.remove(model.orgId, modelId).catch(() => {});
      if (entry.abortedFor === 'delete') return ended('cancelled');
      ended('failed');
      if (entry.abortedFor === 'timeout') {
        await this.#fail(modelId, entry, `training took longer than ${this.#timeoutMs / 1000} seconds and was stopped`);
        return;
      }
      await this.#fail(modelId, entry, error instanceof Error ? error.message : String(error));
    } finally {
      clearTimeout(timer);
      clearInterval(heartbeat);
      clearTimeout(entry.progressWrite);
    }
  }

  /**
   * Keeps a job's newest progress and writes it to the store at most once per {@link kProgressWriteMs}: the first
   * event at once, later ones in one write when the interval has passed (always the newest then).
   */
  #noteProgress(modelId: string, entry: RunningJob, progress: TrainProgress): void {
    entry.progress = progress;
    if (entry.progressWrite !== undefined) return;
    const wait = Math.max(0, entry.progressWrittenAt + kProgressWriteMs - performance.now());
    entry.progressWrite = setTimeout(() => {
      entry.progressWrite = undefined;
      entry.progressWrittenAt = performance.now();
      if (entry.progress !== null && !entry.controller.signal.aborted) void this.#writeProgress(modelId, entry, entry.progress);
    }, wait);
  }

  /** Progress is for watching: a store that cannot take it now loses that one write, never the job. */
  async #writeProgress(modelId: string, entry: RunningJob, progress: TrainProgress): Promise<void> {
    try {
      await this.#store.recordJobProgress(modelId, entry.lease, asJobProgress(progress));
    } catch (error) {
      debug('progress of %s not recorded: %s', modelId, error instanceof Error ? error.message : String(error));
    }
  }

  /**
   * Renews the job's lease. When the job is no longer this runner's, it stops: the model was deleted (on any
   * replica), or the lease ran out and another replica runs the job now, so this one must not write its result.
   * A store that cannot be reached is retried at the next beat; the lease covers three.
   */
  async #heartbeat(modelId: string, entry: RunningJob): Promise<void> {
    if (entry.controller.signal.aborted) return;
    try {
      if (await this.#store.renewLease(modelId, entry.lease, this.#now() + this.#leaseMs)) return;
      await this.#lose(modelId, entry);
    } catch (error) {
      debug('heartbeat of %s failed: %s', modelId, error instanceof Error ? error.message : String(error));
    }
  }

  /**
   * The fence before the model is published, called by the runtime once the model is ready and before any of it is
   * written: a heartbeat now, so that the publish and the job's end have a whole lease ahead of them. A runner whose
   * lease lapsed and whose job was claimed again (a heartbeat that came too late on a loaded machine) is refused
   * here, stops, and writes no model: the job's new holder writes it, once.
   */
  async #fence(modelId: string, entry: RunningJob): Promise<void> {
    if (await this.#store.renewLease(modelId, entry.lease, this.#now() + this.#leaseMs)) return;
    await this.#lose(modelId, entry);
    throw new SvcError('aborted', `the job of ${modelId} is no longer this runner's; its model is not published here`);
  }

  /** Stops a job that is no longer this runner's: its model was deleted, or another claim took the job over. */
  async #lose(modelId: string, entry: RunningJob): Promise<void> {
    const deleted = (await this.#store.getModel(modelId)) === null;
    if (entry.controller.signal.aborted) return;
    entry.abortedFor ??= deleted ? 'delete' : 'lost';
    entry.controller.abort(new Error(deleted ? 'the model was deleted' : 'another replica took the job over'));
  }

  async #fail(modelId: string, entry: RunningJob, reason: string): Promise<void> {
    debug('training %s failed: %s', modelId, reason);
    await this.#store.finishJob(modelId, entry.lease, this.#now(), reason);
  }

  #notifyIfIdle(): void {
    if (this.#running.size > 0 || this.#pumping !== null) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

function asJobProgress(progress: TrainProgress): JobProgress {
  return { stage: progress.stage, done: progress.done, total: progress.total, loss: progress.loss ?? null };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
