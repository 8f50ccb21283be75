// What one model row (a classifier's version) is charged against its organization's storage quota. The charge is made
// when the train request is accepted, before any file exists, so that the quota can refuse it before anything is
// stored: it counts what the store keeps exactly and bounds the model files the job will write from above.
import type { QuotaRefusal, TrainingExample } from './types.js';

/**
 * Model files charged per example: the example again in `examples.json` is counted with its text, and its row of
 * `example_embeddings.safetensors` at up to 1,024 F32 dimensions (svc-small has 384).
 */
export const kStoredBytesPerExample = 4096;
/** Model files charged per version whatever its size: head, LoRA adapter (about 1 MB), config, tokenizer, manifest. */
export const kStoredBytesPerVersion = 2 * 1024 * 1024;

/**
 * The bytes a version is charged: its options as stored (`optionsJson`, the JSON the job row keeps, unlabelled texts
 * included), and for each example its text and label name twice (the store's row and the model's `examples.json`)
 * plus {@link kStoredBytesPerExample}, plus {@link kStoredBytesPerVersion}. Migration 15 charges rows stored before
 * it by the same rule.
 *
 * @example
 * ```ts
 * storedBytes([{ text: 'good', label: true, label_text: 'positive' }], '{}'); // 2 + 2 * (4 + 8) + 4096 + 2097152 = 2101274
 * ```
 */
export function storedBytes(examples: readonly TrainingExample[], optionsJson: string): number {
  let bytes = Buffer.byteLength(optionsJson) + kStoredBytesPerVersion;
  for (const example of examples) {
    bytes += 2 * (Buffer.byteLength(example.text) + Buffer.byteLength(example.label_text)) + kStoredBytesPerExample;
  }
  return bytes;
}

/**
 * The statements that read an organization's usage, the same for both stores (`p` writes each one's only parameter,
 * the organization or the classifier, in the store's dialect).
 */
export const quotaSql = (p: { org: string; classifier: string }) => ({
  /** Its classifiers (a version is a row of its classifier's, not a classifier). */
  countModels: `SELECT COUNT(*) AS n FROM models WHERE org_id = ${p.org} AND classifier_id IS NULL`,
  /** An existing classifier's versions: its own row (version 1) and the later ones'. */
  countVersions: `SELECT 1 + COUNT(*) AS n FROM models WHERE classifier_id = ${p.classifier}`,
  /** The bytes its rows are charged (PostgreSQL's SUM of BIGINT is NUMERIC, which its driver reads as a string). */
  storedBytes: `SELECT CAST(COALESCE(SUM(stored_bytes), 0) AS BIGINT) AS n FROM models WHERE org_id = ${p.org}`,
});

/** The storage quota's refusal of a request charged `needed` bytes when the organization holds `used`; null: it fits. */
export function storageRefusal(used: number, needed: number, limit: number | undefined): QuotaRefusal | null {
  return limit !== undefined && used + needed > limit ? { quota: 'storage', used, needed, limit } : null;
}

/** A count quota's refusal when `used` already fills `limit`; null: one more fits. */
export function countRefusal(quota: 'models' | 'versions', used: number, limit: number | undefined): QuotaRefusal | null {
  return limit !== undefined && used >= limit ? { quota, used, limit } : null;
}
