// A project's shadow classifiers as the HTTP routes (server/shadow-routes.ts) and the CLI see them: set one for a
// proxied model, list, remove, and read what the compared calls add up to. The checks are the service's own: the
// project and the classifier are the caller's organization's (404 alike otherwise), and setting one needs the
// organization's proxy access (403), as the proxied calls it shadows do.
import {
  kShadowWindows,
  type ShadowList,
  type ShadowObject,
  shadowDeleteQuerySchema,
  shadowSettingsRequestSchema,
  shadowStatsQuerySchema,
  type ShadowStatsObject,
} from '../contract/shadow.js';
import { SvcError } from '../errors.js';
import { parseRequest } from '../parse.js';
import type { Principal, SvcService } from '../service/service.js';
import type { ShadowSetting } from '../store/shadow-types.js';
import { labelReader, type LabelRule } from '../teacher/logged-calls.js';
import { pointerTokens } from '../teacher/json-pointer.js';
import { taskOfModel } from './shadow.js';

const kHourMs = 3_600_000;
const kWindowMs: Readonly<Record<keyof typeof kShadowWindows, number>> = Object.freeze({
  '1h': kHourMs,
  '24h': 24 * kHourMs,
  '7d': 7 * 24 * kHourMs,
  '30d': 30 * 24 * kHourMs,
});

const seconds = (ms: number) => Math.floor(ms / 1000);
const ratio = (agreed: number, compared: number) => (compared === 0 ? null : agreed / compared);

function toShadowObject(s: ShadowSetting): ShadowObject {
  return {
    object: 'shadow',
    project_id: s.projectId,
    model: s.model,
    classifier: s.classifierId,
    text_pointer: s.textPointer,
    label: s.labelRule as ShadowObject['label'],
    created_at: seconds(s.createdAt),
    updated_at: seconds(s.updatedAt),
  };
}

/**
 * The shadow settings of the caller's projects. `changed` hears of each change (the runner forgets its cache).
 *
 * @example
 * ```ts
 * const settings = new ShadowSettings(service, (projectId) => runner.forget(projectId));
 * await settings.put(principal, 'proj_0123456789ab', {
 *   model: 'provider-a:gpt-4o-mini', classifier: 'svc-small-5b8257b3efa7', label: { words: { true: ['yes'], false: ['no'] } },
 * }); // { object: 'shadow', project_id: 'proj_0123456789ab', model: 'provider-a:gpt-4o-mini', ... }
 * ```
 */
export class ShadowSettings {
  readonly #service: SvcService;
  readonly #changed: (projectId: string) => void;

  constructor(service: SvcService, changed: (projectId: string) => void = () => {}) {
    this.#service = service;
    this.#changed = changed;
  }

  /** `PUT /v2/{project_id}/shadow`: sets (or replaces) the project's shadow for the body's model. */
  async put(principal: Principal, projectId: string, body: unknown, now: number = Date.now()): Promise<ShadowObject> {
    await this.#service.ownProject(principal, projectId);
    const request = parseRequest(shadowSettingsRequestSchema, body);
    if (!(await this.#service.hasProxyAccess(principal.orgId))) {
      throw new SvcError('permission', `The organization '${principal.orgId}' has no proxy access; request access from the operator`);
    }
    const model = await this.#service.store.getModel(request.classifier);
    if (model === null || model.orgId !== principal.orgId) {
      throw new SvcError('not_found', `The model '${request.classifier}' does not exist`, { param: 'classifier' });
    }
    // A rule or pointer that cannot work is the request's mistake, said now rather than on every call.
    labelReader(request.label as LabelRule, taskOfModel(model), 'label');
    if (request.text_pointer !== undefined) pointerTokens(request.text_pointer, 'text_pointer');
    const existing = (await this.#service.store.shadows.list(projectId)).find((s) => s.model === request.model);
    const setting: ShadowSetting = {
      projectId,
      model: request.model,
      classifierId: request.classifier,
      textPointer: request.text_pointer ?? null,
      labelRule: request.label as Record<string, unknown>,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    await this.#service.store.shadows.put(setting);
    this.#changed(projectId);
    return toShadowObject(setting);
  }

  /** `GET /v2/{project_id}/shadow`: the project's shadows, by model. */
  async list(principal: Principal, projectId: string): Promise<ShadowList> {
    await this.#service.ownProject(principal, projectId);
    return { object: 'list', data: (await this.#service.store.shadows.list(projectId)).map(toShadowObject) };
  }

  /** `DELETE /v2/{project_id}/shadow?model=...`: 404 when the project has no shadow for that model. */
  async remove(principal: Principal, projectId: string, query: unknown): Promise<{ object: 'shadow'; model: string; deleted: true }> {
    await this.#service.ownProject(principal, projectId);
    const { model } = parseRequest(shadowDeleteQuerySchema, query);
    if (!(await this.#service.store.shadows.remove(projectId, model))) {
      throw new SvcError('not_found', `The project '${projectId}' has no shadow classifier for '${model}'`, { param: 'model' });
    }
    this.#changed(projectId);
    return { object: 'shadow', model, deleted: true };
  }

  /** `GET /v2/{project_id}/shadow/stats?window=7d[&model=...]`: agreement by hour or day, latency and what it would save. */
  async stats(principal: Principal, projectId: string, query: unknown, now: number = Date.now()): Promise<ShadowStatsObject> {
    await this.#service.ownProject(principal, projectId);
    const { window, model } = parseRequest(shadowStatsQuerySchema, query);
    const bucket = kShadowWindows[window];
    const bucketMs = bucket === 'hour' ? kHourMs : 24 * kHourMs;
    const since = now - kWindowMs[window];
    const stats = await this.#service.store.shadows.stats(projectId, { since, bucketMs, ...(model === undefined ? {} : { model }) });
    return {
      object: 'shadow_stats',
      project_id: projectId,
      window,
      bucket,
      since: seconds(since),
      calls: stats.calls,
      compared: stats.compared,
      agreed: stats.agreed,
      agreement: ratio(stats.agreed, stats.compared),
      errors: stats.errors,
      classifier_p50_ms: stats.classifierP50Ms,
      saved: {
        calls: stats.calls - stats.errors,
        tokens_in: stats.savedTokensIn,
        tokens_out: stats.savedTokensOut,
        chat_ms: stats.savedChatMs,
        classifier_ms: stats.classifierMs,
      },
      buckets: stats.buckets.map((b) => ({
        start: seconds(b.start),
        calls: b.calls,
        compared: b.compared,
        agreed: b.agreed,
        agreement: ratio(b.agreed, b.compared),
      })),
    };
  }
}
