// Evaluation reports of model versions. A version trained with a validation set (the held-out examples its train
// request sent) is scored on it by its training job, as training work, and the report is stored with its files
// (evaluation-file.ts); so is, when another version was live while it trained, its headline beside that one's on
// that one's validation set. A GET reads that small file, and the manifest's cross-validation report for a version
// trained without a validation set; it never reads the job's stored request, and never predicts. What no job stored
// (a version trained before reports were stored; a comparison with a version made live after this one trained) is
// computed in the background (background-reports.ts), and a GET meanwhile answers 409 with `retry-after`.
import { performance } from 'node:perf_hooks';
import { text } from 'node:stream/consumers';

import { SvcError } from '../errors.js';
import { kManifestFile, parseManifest, type CvEncoder } from '../contract/manifest.js';
import type { EvaluationObject } from '../contract/evaluation.js';
import type { Store, VersionRecord } from '../store/types.js';
import { isUnreachable } from '../store/unreachable.js';
import { type EvaluationReport, evaluateBinary, evaluateMultiClass, evaluateMultiLabel } from '../train/evaluation.js';
import type { ClassPrediction, LabelSetPrediction } from '../predict/classifier.js';
import { BackgroundReports } from './background-reports.js';
import { headline, parseStoredEvaluation, type StoredComparison, type StoredEvaluation } from './evaluation-file.js';
import { storedLabels } from './examples.js';
import { kEvaluationFile, type AnyRuntimePrediction, type ModelRuntime, type ModelScorer, type RuntimePrediction } from './runtime.js';
import type { ClassifierVersions } from './versions.js';

/** Stored reports and manifest facts kept, by the version's stored id. */
const kCachedFiles = 256;
/** What a GET answered 409 while a report is computed suggests waiting (seconds). */
export const kComputingRetryAfterSeconds = 5;

/** What a version's manifest says about its reports. */
interface ManifestFacts {
  /** Its train request had a validation set (the manifest's metrics count it). */
  validated: boolean;
  crossValidation: { folds: number; encoder: CvEncoder; scores: EvaluationReport } | null;
}

type ValidationExample = { text: string; label?: boolean | string; labels?: string[] };

/** A version's stored id is its classifier's for version 1, `<classifier>.v<n>` after (store/types.ts). */
const classifierOf = (modelId: string) => modelId.replace(/\.v\d+$/, '');

export class VersionEvaluations {
  readonly #store: Store;
  readonly #runtime: ModelRuntime;
  readonly #versions: ClassifierVersions;
  readonly #background = new BackgroundReports();
  /** Parsed evaluation.json (null: the version has none), by the version's stored id. */
  readonly #stored = new Map<string, Promise<StoredEvaluation | null>>();
  /** What each version's manifest says (null: no manifest), by its stored id. */
  readonly #manifests = new Map<string, Promise<ManifestFacts | null>>();

  constructor(store: Store, runtime: ModelRuntime, versions: ClassifierVersions) {
    this.#store = store;
    this.#runtime = runtime;
    this.#versions = versions;
  }

  /** The report of version `version` of the caller's classifier `id` (default: the live one). */
  async report(caller: { orgId: string }, id: string, version?: number): Promise<EvaluationObject> {
    const versions = await this.#versions.all(caller, id);
    const name = version === undefined ? id : `${id}@${version}`;
    const target = await this.#versions.resolve(caller, name, 'version');
    if (target.status !== 'trained') {
      throw new SvcError('conflict', `Version ${target.version} of '${id}' is ${target.status}; only a trained version has a report`, {
        param: 'version',
      });
    }
    const { from, report } = await this.#ownReport(target, id);
    const live = versions.find((v) => v.live)!;
    const compared = live.id === target.id ? null : await this.#comparedWithLive(target, live, id);
    return {
      object: 'model.evaluation',
      model: `${id}@${target.version}`,
      ...from,
      ...report,
      ...(compared === null ? {} : { compared_with_live: compared }),
    };
  }

