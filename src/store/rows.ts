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
  RequestLogPage,
  RequestLogRange,
  RequestLogRow,
  TrainingExample,
  TrainingJob,
  VersionRecord,
} from './types.js';

export interface OrgRow {
  id: string;
  created_at: number;
  proxy_access: number;
}
export interface KeyRow {
  id: string;
  org_id: string;
  hash: string;
  prefix: string;
  created_at: number;
  revoked_at: number | null;
}
export interface ProjectRow {
  id: string;
  org_id: string;
  name: string;
  created_at: number;
  monthly_token_budget: number | null;
}
export interface LimitsRow {
  max_running_jobs: number | null;
  max_queued_jobs: number | null;
  requests_per_minute: number | null;
  org_requests_per_minute: number | null;
  max_models: number | null;
  max_versions: number | null;
  max_storage_mb: number | null;
}
export interface ModelRow {
  id: string;
  org_id: string;
  base_model: string;
  task_type: string;
  label_text: string;
  status: string;
  error: string | null;
  created_at: number;
  updated_at: number;
}
export interface JobRow {
  model_id: string;
  state: string;
  attempts: number;
  options: string;
  created_at: number;
  updated_at: number;
  locked_by: string | null;
  locked_until: number | null;
  lease_token: number;
}
export interface ExampleRow {
  text: string;
  label: number;
  label_text: string;
}
export interface LogRow {
  id: number;
  project_id: string;
  key_id: string;
  provider: string;
  model: string;
  stream: number;
  status: number;
  ttfb_ms: number | null;
  total_ms: number;
  tokens_in: number | null;
  tokens_out: number | null;
  error: string | null;
  request_body: string;
  response_body: string;
  created_at: number;
}

export const toOrg = (r: OrgRow): Organization => ({ id: r.id, createdAt: r.created_at, proxyAccess: r.proxy_access === 1 });
export const toKey = (r: KeyRow): ApiKeyRecord => ({
  id: r.id,
  orgId: r.org_id,
  hash: r.hash,
  prefix: r.prefix,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});
export const toProject = (r: ProjectRow): Project => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  createdAt: r.created_at,
  monthlyTokenBudget: r.monthly_token_budget,
});
export const toLimits = (r: LimitsRow | undefined): OrgLimits => ({
  maxRunningJobs: r?.max_running_jobs ?? null,
  maxQueuedJobs: r?.max_queued_jobs ?? null,
  requestsPerMinute: r?.requests_per_minute ?? null,
  orgRequestsPerMinute: r?.org_requests_per_minute ?? null,
  maxModels: r?.max_models ?? null,
  maxVersionsPerModel: r?.max_versions ?? null,
  maxStorageMb: r?.max_storage_mb ?? null,
});

/** The `org_limits` columns in the order {@link limitsParams} gives their values, for both stores' statements. */
export const kLimitsColumns =
  'max_running_jobs, max_queued_jobs, requests_per_minute, org_requests_per_minute, max_models, max_versions, max_storage_mb';
