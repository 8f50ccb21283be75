// Row shapes and mappers shared by both stores: PostgreSQL's schema keeps SQLite's column types (flags as
// 0/1 integers, times as Unix ms), so one mapper per table serves both.
import type {
  ApiKeyRecord,
  JobProgress,
  JobState,
  ModelRecord,
  ModelStatus,
  OrgLimits,
  Organization,
  Project,
  ProviderName,
  RequestLogRow,
  TrainingExample,
  TrainingJob,
} from './types.js';

export interface OrgRow { id: string; created_at: number; proxy_access: number }
export interface KeyRow { id: string; org_id: string; hash: string; prefix: string; created_at: number; revoked_at: number | null }
export interface ProjectRow { id: string; org_id: string; name: string; created_at: number; monthly_token_budget: number | null }
export interface LimitsRow { max_running_jobs: number | null; max_queued_jobs: number | null; requests_per_minute: number | null;
  org_requests_per_minute: number | null;
}
export interface ModelRow {
  id: string; org_id: string; base_model: string; task_type: string; label_text: string;
  status: string; error: string | null; created_at: number; updated_at: number;
}
export interface JobRow {
  model_id: string; state: string; attempts: number; options: string; created_at: number; updated_at: number;
  locked_by: string | null; locked_until: number | null;
}
export interface ExampleRow { text: string; label: number; label_text: string }
export interface LogRow {
  id: number; project_id: string; key_id: string; provider: string; model: string; stream: number;
  status: number; ttfb_ms: number | null; total_ms: number; tokens_in: number | null; tokens_out: number | null;
  error: string | null; request_body: string; response_body: string; created_at: number;
}

export const toOrg = (r: OrgRow): Organization => ({ id: r.id, createdAt: r.created_at, proxyAccess: r.proxy_access === 1 });
export const toKey = (r: KeyRow): ApiKeyRecord => ({
  id: r.id, orgId: r.org_id, hash: r.hash, prefix: r.prefix, createdAt: r.created_at, revokedAt: r.revoked_at,
});
export const toProject = (r: ProjectRow): Project => ({
  id: r.id, orgId: r.org_id, name: r.name, createdAt: r.created_at, monthlyTokenBudget: r.monthly_token_budget,
});
export const toLimits = (r: LimitsRow | undefined): OrgLimits => ({
  maxRunningJobs: r?.max_running_jobs ?? null, maxQueuedJobs: r?.max_queued_jobs ?? null,
  requestsPerMinute: r?.requests_per_minute ?? null, orgRequestsPerMinute: r?.org_requests_per_minute ?? null,
});
export const toModel = (r: ModelRow): ModelRecord => ({
  id: r.id, orgId: r.org_id, baseModel: r.base_model, taskType: r.task_type as ModelRecord['taskType'],
  labelText: r.label_text, status: r.status as ModelStatus, error: r.error, createdAt: r.created_at, updatedAt: r.updated_at,
});
export const toJob = (r: JobRow): TrainingJob => ({
  modelId: r.model_id, state: r.state as JobState, attempts: r.attempts,
  options: JSON.parse(r.options) as Record<string, unknown>, createdAt: r.created_at, updatedAt: r.updated_at,
  lockedBy: r.locked_by, lockedUntil: r.locked_until,
});
export const toLog = (r: LogRow): RequestLogRow => ({
  id: r.id, projectId: r.project_id, keyId: r.key_id, provider: r.provider as ProviderName, model: r.model,
  stream: r.stream === 1, status: r.status, ttfbMs: r.ttfb_ms, totalMs: r.total_ms, tokensIn: r.tokens_in,
  tokensOut: r.tokens_out, error: r.error, requestBody: r.request_body, responseBody: r.response_body, createdAt: r.created_at,
});

/** A job's `progress` column: JSON written by {@link toProgressColumn}, or null before its first progress. */
export const toJobProgress = (column: string | null): JobProgress | null =>
  column === null ? null : (JSON.parse(column) as JobProgress);
/** Only the four fields go in, whatever else the caller's object carries. */
export const toProgressColumn = (p: JobProgress): string =>
  JSON.stringify({ stage: p.stage, done: p.done, total: p.total, loss: p.loss });

export const toExample = (r: ExampleRow): TrainingExample => ({ text: r.text, label: r.label === 1, label_text: r.label_text });
