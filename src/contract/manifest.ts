// manifest.json: what a model directory holds, how it was trained, and in which format.
// Readers accept every format version written so far, upgrading old ones on load.
import { SvcError } from '../errors.js';
import { baseModelNames, isBaseModelName, isBuiltinBaseModelName, registeredFingerprint } from './base-models.js';
import type { EvaluationScores } from './evaluation.js';
import { type FinetuneMethod, kMaxClasses, kMinClasses, kTaskTypes, type TaskType } from './train-request.js';

/**
 * The model-directory format version this build writes (manifest.json `format_version`). Bump it
 * (and add an upgrade) when the layout changes.
 *
 * @example
 * ```ts
 * import { kManifestFormatVersion } from 'svc-classify';
 * kManifestFormatVersion; // 1
 * ```
 */
export const kManifestFormatVersion = 1;
export const kManifestFile = 'manifest.json';
export const kHeadFile = 'head.json';
/** A fine-tuned model's own encoder weights (fp16 safetensors, the base checkpoint's tensor names). */
export const kEncoderFile = 'model.fp16.safetensors';

/**
 * How the classifier's encoder relates to its base model. `frozen`: the base encoder, shared by
 * every such model; `finetuned`: the directory holds its own encoder weights (`encoder_file`);
 * `adapter`: the base encoder with the directory's low-rank adapter (`adapter_file`, `adapter_config_file`).
 */
export type BodyKind = 'frozen' | 'finetuned' | 'adapter';

/** How the encoder was fine-tuned (SetFit's first stage), for `finetuned` bodies. */
export interface FinetuneSettings {
  /** Absent on models trained before adapters existed, which are `full`. */
  method?: FinetuneMethod;
  /** `adapter`: the LoRA rank, alpha and adapted modules (as adapter_config.json says too). */
  rank?: number;
  lora_alpha?: number;
  target_modules?: string[];
  /** Pair rounds per example: each gave one same-label and one other-label pair. */
  num_iterations: number;
  pairs: number;
  batch_pairs: number;
  steps: number;
  /** Peak AdamW learning rate (linear warm-up over `warmup_ratio` of the steps, then linear decay). */
  learning_rate: number;
  weight_decay: number;
  warmup_ratio: number;
  dropout: number;
  /** Gradients were clipped to this global L2 norm. */
  max_grad_norm: number;
  seed: number;
  /** Engine threads of the run (results are reproducible for the same seed and threads). */
  threads: number;
  /** Mean cosine-similarity loss over the last 10 steps. */
  final_loss: number;
  /**
   * The end-to-end phase after the contrastive steps (train's `options.endToEnd`): a softmax head trained with the
   * encoder (or the adapter) on the examples' cross-entropy, `batch` examples a step, rates decaying linearly to 0.
   * Absent: none ran.
   */
  end_to_end?: {
    epochs: number;
    batch: number;
    steps: number;
    body_learning_rate: number;
    head_learning_rate: number;
    weight_decay: number;
  };
  /** Wall time of the fine-tuning stage alone. */
  seconds: number;
}

export interface TrainingSettings {
  /**
   * `frozen-logistic`: embeddings of the frozen base encoder, then a logistic-regression head.
   * `setfit`: the encoder fine-tuned on pairs of examples (`finetune`), then the same head on
   * its embeddings.
   */
  method: 'frozen-logistic' | 'setfit';
  /** Present when `method` is `setfit`. */
  finetune?: FinetuneSettings;
  /**
   * The head on the embeddings (multi-class and multi-label models; a binary model's is one
   * logistic regression): `softmax-regression`, one multinomial logistic regression over the classes;
   * `one-vs-rest-logistic-regression`, a logistic regression per label.
   */
  head?: 'softmax-regression' | 'one-vs-rest-logistic-regression';
  /** Inverse L2 regularization strength of the head. */
  C: number;
  /** `balanced` when the examples were weighed by n / (classes x their class's count). */
  class_weight?: 'balanced';
  /**
   * How the head used the label's own words in template sentences (`sentences` of them; train's
   * `options.labelWords`): as examples weighing `weight` per class, or as a direction scaled by `scale`.
   * Absent: the examples alone.
   */
  label_words?: { kind: 'examples'; weight: number; sentences: number } | { kind: 'direction'; scale: number; sentences: number };
  /**
   * Self-training on the request's `unlabeled` texts: the share of them pseudo-labelled per round, the rounds, and how
   * many texts there were. Absent: none sent.
   */
  self_training?: { share: number; rounds: number; unlabeled: number };
  /** Newton's method (binary, one-vs-rest) or L-BFGS (softmax). */
  solver: 'newton-cholesky' | 'lbfgs';
  /** Steps the head took to converge (one-vs-rest: the most any label took). */
  iterations: number;
  /** Tokens kept per text. */
  max_length: number;
  examples: number;
  /** Binary models. */
  true_examples?: number;
  false_examples?: number;
  /** Multi-class and multi-label models: training examples of each class or carrying each label. */
  label_examples?: Record<string, number>;
}

