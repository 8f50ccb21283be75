// Evaluation reports of model versions: each version predicts its own validation set (the held-out examples its
// train request sent) and the report is scored against their labels; a version that is not live is also scored on
// the live version's validation set beside the live version, so the two are compared on the same texts. Reports
// are kept in memory: a trained version's files never change.
import { SvcError } from '../errors.js';
import type { EvaluationObject } from '../contract/evaluation.js';
import type { Store, VersionRecord } from '../store/types.js';
import { type EvaluationReport, evaluateBinary, evaluateMultiClass, evaluateMultiLabel } from '../train/evaluation.js';
import type { ClassPrediction, LabelSetPrediction } from '../predict/classifier.js';
import { storedLabels } from './examples.js';
import type { ModelRuntime, RuntimePrediction } from './runtime.js';
import type { ClassifierVersions } from './versions.js';

/** Reports kept, by the version's (and the live version's) stored ids. */
const kCachedReports = 256;

type ValidationExample = { text: string; label?: boolean | string; labels?: string[] };

export class VersionEvaluations {
  readonly #store: Store;
  readonly #runtime: ModelRuntime;
  readonly #versions: ClassifierVersions;
  readonly #reports = new Map<string, Promise<EvaluationReport>>();

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
    const own = await this.#validation(target);
    if (own === null) {
      throw new SvcError(
        'not_found',
        `Version ${target.version} of '${id}' was trained without a validation set: send 'validation' with the train request for a report`,
        { param: 'version' },
      );
    }
    const report = await this.#scored(target, target, own);
    const live = versions.find((v) => v.live)!;
    const liveSet = live.id === target.id ? null : await this.#validation(live);
    const compared =
      liveSet === null
        ? {}
        : await Promise.all([this.#scored(target, live, liveSet), this.#scored(live, live, liveSet)]).then(([ours, theirs]) => ({
            compared_with_live: { version: live.version, examples: liveSet.length, this: headline(ours), live: headline(theirs) },
          }));
    return { object: 'model.evaluation', model: `${id}@${target.version}`, source: 'validation', ...report, ...compared };
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