  /**
   * A training job's report, made once its model is ready and before it is published (`score` predicts with the new
   * model as training work): its scores on its own validation set, and beside the live version on the live one's
   * when another version is live. Null when there is neither (no file is written).
   */
  async atTraining(modelId: string, options: Record<string, unknown>, score: ModelScorer): Promise<StoredEvaluation | null> {
    const versions = await this.#store.versions.list(classifierOf(modelId));
    const target = versions.find((v) => v.id === modelId);
    if (target === undefined) return null; // deleted meanwhile: its job stops at the fence
    const own = validationSet(options.validation);
    const live = versions.find((v) => v.live && v.id !== modelId && v.status === 'trained') ?? null;
    // The live version's texts from its job, read once here, in the background, and never again by a GET.
    const liveSet = live === null ? null : validationSet((await this.#store.getJob(live.id))?.options.validation);
    if (own === null && liveSet === null) return null;
    const texts = [...(own ?? []), ...(liveSet ?? [])].map((e) => e.text);
    const started = performance.now();
    const predictions = await score(texts);
    const msPerText = Math.round(((performance.now() - started) / texts.length) * 100) / 100;
    const validation = own === null ? null : { ...scoreAgainst(target, own, predictions.slice(0, own.length)), ms_per_text: msPerText };
    let compared: StoredComparison | null = null;
    if (live !== null && liveSet !== null) {
      const ours = scoreAgainst(target, liveSet, predictions.slice(own?.length ?? 0));
      // A live version whose files fail here must not fail this one's training: the comparison is then left to a GET.
      const theirs = await this.#liveReport(live, liveSet).catch((error: unknown) => {
        if (isUnreachable(error) || (error instanceof SvcError && error.code === 'aborted')) throw error;
        return null;
      });
      if (theirs !== null) {
        compared = { live_id: live.id, version: live.version, examples: liveSet.length, this: headline(ours), live: headline(theirs) };
      }
    }
    return { validation, compared_with_live: compared };
  }

  /** The live version's own report as it stored it (one trained before reports were stored: scored now). */
  async #liveReport(live: VersionRecord, liveSet: ValidationExample[]): Promise<EvaluationReport> {
    const stored = (await this.#storedEvaluation(live))?.validation ?? null;
    if (stored !== null) return stored;
    const texts = liveSet.map((e) => e.text);
    return scoreAgainst(live, liveSet, await this.#runtime.score(live.orgId, live.id, texts));
  }

  /** Resolves when no report is being computed in the background (tests). */
  idle(): Promise<void> {
    return this.#background.idle();
  }

  /** Stops the background computations; called before the runtime closes. */
  close(): Promise<void> {
    return this.#background.close();
  }

  /** The version's report on its validation set, else the cross-validation report training kept, else 404. */
  async #ownReport(
    target: VersionRecord,
    id: string,
  ): Promise<{ from: Pick<EvaluationObject, 'source' | 'folds' | 'encoder'>; report: EvaluationReport }> {
    const validation = await this.#validationReport(target, id);
    if (validation !== null) return { from: { source: 'validation' }, report: validation };
    const kept = (await this.#manifestFacts(target))?.crossValidation ?? null;
    if (kept === null) {
      throw new SvcError(
        'not_found',
        `Version ${target.version} of '${id}' was trained without a validation set, before training kept a cross-validation report: ` +
          "train a new version (with 'validation' for a report on held-out texts)",
        { param: 'version' },
      );
    }
    return { from: { source: 'cross-validation', folds: kept.folds, encoder: kept.encoder }, report: kept.scores };
  }

  /**
   * The version's report on its own validation set: stored by its training job, or (trained before reports were
   * stored) computed in the background, 409 until then; null when it had no validation set.
   */
  async #validationReport(v: VersionRecord, id: string): Promise<EvaluationReport | null> {
    const stored = await this.#storedEvaluation(v);
    if (stored !== null) return stored.validation;
    if (!((await this.#manifestFacts(v))?.validated ?? false)) return null;
    return this.#inBackground(
      v,
      v,
      `Version ${v.version} of '${id}' was trained before evaluation reports were stored; its report is being computed in the background`,
    );
  }

  /** Both versions' headlines on the live version's validation set, or null when it had none. */
  async #comparedWithLive(target: VersionRecord, live: VersionRecord, id: string): Promise<EvaluationObject['compared_with_live'] | null> {
    const stored = (await this.#storedEvaluation(target))?.compared_with_live ?? null;
    if (stored !== null && stored.live_id === live.id) {
      const { live_id: _liveId, ...compared } = stored;
      return compared;
    }
    const theirs = await this.#validationReport(live, id);
    if (theirs === null) return null;
    // Version `live` became live after `target` trained: `target` is scored on its texts now, in the background.
    const ours = await this.#inBackground(
      target,
      live,
      `Version ${target.version} of '${id}' is being scored in the background on the validation set of version ${live.version}, made live after it trained`,
    );
    return { version: live.version, examples: ours.examples, this: headline(ours), live: headline(theirs) };
  }

  /** `model`'s report on `of`'s validation set once the background has it; until then 409 saying `computing`. */
  async #inBackground(model: VersionRecord, of: VersionRecord, computing: string): Promise<EvaluationReport> {
    const report = this.#background.get(model.orgId, `${model.id} on ${of.id}`, async () => {
      const examples = validationSet((await this.#store.getJob(of.id))?.options.validation) ?? [];
      const signal = this.#background.signal;
      const predictions = await this.#runtime.score(
        model.orgId,
        model.id,
        examples.map((e) => e.text),
        { signal },
      );
      return scoreAgainst(model, examples, predictions);
    });
    if (report !== null) return report;
    throw new SvcError('conflict', `${computing}: retry in a few seconds`, {
      param: 'version',
      retryAfterSeconds: kComputingRetryAfterSeconds,
    });
  }

  /** The report the version's training job stored, or null (none: no validation set and nothing live, or older). */
  #storedEvaluation(v: VersionRecord): Promise<StoredEvaluation | null> {
    return cached(this.#stored, v.id, () =>
      this.#runtime
        .hubFile(v.orgId, v.id, kEvaluationFile)
        .then(async (file) => parseStoredEvaluation(await text(file.stream), `${v.orgId}/${v.id}`))
        .catch(notFoundAsNull),
    );
  }

  /** Whether the version had a validation set and the cross-validation report training kept, from its manifest. */
  #manifestFacts(v: VersionRecord): Promise<ManifestFacts | null> {
    // Through the hub, as the model object's metrics: with a database the local folder is only a cache.
    return cached(this.#manifests, v.id, () =>
      this.#runtime
        .hubFile(v.orgId, v.id, kManifestFile)
        .then(async (file) => {
          const manifest = parseManifest(await text(file.stream), `${v.orgId}/${v.id}`);
          const kept = manifest.cross_validation_report;
          const crossValidation = kept === undefined ? null : { folds: kept.folds, encoder: kept.encoder, scores: scoresOf(kept) };
          return { validated: manifest.metrics.validation_examples !== undefined, crossValidation };
        })
        // A runtime whose models keep no manifest has no report to give, as a manifest without one.
        .catch(notFoundAsNull),
    );
  }
}