export interface TrainingMetrics {
  /** Share of training examples the trained classifier labels correctly. */
  train_accuracy: number;
  /** Wall time from the first embedding to the fitted head. */
  train_seconds: number;
  /**
   * Accuracy on held-out examples, estimated by stratified k-fold cross-validation of the head
   * (models trained before it was measured have none).
   */
  cv_accuracy?: number;
  /** Macro-averaged F1 of the same cross-validation. */
  cv_macro_f1?: number;
  /** Folds of that cross-validation (up to 5, fewer when a class has fewer examples). */
  cv_folds?: number;
  /**
   * Whose embeddings the head was cross-validated on: `trained`, the encoder the model uses (frozen
   * models, where it is the base encoder); `base`, the base encoder (fine-tuned models, whose own
   * encoder was trained on every held-out fold and would report 97-100 %). `base` is conservative:
   * fine-tuning usually adds accuracy the estimate does not count. Absent on models trained before
   * it was recorded, whose estimate was measured on the trained encoder.
   */
  cv_encoder?: CvEncoder;
  /** Accuracy on the `validation` examples sent with the request (multi-label: the whole label set right). */
  validation_accuracy?: number;
  /** Macro-averaged F1 on them (multi-label: over the labels). */
  validation_macro_f1?: number;
  validation_examples?: number;
}

/** The encoders a cross-validation estimate can be measured on (see `TrainingMetrics.cv_encoder`). */
export const kCvEncoders = ['base', 'trained'] as const;
export type CvEncoder = (typeof kCvEncoders)[number];

// Optional numbers, before and after cv_encoder, in the order training writes them.
const kCvFields = ['cv_accuracy', 'cv_macro_f1', 'cv_folds'];
const kValidationFields = ['validation_accuracy', 'validation_macro_f1', 'validation_examples'];

/** The manifest's cross-validation report: its folds, the encoder of the embeddings, and the scores. */
export type CrossValidationReport = { folds: number; encoder: CvEncoder } & EvaluationScores;

/** The parsed manifest.json of the current format version. */
export interface Manifest {
  format_version: number;
  /** The model id, e.g. `svc-small-1a2b3c4d5e6f`. */
  id: string;
  /** Unix seconds. */
  created_at: number;
  task_type: TaskType;
  base_model: string;
  /**
   * sha256 of the registered base model folder's defining files when the model was trained (see
   * `registerBaseModel`); absent on models on a built-in base. Loading checks it against the folder registered now.
   */
  base_model_fingerprint?: string;
  /** Binary models: what `label: true` means. */
  label_text?: string;
  /** Multi-class and multi-label models: the class or label names, in the order of the head's rows. */
  labels?: string[];
  body: BodyKind;
  /** The fine-tuned encoder's weights, relative to the directory (`finetuned` bodies only). */
  encoder_file?: string;
  /** `adapter` bodies: the adapter's weights and its PEFT config, relative to the directory; the base is `base_model`. */
  adapter_file?: string;
  adapter_config_file?: string;
  /** The head's file, relative to the directory. */
  head_file: string;
  training: TrainingSettings;
  metrics: TrainingMetrics;
  /**
   * The evaluation report of the same cross-validation as `metrics.cv_*` (confusion matrix, per-label scores, binary
   * thresholds and calibration), each example scored by the head of the fold that held it out; absent on models
   * trained before it was kept.
   */
  cross_validation_report?: CrossValidationReport;
  /** The svc-classify version that wrote it. */
  library_version: string;
}

// Upgrades from each old format version to the next, applied in order on load.
// Version 1 is the first format, so none exist yet; version 2 adds `2: (v1) => v2` here.
const kUpgrades: Readonly<Record<number, (old: Record<string, unknown>) => Record<string, unknown>>> = Object.freeze({});

