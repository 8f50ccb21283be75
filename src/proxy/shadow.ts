// The shadow classifier's runner (issue #42): after a proxied call's log row is written, a project that named a
// classifier for the call's model gets that classifier's answer on the call's text, compared with the chat model's.
// All of it happens off the request path: the request log hands rows over after the response went out
// (request-log.ts), `offer` only looks in a cache and queues, and a full queue drops the job (counted), never the call.
import { performance } from 'node:perf_hooks';
import { debuglog } from 'node:util';

import type { PredictResponse } from '../contract/schemas.js';
import type { SvcService } from '../service/service.js';
import type { ShadowLabel, ShadowResult, ShadowSetting } from '../store/shadow-types.js';
import type { ModelRecord, RequestLogRow } from '../store/types.js';
import { callText, type LabelRule, labelReader, replyText } from '../teacher/logged-calls.js';
import type { TeacherTask } from '../teacher/protocol.js';
import { publishShadowJob, type ShadowJobEvent } from '../telemetry.js';

const debug = debuglog('svc');

/** Calls waiting for their shadow job at most; past it new ones are dropped (`svc_shadow_jobs_total{outcome="dropped"}`). */
export const kMaxShadowQueue = 1000;
/** Body bytes the waiting calls hold at most: a call's bodies wait with it, and a proxied body may be 16 MiB. */
export const kMaxShadowQueueBytes = 64 * 1024 * 1024;
/** Shadow jobs running at once: each waits for a predict, which takes the organization's turn in the batcher. */
export const kShadowConcurrency = 4;
/** How long a project's settings are believed before they are read again (another replica may have changed them). */
export const kShadowSettingsTtlMs = 5_000;

interface ProjectShadows {
  at: number;
  orgId: string | null;
  byModel: ReadonlyMap<string, ShadowSetting>;
}

/** What the runner has done since it started (the metrics count the same outcomes). */
export interface ShadowCounts {
  recorded: number;
  error: number;
  dropped: number;
  failed: number;
}

/**
 * The task a classifier's record stands for, as `callLabel` reads a reply for it.
 *
 * @example
 * ```ts
 * taskOfModel({ taskType: 'binary-classification', labelText: 'billing question', ... }); // { taskType: 'binary-classification', labels: ['billing question'] }
 * ```
 */
export function taskOfModel(model: Pick<ModelRecord, 'taskType' | 'labelText'>): TeacherTask {
  const labels = model.taskType === 'binary-classification' ? [model.labelText] : (JSON.parse(model.labelText) as string[]);
  return { taskType: model.taskType, labels };
}

/**
 * The label a predict answer gives its one text: binary boolean, multi-class the class, multi-label the labels.
 *
 * @example
 * ```ts
 * predictedLabel({ model: 'svc-small-…', label_text: 'billing', predictions: [{ label: true, probability: 0.9 }] }); // true
 * ```
 */
export function predictedLabel(answer: PredictResponse): ShadowLabel {
  const prediction = answer.predictions[0];
  return 'labels' in prediction ? prediction.labels : prediction.label;
}

/**
 * Whether two labels are the same answer: equal values, a multi-label set in any order.
 *
 * @example
 * ```ts
 * sameLabel(['a', 'b'], ['b', 'a']); // true
 * sameLabel(true, false);            // false
 * ```
 */
export function sameLabel(a: ShadowLabel, b: ShadowLabel): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return false;
    const set = new Set(a);
    return set.size === new Set(b).size && b.every((label) => set.has(label));
  }
  return a === b;
}

/**
 * Runs each project's shadow classifier on its proxied calls, in the background, and stores what it found.
 *
 * @example
 * ```ts
 * const shadows = new ShadowRunner(service);
 * const log = new RequestLogQueue(store, limits, (row) => shadows.offer(row));
 * // a call of 'provider-a:gpt-4o-mini' in a project with a shadow -> a shadow_results row, agreed true/false/null
 * ```
 */
export class ShadowRunner {
  readonly #service: SvcService;
  readonly #settings = new Map<string, ProjectShadows>();
  readonly #loading = new Map<string, Promise<ProjectShadows>>();
  #queue: RequestLogRow[] = [];
  #queuedBytes = 0;
  #running = 0;
  #idle: (() => void)[] = [];
  readonly counts: ShadowCounts = { recorded: 0, error: 0, dropped: 0, failed: 0 };

  constructor(service: SvcService) {
    this.#service = service;
  }

  /**
   * A written log row, its bodies as the call had them. Synchronous and small: a project known to have no shadow for
   * the row's model costs a map lookup; anything else waits in the bounded queue.
   */
  offer(row: RequestLogRow): void {
    try {
      // Only answered calls have a reply to compare with.
      if (row.status < 200 || row.status >= 300 || row.error !== null) return;
      const known = this.#settings.get(row.projectId);
      if (known !== undefined && Date.now() - known.at < kShadowSettingsTtlMs && !known.byModel.has(row.model)) return;
      const bytes = row.requestBody.length + row.responseBody.length;
      if (this.#queue.length >= kMaxShadowQueue || this.#queuedBytes + bytes > kMaxShadowQueueBytes) {
        this.#count('dropped');
        return;
      }
      this.#queue.push(row);
      this.#queuedBytes += bytes;
      this.#pump();
    } catch (error) {
      this.#fail(error);
    }
  }

