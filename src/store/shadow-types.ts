/**
 * Shadow classifiers (issue #42): a project names a trained classifier for one of its proxied models, and every
 * proxied call of that model gets a result row saying whether the classifier agreed with the chat model. The
 * Store's `shadows` (types.ts) keeps both; the proxy's shadow runner (proxy/shadow.ts) writes the results.
 */

import type { Millis } from './types.js';

/** A project's shadow for one proxied model. */
export interface ShadowSetting {
  projectId: string;
  /** The proxied model as clients send it, prefix included (`provider-a:gpt-4o-mini`). */
  model: string;
  /** A classifier of the project's organization (`svc-small-<12 hex>`, or `<id>@<n>`). */
  classifierId: string;
  /** RFC 6901 pointer to the call's text in the request JSON; null: the last user message. */
  textPointer: string | null;
  /** Where the chat model's reply holds its label: a LabelRule (teacher/logged-calls.ts) as JSON. */
  labelRule: Record<string, unknown>;
  createdAt: Millis;
  updatedAt: Millis;
}

/** Labels as JSON values: binary boolean, multi-class the class, multi-label an array of labels. */
export type ShadowLabel = boolean | string | string[];

/** One proxied call compared: gone with its request-log row (retention prunes both). */
export interface ShadowResult {
  id: number;
  projectId: string;
  /** The request-log row of the call. */
  requestId: number;
  model: string;
  classifierId: string;
  /** The chat model's label; null when its reply could not be read under the rule. */
  chatLabel: ShadowLabel | null;
  /** The classifier's label; null when it did not answer (`error` says why). */
  classifierLabel: ShadowLabel | null;
  /** Both labels read and equal (a multi-label set in any order); null when either is missing. */
  agreed: boolean | null;
  /** Time the classifier took, ms; null when it did not answer. */
  classifierMs: number | null;
  /** Why there is no classifier label (a deleted classifier, a text that could not be read). */
  error: string | null;
  /** The chat call's tokens and time, as its log row has them: what the classifier would have saved. */
  tokensIn: number | null;
  tokensOut: number | null;
  chatMs: number;
  createdAt: Millis;
}

/** One bucket of time (`start` to `start + bucketMs`) of a project's shadow results. */
export interface ShadowBucket {
  start: Millis;
  calls: number;
  /** Calls with both labels read. */
  compared: number;
  agreed: number;
}

/** A project's shadow results since a moment, in all and by bucket (oldest first, empty buckets left out). */
export interface ShadowStats {
  calls: number;
  compared: number;
  agreed: number;
  /** Calls the classifier did not answer. */
  errors: number;
  /** The median classifier time of the calls it answered; null when none. */
  classifierP50Ms: number | null;
  /** Of the calls the classifier answered: the chat model's tokens and time it would have saved. */
  savedTokensIn: number;
  savedTokensOut: number;
  savedChatMs: number;
  /** Of the same calls: the classifier's own time, to set against savedChatMs. */
  classifierMs: number;
  buckets: ShadowBucket[];
}

/** What {@link ShadowStore.stats} reads. */
export interface ShadowStatsQuery {
  since: Millis;
  /** Bucket width, ms (an hour, a day). */
  bucketMs: number;
  /** Only this proxied model's results; all when absent. */
  model?: string;
}

/** The shadow settings and results of every project (Store.shadows). */
export interface ShadowStore {
  /** Sets the project's shadow for `setting.model`, replacing one there was (its createdAt kept). */
  put(setting: ShadowSetting): Promise<void>;
  /** The project's shadows, by model. */
  list(projectId: string): Promise<ShadowSetting[]>;
  /** False when the project had no shadow for the model. */
  remove(projectId: string, model: string): Promise<boolean>;
  /** Stores one compared call; returns its id. Fails when its request-log row is gone (pruned meanwhile). */
  insertResult(result: Omit<ShadowResult, 'id'>): Promise<number>;
  /** Newest first; `before` is an exclusive id cursor. */
  listResults(projectId: string, options: { limit: number; before?: number }): Promise<ShadowResult[]>;
  stats(projectId: string, query: ShadowStatsQuery): Promise<ShadowStats>;
}