function invalid(dir: string, message: string): SvcError {
  return new SvcError('invalid_request', `${dir}/${kManifestFile}: ${message}`);
}

function field<T>(raw: Record<string, unknown>, dir: string, name: string, check: (v: unknown) => boolean): T {
  const value = raw[name];
  if (!check(value)) throw invalid(dir, `${name} is missing or malformed`);
  return value as T;
}

const isString = (v: unknown) => typeof v === 'string' && v.length > 0;
const isNumber = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
const isLabelList = (v: unknown) =>
  Array.isArray(v) && v.length >= kMinClasses && v.length <= kMaxClasses && v.every(isString) && new Set(v).size === v.length;
const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);

const isReport = (v: unknown) =>
  isObject(v) &&
  Number.isInteger((v as { folds?: unknown }).folds) &&
  Array.isArray((v as { confusion_matrix?: unknown }).confusion_matrix);

/** The named fields that are present (each a finite number), for fields newer models add. */
function optionalNumbers(raw: Record<string, unknown>, dir: string, names: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of names) if (raw[name] !== undefined) out[name] = field<number>(raw, dir, name, isNumber);
  return out;
}

/**
 * manifest.json's `files`: the SHA-256 (lowercase hex) of each file written with the manifest, by its path in the
 * directory (`head.json`, `onnx/model.onnx`); loading a model checks the files it reads against it. Kept apart from
 * {@link Manifest}: it describes one copy of the directory, not the model, so a model's manifest stays the same
 * before and after a save. Directories written before checksums existed have none.
 */
export type FileChecksums = Readonly<Record<string, string>>;

const kSha256Hex = /^[0-9a-f]{64}$/;
// A path inside the directory: relative, forward slashes, no `.` or `..` segment.
const isInnerPath = (name: string) => name.length > 0 && name.split('/').every((part) => part !== '' && part !== '.' && part !== '..');

function parseFileChecksums(raw: unknown, dir: string): FileChecksums | null {
  if (raw === undefined) return null;
  if (!isObject(raw)) throw invalid(dir, 'files must be an object of file names and their SHA-256');
  const files: Record<string, string> = {};
  for (const [name, hash] of Object.entries(raw as Record<string, unknown>)) {
    if (!isInnerPath(name) || name.includes('\\')) throw invalid(dir, `files names '${name}', which is not a path inside the directory`);
    if (typeof hash !== 'string' || !kSha256Hex.test(hash)) throw invalid(dir, `files['${name}'] is not a SHA-256 in lowercase hex`);
    files[name] = hash;
  }
  return Object.freeze(files);
}

/**
 * Parses a manifest.json's text, upgrading older format versions. Unknown (newer or
 * invalid) versions are refused with an error that says what to do.
 *
 * @example
 * ```ts
 * parseManifest(readFileSync('model/manifest.json', 'utf8'), 'model').label_text; // 'positive review'
 * parseManifest('{"format_version": 9}', 'model');
 * // throws SvcError: model/manifest.json: format_version 9 is newer than this svc-classify reads (1); upgrade svc-classify
 * ```
 */
export function parseManifest(text: string, dir: string): Manifest {
  return parseManifestAndChecksums(text, dir).manifest;
}

/**
 * {@link parseManifest}, and the directory's {@link FileChecksums} (null when it was written before they existed).
 *
 * @example
 * ```ts
 * parseManifestAndChecksums(readFileSync('model/manifest.json', 'utf8'), 'model').files;
 * // { 'adapter_config.json': '3f1c…', 'adapter_model.safetensors': '9b0e…', 'head.json': 'c2d4…' }
 * ```
 */
export function parseManifestAndChecksums(text: string, dir: string): { manifest: Manifest; files: FileChecksums | null } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw invalid(dir, 'is not valid JSON');
  }
  if (!isObject(raw)) throw invalid(dir, 'is not a JSON object');
  const files = parseFileChecksums((raw as Record<string, unknown>).files, dir);
  return { manifest: parseManifestFields(raw as Record<string, unknown>, dir), files };
}

/**
 * The manifest's base_model_fingerprint, refused when the folder registered under its base model now has other
 * files: the model's head was fitted on the embeddings of the files it was trained on.
 */