  /** Forgets a project's settings, so that its next call reads them again (the settings routes call it on a change). */
  forget(projectId: string): void {
    this.#settings.delete(projectId);
    this.#loading.delete(projectId);
  }

  /** Resolves when every call offered so far has had its job (or has been dropped). */
  async drain(): Promise<void> {
    while (this.#running > 0 || this.#queue.length > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  #pump(): void {
    while (this.#running < kShadowConcurrency && this.#queue.length > 0) {
      const row = this.#queue.shift()!;
      this.#queuedBytes -= row.requestBody.length + row.responseBody.length;
      this.#running += 1;
      void this.#run(row).finally(() => {
        this.#running -= 1;
        this.#pump();
        if (this.#running === 0 && this.#queue.length === 0) for (const resolve of this.#idle.splice(0)) resolve();
      });
    }
  }

  async #run(row: RequestLogRow): Promise<void> {
    try {
      const project = await this.#projectShadows(row.projectId);
      const setting = project.byModel.get(row.model);
      if (setting === undefined || project.orgId === null) return;
      const result = await this.#compare(row, setting, project.orgId);
      await this.#service.store.shadows.insertResult(result);
      this.#count(result.error === null ? 'recorded' : 'error');
      if (result.error !== null) debug('shadow classifier %s: %s', setting.classifierId, result.error);
    } catch (error) {
      this.#fail(error);
    }
  }

  async #compare(row: RequestLogRow, setting: ShadowSetting, orgId: string): Promise<Omit<ShadowResult, 'id'>> {
    const base = {
      projectId: row.projectId,
      requestId: row.id,
      model: row.model,
      classifierId: setting.classifierId,
      tokensIn: row.tokensIn,
      tokensOut: row.tokensOut,
      chatMs: row.totalMs,
      createdAt: row.createdAt,
    };
    const unanswered = (chatLabel: ShadowLabel | null, error: string) => ({
      ...base,
      chatLabel,
      classifierLabel: null,
      agreed: null,
      classifierMs: null,
      error,
    });
    const model = await this.#service.store.getModel(setting.classifierId);
    // Another organization's classifier reads as a missing one, as predict would say.
    if (model === null || model.orgId !== orgId) return unanswered(null, `The model '${setting.classifierId}' does not exist`);
    const chatLabel = this.#chatLabel(row, setting, taskOfModel(model));
    const text = callText(row.requestBody, setting.textPointer ?? undefined);
    if (text === null) return unanswered(chatLabel, "the call's text could not be read");
    const started = performance.now();
    let answer: PredictResponse;
    try {
      answer = await this.#service.predict({ orgId, keyId: row.keyId }, { model: setting.classifierId, inputs: [text] });
    } catch (error) {
      return unanswered(chatLabel, error instanceof Error ? error.message : String(error));
    }
    const classifierMs = Math.round((performance.now() - started) * 1000) / 1000;
    const classifierLabel = predictedLabel(answer);
    const agreed = chatLabel === null ? null : sameLabel(chatLabel, classifierLabel);
    return { ...base, chatLabel, classifierLabel, agreed, classifierMs, error: null };
  }

  /** The chat model's label under the setting's rule; null when its reply cannot be read (or the rule no longer fits the task). */
  #chatLabel(row: RequestLogRow, setting: ShadowSetting, task: TeacherTask): ShadowLabel | null {
    const reply = replyText(row.provider, row.responseBody);
    if (reply === null) return null;
    try {
      return labelReader(setting.labelRule as LabelRule, task)(reply);
    } catch {
      return null;
    }
  }

  async #projectShadows(projectId: string): Promise<ProjectShadows> {
    const known = this.#settings.get(projectId);
    if (known !== undefined && Date.now() - known.at < kShadowSettingsTtlMs) return known;
    let loading = this.#loading.get(projectId);
    if (loading === undefined) {
      const store = this.#service.store;
      loading = Promise.all([store.getProject(projectId), store.shadows.list(projectId)])
        .then(([project, list]) => {
          const loaded = { at: Date.now(), orgId: project?.orgId ?? null, byModel: new Map(list.map((s) => [s.model, s])) };
          // A change made while this read was under way (forget) wins: the next call reads again.
          if (this.#loading.get(projectId) === loading) this.#settings.set(projectId, loaded);
          return loaded;
        })
        .finally(() => this.#loading.delete(projectId));
      this.#loading.set(projectId, loading);
    }
    return loading;
  }

  #count(outcome: ShadowJobEvent['outcome']): void {
    this.counts[outcome] += 1;
    publishShadowJob({ outcome });
  }

  #fail(error: unknown): void {
    this.#count('failed');
    debug('shadow job failed: %s', error instanceof Error ? error.message : String(error));
  }
}