/** `key`'s value from `map`, made once by `make` (a failure is not kept: the next call tries again). */
function cached<T>(map: Map<string, Promise<T>>, key: string, make: () => Promise<T>): Promise<T> {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
    value.catch(() => map.delete(key));
    if (map.size > kCachedFiles) map.delete(map.keys().next().value as string);
  }
  return value;
}

function notFoundAsNull(error: unknown): null {
  if (error instanceof SvcError && error.code === 'not_found') return null;
  throw error;
}

/** The scores of a kept cross-validation report, without its folds and encoder. */
function scoresOf(kept: { folds: number; encoder: CvEncoder } & EvaluationReport): EvaluationReport {
  const { folds: _folds, encoder: _encoder, ...scores } = kept;
  return scores;
}

/** A job's stored `validation`, or null when it has none. */
function validationSet(validation: unknown): ValidationExample[] | null {
  return Array.isArray(validation) && validation.length > 0 ? (validation as ValidationExample[]) : null;
}

/** `model`'s report from its predictions of `examples`, against their labels. */
function scoreAgainst(model: VersionRecord, examples: readonly ValidationExample[], predictions: AnyRuntimePrediction[]): EvaluationReport {
  const labels = storedLabels(model.taskType, model.labelText);
  switch (model.taskType) {
    case 'binary-classification':
      return evaluateBinary(
        examples.map((e) => e.label === true),
        (predictions as RuntimePrediction[]).map((p) => p.probability),
      );
    case 'multi-class-classification':
      return evaluateMultiClass(
        labels!,
        examples.map((e) => e.label as string),
        (predictions as ClassPrediction[]).map((p) => p.label),
      );
    case 'multi-label-classification':
      return evaluateMultiLabel(
        labels!,
        examples.map((e) => e.labels ?? []),
        (predictions as LabelSetPrediction[]).map((p) => p.labels),
      );
  }
}