/** An organization's limits as the parameters of an `org_limits` row after its id, in {@link kLimitsColumns}' order. */
export const limitsParams = (l: OrgLimits): (number | null)[] => [
  l.maxRunningJobs,
  l.maxQueuedJobs,
  l.requestsPerMinute,
  l.orgRequestsPerMinute,
  l.maxModels,
  l.maxVersionsPerModel,
  l.maxStorageMb,
];
/** Upserts an organization's whole `org_limits` row; `placeholder(i)` writes the dialect's i-th parameter (from 1). */
export const putLimitsSql = (placeholder: (i: number) => string): string => {
  const columns = kLimitsColumns.split(', ');
  const values = ['org_id', ...columns].map((_, i) => placeholder(i + 1)).join(', ');
  return `INSERT INTO org_limits (org_id, ${kLimitsColumns}) VALUES (${values})
    ON CONFLICT (org_id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(', ')}`;
};
export const toModel = (r: ModelRow): ModelRecord => ({
  id: r.id,
  orgId: r.org_id,
  baseModel: r.base_model,
  taskType: r.task_type as ModelRecord['taskType'],
  labelText: r.label_text,
  status: r.status as ModelStatus,
  error: r.error,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
/** A model row with its place among its classifier's versions (see `ModelVersions`). */
export interface VersionRow extends ModelRow {
  classifier_id: string | null;
  version: number;
  live_version: number;
}
export const toVersion = (r: VersionRow): VersionRecord => ({
  ...toModel(r),
  classifierId: r.classifier_id ?? r.id,
  version: r.version,
  live: r.version === r.live_version,
});

/**
 * The statements of `ModelVersions`, the same for both stores (`p` names each parameter in the store's dialect). A
 * classifier's own row is its version 1; `live_version` is read from that row whichever version a row holds.
 */
export const versionSql = (p: { classifier: string; version: string; key: string }) => ({
  /** The classifier's row, locked (PostgreSQL appends FOR UPDATE) before any change to its versions. */
  classifier: `SELECT * FROM models WHERE id = ${p.classifier} AND classifier_id IS NULL`,
  nextVersion: `SELECT last_version + 1 AS n FROM models WHERE id = ${p.classifier}`,
  setLast: `UPDATE models SET last_version = ${p.version} WHERE id = ${p.classifier}`,
  list: `SELECT m.id, m.org_id, m.base_model, m.task_type, m.label_text, m.status, m.error, m.created_at, m.updated_at,
      m.classifier_id, m.version, c.live_version
    FROM models m JOIN models c ON c.id = ${p.classifier} AND c.classifier_id IS NULL
    WHERE m.id = c.id OR m.classifier_id = c.id ORDER BY m.version`,
  /** The organization's classifiers, each as its live version, in the order classifiers are listed. */
  listLive: `SELECT m.id, m.org_id, m.base_model, m.task_type, m.label_text, m.status, m.error, m.created_at, m.updated_at,
      m.classifier_id, m.version, c.live_version
    FROM models c JOIN models m ON (m.id = c.id AND c.live_version = 1) OR (m.classifier_id = c.id AND m.version = c.live_version)
    WHERE c.org_id = ${p.classifier} AND c.classifier_id IS NULL ORDER BY c.created_at, c.id`,
  setLive: `UPDATE models SET live_version = ${p.version} WHERE id = ${p.classifier}`,
  remove: `DELETE FROM models WHERE classifier_id = ${p.classifier} AND version = ${p.version}`,
  setVersion: `UPDATE models SET classifier_id = ${p.classifier}, version = ${p.version} WHERE id = ${p.key}`,
});

export const toJob = (r: JobRow): TrainingJob => ({
  modelId: r.model_id,
  state: r.state as JobState,
  attempts: r.attempts,
  options: JSON.parse(r.options) as Record<string, unknown>,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  lockedBy: r.locked_by,
  lockedUntil: r.locked_until,
  leaseToken: r.lease_token,
});
export const toLog = (r: LogRow): RequestLogRow => ({
  id: r.id,
  projectId: r.project_id,
  keyId: r.key_id,
  provider: r.provider as ProviderName,
  model: r.model,
  stream: r.stream === 1,
  status: r.status,
  ttfbMs: r.ttfb_ms,
  totalMs: r.total_ms,
  tokensIn: r.tokens_in,
  tokensOut: r.tokens_out,
  error: r.error,
  requestBody: r.request_body,
  responseBody: r.response_body,
  createdAt: r.created_at,
});

/** A row of {@link logPageSql}: `page_rows` is how many rows the page had before its bound of bytes read. */
export interface LogPreviewRow extends LogRow {
  request_body_bytes: number;
  response_body_bytes: number;
  page_rows: number;
}

/**
 * A page of the request log in one statement, the same for both stores (`p` names each parameter in the store's
 * dialect): up to `limit` rows before `before`, newest first, measured by `octet_length` (which reads a row's header,
 * not its bodies), then only the rows whose newer rows' bodies total under `maxBytes` read, each body's first `chars`
 * characters. The filter comes before the join on purpose: SQLite reaches `created_at` past a row's bodies by walking
 * their overflow pages, which for 500 rows of 64 KiB bodies took longer than reading the bodies it keeps.
 */
export const logPageSql = (p: { project: string; before: string; limit: string; maxBytes: string; chars: string }): string => `
  WITH page AS (
    SELECT id, octet_length(request_body) AS request_body_bytes, octet_length(response_body) AS response_body_bytes
    FROM request_log WHERE project_id = ${p.project} AND id < ${p.before} ORDER BY id DESC LIMIT ${p.limit}),
  ahead AS (
    SELECT id, request_body_bytes, response_body_bytes, COALESCE(SUM(request_body_bytes + response_body_bytes)
      OVER (ORDER BY id DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS ahead_bytes
    FROM page)
  SELECT r.id, r.project_id, r.key_id, r.provider, r.model, r.stream, r.status, r.ttfb_ms, r.total_ms, r.tokens_in,
    r.tokens_out, r.error, r.created_at, a.request_body_bytes, a.response_body_bytes,
    substr(r.request_body, 1, ${p.chars}) AS request_body, substr(r.response_body, 1, ${p.chars}) AS response_body,
    (SELECT COUNT(*) FROM page) AS page_rows
  FROM ahead a JOIN request_log r ON r.id = a.id
  WHERE a.ahead_bytes < ${p.maxBytes}
  ORDER BY r.id DESC`;

/** The rows of {@link logPageSql}, asked for `limit + 1`, as a page: more follow when it was cut or passed `limit`. */
export function toLogPage(rows: LogPreviewRow[], limit: number): RequestLogPage {
  const kept = rows.slice(0, limit);
  return {
    rows: kept.map((r) => ({ ...toLog(r), requestBodyBytes: r.request_body_bytes, responseBodyBytes: r.response_body_bytes })),
    more: rows.length > 0 && Number(rows[0].page_rows) > kept.length,
  };
}

/** The parameters of a request-log range read, both stores alike: an unset bound is the widest one. */
export const logRangeParams = (projectId: string, r: RequestLogRange) => ({
  project: projectId,
  afterId: r.afterId ?? 0,
  since: r.since ?? Number.MIN_SAFE_INTEGER,
  until: r.until ?? Number.MAX_SAFE_INTEGER,
  model: r.model ?? null,
  limit: r.limit,
});

/** A job's `progress` column: JSON written by {@link toProgressColumn}, or null before its first progress. */
export const toJobProgress = (column: string | null): JobProgress | null => (column === null ? null : (JSON.parse(column) as JobProgress));
/** Only the four fields go in, whatever else the caller's object carries. */
export const toProgressColumn = (p: JobProgress): string => JSON.stringify({ stage: p.stage, done: p.done, total: p.total, loss: p.loss });

export const toExample = (r: ExampleRow): TrainingExample => ({ text: r.text, label: r.label === 1, label_text: r.label_text });
