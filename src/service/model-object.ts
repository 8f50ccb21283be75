// The model object of the HTTP contract, from a stored model record and, once trained, the
// metrics its manifest holds.
import { text } from 'node:stream/consumers';

import { resolveBaseModel } from '../model/base-models.js';
import { kManifestFile, parseManifest, type TrainingMetrics } from '../contract/manifest.js';
import type { ModelObject } from '../contract/schemas.js';
import type { ModelRecord } from '../store/types.js';
import { storedLabels } from './examples.js';
import type { ModelRuntime } from './runtime.js';

/** Trained models whose metrics are kept in memory (a few hundred bytes each). */
const kCachedMetrics = 4096;

/**
 * Model objects with the metrics of trained models, read from each model's manifest once (a
 * trained model's manifest never changes; a model directory without one, from a runtime with
 * another layout, has no metrics to show).
 */
export class ModelObjects {
  readonly #runtime: ModelRuntime;
  /** By `<org>/<model_id>`, oldest first. */
  readonly #metrics = new Map<string, TrainingMetrics>();

  constructor(runtime: ModelRuntime) {
    this.#runtime = runtime;
  }

  async object(record: ModelRecord): Promise<ModelObject> {
    const object = toModelObject(record);
    if (record.status !== 'trained') return object;
    const key = `${record.orgId}/${record.id}`;
    let metrics: TrainingMetrics | null | undefined = this.#metrics.get(key);
    if (metrics === undefined) {
      // Through the hub, not the local folder: with a database that folder is only a cache.
      metrics = await this.#runtime
        .hubFile(record.orgId, record.id, kManifestFile)
        .then(async (file) => parseManifest(await text(file.stream), key).metrics)
        .catch(() => null);
      if (metrics !== null) {
        this.#metrics.set(key, metrics);
        if (this.#metrics.size > kCachedMetrics) this.#metrics.delete(this.#metrics.keys().next().value as string);
      }
    }
    return metrics === null ? object : { ...object, metrics: { ...metrics } as Required<ModelObject>['metrics'] };
  }

  /** Drops a deleted model's metrics. */
  forget(record: ModelRecord): void {
    this.#metrics.delete(`${record.orgId}/${record.id}`);
  }
}

/**
 * The HTTP contract's model object for a stored model (`created_at` in Unix seconds).
 *
 * @example
 * ```ts
 * toModelObject(await store.getModel('svc-small-1a2b3c4d5e6f'));
 * // { id: 'svc-small-1a2b3c4d5e6f', object: 'model', created_at: 1795327426, status: 'trained',
 * //   owned_by: 'acme', task_type: 'binary-classification', context_window: 256, label_text: 'billing question' }
 * ```
 */
export function toModelObject(record: ModelRecord): ModelObject {
  const object: ModelObject = {
    id: record.id,
    object: 'model',
    created_at: Math.floor(record.createdAt / 1000),
    status: record.status,
    owned_by: record.orgId,
    task_type: record.taskType,
    context_window: resolveBaseModel(record.baseModel).maxLength,
  };
  const labels = storedLabels(record.taskType, record.labelText);
  // A binary model's one label: what `label: true` means, the name that tells two binary models apart.
  if (labels === null) object.label_text = record.labelText;
  else object.labels = labels;
  if (record.status === 'failed') object.error = record.error ?? 'training failed';
  return object;
}
