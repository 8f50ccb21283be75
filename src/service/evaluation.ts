// Evaluation reports of model versions: each version predicts its own validation set (the held-out examples its
// train request sent) and the report is scored against their labels; a version trained without one has the report of
// its examples' cross-validation, which training kept in its manifest; a version that is not live is also scored on
// the live version's validation set beside the live version, so the two are compared on the same texts. Reports
// are kept in memory: a trained version's files never change.
import { text } from 'node:stream/consumers';

import { SvcError } from '../errors.js';
import { kManifestFile, parseManifest, type CvEncoder } from '../contract/manifest.js';
import type { EvaluationObject } from '../contract/evaluation.js';
import type { Store, VersionRecord } from '../store/types.js';
import { type EvaluationReport, evaluateBinary, evaluateMultiClass, evaluateMultiLabel } from '../train/evaluation.js';
import type { ClassPrediction, LabelSetPrediction } from '../predict/classifier.js';
import { storedLabels } from './examples.js';
import type { ModelRuntime, RuntimePrediction } from './runtime.js';
import type { ClassifierVersions } from './versions.js';

/** Reports kept, by the version's (and the live version's) stored ids. */
const kCachedReports = 256;

/** A manifest's cross-validation report, split into where it came from and its scores. */
interface CrossValidationReport {
  folds: number;
  encoder: CvEncoder;
  scores: EvaluationReport;
}

/** The scores of a kept report, without its folds and encoder. */
function scoresOf(kept: Omit<CrossValidationReport, 'scores'> & EvaluationReport): EvaluationReport {
  const { folds: _folds, encoder: _encoder, ...scores } = kept;
  return scores;
}

type ValidationExample = { text: string; label?: boolean | string; labels?: string[] };

export class VersionEvaluations {
  readonly #store: Store;
  readonly #runtime: ModelRuntime;
  readonly #versions: ClassifierVersions;
  readonly #reports = new Map<string, Promise<EvaluationReport>>();
  /** Cross-validation reports read from manifests, by the version's stored id. */
  readonly #kept = new Map<string, Promise<CrossValidationReport | null>>();

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
    const liveSet = live.id === target.id ? null : await this.#validation(live);
    const compared =
      liveSet === null
        ? {}
        : await Promise.all([this.#scored(target, live, liveSet), this.#scored(live, live, liveSet)]).then(([ours, theirs]) => ({
            compared_with_live: { version: live.version, examples: liveSet.length, this: headline(ours), live: headline(theirs) },
          }));
    return { object: 'model.evaluation', model: `${id}@${target.version}`, ...from, ...report, ...compared };
  }

  /** The version's report on its validation set, else the cross-validation report training kept, else 404. */
  async #ownReport(
    target: VersionRecord,
    id: string,
  ): Promise<{ from: Pick<EvaluationObject, 'source' | 'folds' | 'encoder'>; report: EvaluationReport }> {
    const own = await this.#validation(target);
    if (own !== null) return { from: { source: 'validation' }, report: await this.#scored(target, target, own) };
    const kept = await this.#crossValidation(target);
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

  /** The cross-validation report training kept in the version's manifest, or null (trained before it was kept). */
  #crossValidation(v: VersionRecord): Promise<CrossValidationReport | null> {
    const key = `${v.orgId}/${v.id} cross-validation`;
    let report = this.#kept.get(key);
    if (report === undefined) {
      // Through the hub, as the model object's metrics: with a database the local folder is only a cache.
      report = this.#runtime
        .hubFile(v.orgId, v.id, kManifestFile)
        .then(async (file) => parseManifest(await text(file.stream), `${v.orgId}/${v.id}`).cross_validation_report ?? null)
        // A runtime whose models keep no manifest has no report to give, as a manifest without one.
        .catch((error: unknown) => {
          if (error instanceof SvcError && error.code === 'not_found') return null;
          throw error;
        })
        .then((kept) => (kept === null ? null : { folds: kept.folds, encoder: kept.encoder, scores: scoresOf(kept) }));
      this.#kept.set(key, report);
      report.catch(() => this.#kept.delete(key));
      if (this.#kept.size > kCachedReports) this.#kept.delete(this.#kept.keys().next().value as string);
    }
    return report;
  }

  /** The validation examples the version's train request sent, or null. */
  async #validation(v: VersionRecord): Promise<ValidationExample[] | null> {
    const validation = (await this.#store.getJob(v.id))?.options.validation;
    return Array.isArray(validation) && validation.length > 0 ? (validation as ValidationExample[]) : null;
  }

  /** `model`'s report on `of`'s validation set (cached). */
  #scored(model: VersionRecord, of: VersionRecord, examples: ValidationExample[]): Promise<EvaluationReport> {
    const key = `${model.orgId}/${model.id} on ${of.id}`;
    let report = this.#reports.get(key);
    if (report === undefined) {
      report = this.#evaluate(model, examples);
      this.#reports.set(key, report);
      report.catch(() => this.#reports.delete(key));
      if (this.#reports.size > kCachedReports) this.#reports.delete(this.#reports.keys().next().value as string);
    }
    return report;
  }

  async #evaluate(model: VersionRecord, examples: ValidationExample[]): Promise<EvaluationReport> {
    const predictions = await this.#runtime.predict(
      model.orgId,
      model.id,
      examples.map((e) => e.text),
    );
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
}

const headline = (report: EvaluationReport) => ({ accuracy: report.accuracy, macro_f1: report.macro.f1 });
