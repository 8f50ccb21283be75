// The manifest a trained classifier carries: how it was trained (base model, body, the fine-tuning
// recipe, the head and its levers, the examples per label) and what it scored (training accuracy,
// the cross-validated estimate and its report, the validation set's scores).
import { kAdapterConfigFile, kAdapterFile } from '../model/adapter.js';
import { registeredFingerprint } from '../contract/base-models.js';
import { kEncoderFile, kHeadFile, kManifestFormatVersion } from '../contract/manifest.js';
import type { CvEncoder, FinetuneSettings, Manifest } from '../contract/manifest.js';
import type { CrossValidation, FitResult, HeadKind } from '../pool/tasks.js';
import { packageVersion } from '../version.js';
import type { BinaryTrainRequest, TrainRequest } from '../contract/train-request.js';
import { endToEndSettings } from './end-to-end-recipe.js';
import type { EvaluationReport } from './evaluation.js';
import type { FinetunedEncoder } from './finetune-stage.js';
import type { LabelWordsLever } from './label-words.js';
import { kAdapterRecipe, kBatchPairs, kFinetuneRecipe } from './pairs.js';
import type { ExampleTargets } from './pairs.js';
import { kSelfTraining } from './self-training.js';

/** What train() did and measured, once the head is fitted. */
export interface TrainingRecord {
  id: string;
  /** The validated request. */
  request: TrainRequest;
  /** A multi-class or multi-label model's label names, in head order; null for binary. */
  labels: string[] | null;
  targets: ExampleTargets;
  /** The fine-tuned encoder (or adapter); null for a frozen body. */
  encoder: FinetunedEncoder | null;
  iterations: number;
  seed: number;
  /** `options.endToEnd.epochs`, when given. */
  endToEndEpochs: number | undefined;
  headKind: HeadKind;
  /** The head's inverse L2 regularization strength. */
  C: number;
  balanced: boolean;
  /** The label words' template sentences, when the head used them. */
  words: { texts: string[] } | null;
  lever: LabelWordsLever;
  /** How many unlabelled texts the head self-trained on; null when it did not. */
  selfTrainedOn: number | null;
  /** The model's head. */
  fit: FitResult;
  /** The cross-validated estimate, the encoder it was made on, and its report. */
  crossValidation: CrossValidation;
  cvEncoder: CvEncoder;
  crossValidationReport: EvaluationReport;
  /** The base model's longest input, in tokens. */
  maxLength: number;
  seconds: number;
}

/** A registered base model's fingerprint, so the model is never served on other files; built-in bases have none. */
function baseModelFingerprint(model: string): { base_model_fingerprint?: string } {
  const fingerprint = registeredFingerprint(model);
  return fingerprint === undefined ? {} : { base_model_fingerprint: fingerprint };
}

/** The manifest of a model just trained, as manifest.json holds it. */
export function trainingManifest(record: TrainingRecord): Manifest {
  const { id, request, labels, targets, encoder, iterations, seed, endToEndEpochs, headKind, C, balanced, words, lever } = record;
  const { selfTrainedOn, fit, crossValidation, cvEncoder, crossValidationReport, maxLength, seconds } = record;
  const { examples, model, task_type, validation } = request;
  const counts = labels === null ? null : labelExamples(targets, labels);
  const trueExamples = counts === null ? (targets as { classes: Int32Array }).classes.reduce((sum, label) => sum + label, 0) : 0;
  return {
    format_version: kManifestFormatVersion,
    id,
    created_at: Math.floor(Date.now() / 1000),
    task_type,
    base_model: model,
    ...baseModelFingerprint(model),
    ...(labels === null ? { label_text: (examples as BinaryTrainRequest['examples'])[0].label_text } : { labels }),
    body: encoder ? (encoder.adapter ? 'adapter' : 'finetuned') : 'frozen',
    ...(encoder && !encoder.adapter ? { encoder_file: kEncoderFile } : {}),
    ...(encoder?.adapter ? { adapter_file: kAdapterFile, adapter_config_file: kAdapterConfigFile } : {}),
    head_file: kHeadFile,
    training: {
      method: encoder ? 'setfit' : 'frozen-logistic',
      ...(encoder ? { finetune: finetuneSettings(encoder, iterations, seed, endToEndEpochs) } : {}),
      ...(headKind === 'logistic' ? {} : { head: headKind === 'softmax' ? 'softmax-regression' : 'one-vs-rest-logistic-regression' }),
      C,
      ...(balanced ? { class_weight: 'balanced' } : {}),
      ...(words && lever.kind !== 'none' ? { label_words: { ...lever, sentences: words.texts.length } } : {}),
      ...(selfTrainedOn !== null ? { self_training: { ...kSelfTraining, unlabeled: selfTrainedOn } } : {}),
      solver: fit.solver,
      iterations: fit.iterations,
      max_length: maxLength,
      examples: examples.length,
      ...(counts === null ? { true_examples: trueExamples, false_examples: examples.length - trueExamples } : { label_examples: counts }),
    },
    metrics: {
      train_accuracy: fit.trainAccuracy,
      train_seconds: Math.round(seconds * 1000) / 1000,
      cv_accuracy: crossValidation.accuracy,
      cv_macro_f1: crossValidation.macroF1,
      cv_folds: crossValidation.folds,
      cv_encoder: cvEncoder,
      ...(fit.validation && validation
        ? {
            validation_accuracy: fit.validation.accuracy,
            validation_macro_f1: fit.validation.macroF1,
            validation_examples: validation.length,
          }
        : {}),
    },
    cross_validation_report: { folds: crossValidation.folds, encoder: cvEncoder, ...crossValidationReport },
    library_version: packageVersion(),
  };
}

/** Training examples of each class, or carrying each label. */
function labelExamples(targets: ExampleTargets, labels: readonly string[]): Record<string, number> {
  const counts = new Array<number>(labels.length).fill(0);
  if (targets.kind === 'classes') for (const k of targets.classes) counts[k]++;
  else targets.sets.forEach((flag, i) => (counts[i % labels.length] += flag));
  return Object.fromEntries(labels.map((label, k) => [label, counts[k]]));
}

function finetuneSettings(encoder: FinetunedEncoder, iterations: number, seed: number, epochs: number | undefined): FinetuneSettings {
  const { adapter } = encoder;
  const recipe = adapter ? kAdapterRecipe : kFinetuneRecipe;
  return {
    method: adapter ? 'adapter' : 'full',
    ...(adapter ? { rank: adapter.rank, lora_alpha: adapter.alpha, target_modules: [...adapter.targets] } : {}),
    num_iterations: iterations,
    pairs: encoder.pairs,
    batch_pairs: kBatchPairs,
    steps: encoder.steps,
    learning_rate: recipe.lr,
    weight_decay: recipe.weightDecay,
    warmup_ratio: recipe.warmupRatio,
    dropout: recipe.dropout,
    max_grad_norm: recipe.maxGradNorm,
    seed,
    threads: encoder.threads,
    final_loss: encoder.finalLoss,
    ...(encoder.endToEndSteps > 0 && epochs ? { end_to_end: endToEndSettings(epochs, encoder.endToEndSteps, recipe.lr) } : {}),
    seconds: Math.round(encoder.seconds * 1000) / 1000,
  };
}
