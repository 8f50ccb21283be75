// The shadow tables' rows as both stores read them (sqlite-shadows.ts, postgres-shadows.ts): one mapper, one
// statement for the stats, so that SQLite and PostgreSQL answer alike.
import type { ShadowLabel, ShadowResult, ShadowSetting, ShadowStats } from './shadow-types.js';

export interface ShadowSettingRow {
  project_id: string;
  model: string;
  classifier_id: string;
  text_pointer: string | null;
  label_rule: string;
  created_at: number;
  updated_at: number;
}

export interface ShadowResultRow {
  id: number;
  project_id: string;
  request_id: number;
  model: string;
  classifier_id: string;
  chat_label: string | null;
  classifier_label: string | null;
  agreed: number | null;
  classifier_ms: number | null;
  error: string | null;
  tokens_in: number | null;
  tokens_out: number | null;
  chat_ms: number;
  created_at: number;
}

export function toShadowSetting(row: ShadowSettingRow): ShadowSetting {
  return {
    projectId: row.project_id,
    model: row.model,
    classifierId: row.classifier_id,
    textPointer: row.text_pointer,
    labelRule: JSON.parse(row.label_rule) as Record<string, unknown>,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const label = (json: string | null): ShadowLabel | null => (json === null ? null : (JSON.parse(json) as ShadowLabel));

export function toShadowResult(row: ShadowResultRow): ShadowResult {
  return {
    id: row.id,
    projectId: row.project_id,
    requestId: row.request_id,
    model: row.model,
    classifierId: row.classifier_id,
    chatLabel: label(row.chat_label),
    classifierLabel: label(row.classifier_label),
    agreed: row.agreed === null ? null : row.agreed === 1,
    classifierMs: row.classifier_ms,
    error: row.error,
    tokensIn: row.tokens_in,
    tokensOut: row.tokens_out,
    chatMs: row.chat_ms,
    createdAt: row.created_at,
  };
}

/** A result's columns in insert order (after id). */
export function shadowResultParams(r: Omit<ShadowResult, 'id'>): unknown[] {
  return [
    r.projectId,
    r.requestId,
    r.model,
    r.classifierId,
    r.chatLabel === null ? null : JSON.stringify(r.chatLabel),
    r.classifierLabel === null ? null : JSON.stringify(r.classifierLabel),
    r.agreed === null ? null : r.agreed ? 1 : 0,
    r.classifierMs,
    r.error,
    r.tokensIn,
    r.tokensOut,
    r.chatMs,
    r.createdAt,
  ];
}

export const kShadowResultColumns =
  'project_id, request_id, model, classifier_id, chat_label, classifier_label, agreed, classifier_ms, error, tokens_in, tokens_out, chat_ms, created_at';

/**
 * The stats statements with placeholders named by `p` (SQLite `?`, PostgreSQL `$n`): the filter is
 * `project_id = p(1) AND created_at >= p(2) AND (p(3) IS NULL OR model = p(3))`, and the buckets divide created_at
 * by p(4) (an integer: both backends divide integers exactly); the median's offset is its p(4).
 */
export function shadowStatsSql(p: (n: number) => string): { totals: string; buckets: string; median: string } {
  const where = `project_id = ${p(1)} AND created_at >= ${p(2)} AND (CAST(${p(3)} AS TEXT) IS NULL OR model = ${p(3)})`;
  const answered = 'classifier_label IS NOT NULL';
  return {
    totals: `SELECT COUNT(*) AS calls,
        COALESCE(SUM(CASE WHEN agreed IS NOT NULL THEN 1 ELSE 0 END), 0) AS compared,
        COALESCE(SUM(CASE WHEN agreed = 1 THEN 1 ELSE 0 END), 0) AS agreed,
        COALESCE(SUM(CASE WHEN ${answered} THEN 0 ELSE 1 END), 0) AS errors,
        COALESCE(SUM(CASE WHEN ${answered} THEN COALESCE(tokens_in, 0) ELSE 0 END), 0) AS saved_in,
        COALESCE(SUM(CASE WHEN ${answered} THEN COALESCE(tokens_out, 0) ELSE 0 END), 0) AS saved_out,
        COALESCE(SUM(CASE WHEN ${answered} THEN chat_ms ELSE 0 END), 0) AS saved_ms,
        COALESCE(SUM(CASE WHEN ${answered} THEN classifier_ms ELSE 0 END), 0) AS classifier_ms
      FROM shadow_results WHERE ${where}`,
    buckets: `SELECT (created_at / CAST(${p(4)} AS INTEGER)) * CAST(${p(4)} AS INTEGER) AS start, COUNT(*) AS calls,
        COALESCE(SUM(CASE WHEN agreed IS NOT NULL THEN 1 ELSE 0 END), 0) AS compared,
        COALESCE(SUM(CASE WHEN agreed = 1 THEN 1 ELSE 0 END), 0) AS agreed
      FROM shadow_results WHERE ${where} GROUP BY 1 ORDER BY 1`,
    // The middle answered time (the lower of the two middles for an even count), by offset in time order.
    median: `SELECT classifier_ms FROM shadow_results WHERE ${where} AND ${answered}
      ORDER BY classifier_ms LIMIT 1 OFFSET ${p(4)}`,
  };
}

export interface ShadowTotalsRow {
  calls: number;
  compared: number;
  agreed: number;
  errors: number;
  saved_in: number;
  saved_out: number;
  saved_ms: number;
  classifier_ms: number;
}

export function toShadowStats(
  totals: ShadowTotalsRow,
  buckets: { start: number; calls: number; compared: number; agreed: number }[],
  median: number | null,
): ShadowStats {
  return {
    calls: Number(totals.calls),
    compared: Number(totals.compared),
    agreed: Number(totals.agreed),
    errors: Number(totals.errors),
    classifierP50Ms: median,
    savedTokensIn: Number(totals.saved_in),
    savedTokensOut: Number(totals.saved_out),
    savedChatMs: Number(totals.saved_ms),
    classifierMs: Number(totals.classifier_ms),
    buckets: buckets.map((b) => ({
      start: Number(b.start),
      calls: Number(b.calls),
      compared: Number(b.compared),
      agreed: Number(b.agreed),
    })),
  };
}