function checkBaseFingerprint(manifest: Record<string, unknown>, dir: string, baseModel: string): string | undefined {
  if (manifest.base_model_fingerprint === undefined) return undefined;
  const recorded = field<string>(manifest, dir, 'base_model_fingerprint', isString);
  if (isBuiltinBaseModelName(baseModel)) {
    throw invalid(
      dir,
      `base model '${baseModel}' was trained on files with fingerprint ${recorded}, but ${baseModel} is built in: its files are not fingerprinted`,
    );
  }
  const registered = registeredFingerprint(baseModel);
  if (registered !== recorded) {
    throw new SvcError(
      'invalid_request',
      `${dir}/${kManifestFile}: base model '${baseModel}' was trained on files with fingerprint ${recorded}, but the folder registered as '${baseModel}' now has ${registered}: the folder changed since training; register the folder it was trained on`,
    );
  }
  return recorded;
}

function parseManifestFields(raw: Record<string, unknown>, dir: string): Manifest {
  let manifest = raw;
  const version = manifest.format_version;
  if (!Number.isInteger(version) || (version as number) < 1) {
    throw invalid(dir, `format_version ${JSON.stringify(version) ?? 'is missing'}: not a svc-classify model format`);
  }
  if ((version as number) > kManifestFormatVersion) {
    throw invalid(dir, `format_version ${version} is newer than this svc-classify reads (${kManifestFormatVersion}); upgrade svc-classify`);
  }
  for (let v = version as number; v < kManifestFormatVersion; v++) manifest = kUpgrades[v + 1](manifest);

  const training = field<Record<string, unknown>>(manifest, dir, 'training', isObject);
  const metrics = field<Record<string, unknown>>(manifest, dir, 'metrics', isObject);
  const taskType = field<string>(manifest, dir, 'task_type', isString) as TaskType;
  if (!kTaskTypes.includes(taskType)) throw invalid(dir, `task_type '${taskType}' is not supported`);
  const names =
    taskType === 'binary-classification'
      ? { label_text: field<string>(manifest, dir, 'label_text', isString) }
      : { labels: field<string[]>(manifest, dir, 'labels', isLabelList) };
  const baseModel = field<string>(manifest, dir, 'base_model', isString);
  if (!isBaseModelName(baseModel)) {
    throw invalid(
      dir,
      `base_model '${baseModel}' is not one this svc-classify has (${baseModelNames.join(', ')}); register its folder first (registerBaseModel, svc serve --base-model ${baseModel}=DIR)`,
    );
  }
  const fingerprint = checkBaseFingerprint(manifest, dir, baseModel);
  const body = field<string>(manifest, dir, 'body', isString);
  if (body !== 'frozen' && body !== 'finetuned' && body !== 'adapter') {
    throw invalid(dir, `body '${body}' is not supported by this svc-classify; upgrade it`);
  }
  const encoderFile = body === 'finetuned' ? field<string>(manifest, dir, 'encoder_file', isString) : undefined;
  const adapterFiles =
    body === 'adapter'
      ? {
          adapter_file: field<string>(manifest, dir, 'adapter_file', isString),
          adapter_config_file: field<string>(manifest, dir, 'adapter_config_file', isString),
        }
      : {};
  return {
    format_version: kManifestFormatVersion,
    id: field(manifest, dir, 'id', isString),
    created_at: field(manifest, dir, 'created_at', isNumber),
    task_type: taskType,
    base_model: baseModel,
    ...(fingerprint === undefined ? {} : { base_model_fingerprint: fingerprint }),
    ...names,
    body,
    ...(encoderFile === undefined ? {} : { encoder_file: encoderFile }),
    ...adapterFiles,
    head_file: field(manifest, dir, 'head_file', isString),
    training: training as unknown as TrainingSettings,
    metrics: {
      train_accuracy: field(metrics, dir, 'train_accuracy', isNumber),
      train_seconds: field(metrics, dir, 'train_seconds', isNumber),
      ...optionalNumbers(metrics, dir, kCvFields),
      ...(metrics.cv_encoder === undefined
        ? {}
        : { cv_encoder: field<CvEncoder>(metrics, dir, 'cv_encoder', (v) => kCvEncoders.includes(v as CvEncoder)) }),
      ...optionalNumbers(metrics, dir, kValidationFields),
    },
    ...(manifest.cross_validation_report === undefined
      ? {}
      : { cross_validation_report: field<CrossValidationReport>(manifest, dir, 'cross_validation_report', isReport) }),
    library_version: typeof manifest.library_version === 'string' ? manifest.library_version : 'unknown',
  };
}
