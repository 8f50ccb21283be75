// The training job, for every task type: validate, fine-tune the encoder (or embed with the frozen
// one) in the pool, fit and measure the head in the pool, and optionally publish the model
// directory to a hub. The main thread only awaits.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';

import { SvcError } from '../errors.js';
import { resolveBaseModel } from '../model/base-models.js';
import { parseHubId } from '../model/hub.js';
import { poolThreads, runTask } from '../pool/pool.js';
import type { FitResult, HeadKind } from '../pool/tasks.js';
import type { Head } from '../model/directory.js';
import { Classifier } from '../predict/classifier.js';
import { keptExamples } from '../predict/example-bank.js';
import { checkRequestFits, embedExamples, truncationSide } from './example-windows.js';
import { embedAll, throwIfAborted } from './embed-all.js';
import { runFinetuneStage } from './finetune-stage.js';
import { kDefaultLabelWords, labelWordTexts } from './label-words.js';
import { kSelfTraining, kSelfTrainingLabelWords } from './self-training.js';
import type { FinetunedEncoder } from './finetune-stage.js';
import { pairCount, stepCount } from './pairs.js';
import type { ExampleTargets } from './pairs.js';
import { finetunePlan, labelNames, numIterations } from './request.js';
import { evaluateOutOfFold } from './evaluation.js';
import { checkOptions } from './train-options.js';
import type { TrainOptions } from './train-options.js';
import { trainingManifest } from './training-manifest.js';
import { validateTrainRequest } from '../contract/train-request.js';
import { kDefaultTruncate } from '../contract/long-texts.js';
import { asksForTeacher, type TeacherTrainRequest } from '../contract/teacher-request.js';
import { labelWithTeacher } from './label-with-teacher.js';
import type {
  BinaryTrainRequest,
  ClassExample,
  LabelSetExample,
  MultiClassTrainRequest,
  MultiLabelTrainRequest,
  TaskType,
  TrainExample,
  TrainRequest,
} from '../contract/train-request.js';
import { kDefaultSeed } from '../random.js';

// train()'s options live in train-options.ts; the service and the library entry take their types from here.
export type { TrainOptions, TrainProgress } from './train-options.js';

/** Inverse L2 regularization strength of the head (scikit-learn's default). */
export const kHeadC = 1;

/**
 * Trains a binary classifier on labelled examples, as SetFit does: the encoder is fine-tuned
 * on pairs of examples (same label: cosine 1, different: 0) in the native core, then an
 * L2-regularized logistic-regression head (C = 1) is fitted by Newton's method on the
 * fine-tuned embeddings. With `finetune: false` the base encoder stays frozen and only the
 * head is fitted (about 0.4 s instead of about 10 s for 20 examples on two cores, and less
 * accurate). The same examples and seed give the same classifier, bit for bit, for a given
 * pool size. The request is validated at run time too (it often comes from JSON): a bad one
 * rejects with `SvcError('invalid_request')` naming the field.
 *
 * `multi-class-classification` pairs examples of the same class against other classes and fits a
 * softmax head by L-BFGS; `multi-label-classification` pairs examples by shared labels and fits a
 * logistic regression per label (see docs/multiclass.md). Every model gets cross-validated
 * metrics (`cv_accuracy`, `cv_macro_f1`), and validation metrics when the request sends a
 * `validation` set. The head is cross-validated on the base encoder's embeddings of the examples
 * (`cv_encoder: 'base'`) when the encoder was fine-tuned, since the fine-tuned one has seen every
 * held-out fold: a conservative estimate, equal to the frozen model's on the same examples. The
 * manifest's `cross_validation_report` holds that cross-validation's evaluation report (confusion
 * matrix, per-label scores, binary thresholds and calibration). A request's `model_id` is for the
 * service (a new version of a classifier it keeps): `train()` rejects it.
 *
 * @example
 * ```ts
 * import { train } from 'svc-classify';
 * const classifier = await train(
 *   // 20 UCI IMDB sentences: { text, label, label_text: 'positive review' }
 *   { model: 'svc-small', task_type: 'binary-classification', examples },
 *   { onProgress: (p) => console.log(p.stage, p.done, p.total, p.loss ?? '') },
 * );
 * // finetune 0 50
 * // finetune 1 50 0.4277200996875763
 * // ...
 * // finetune 50 50 0.1252186581492424
 * // fit 0 1
 * // fit 1 1
 * classifier.metrics; // { train_accuracy: 1, train_seconds: 11.4 } (2 cores)
 * await classifier.predict('A wonderful, moving film.'); // { label: true, probability: 0.663558840751648 }
 *
 * // 8 UCI sentences from each of amazon, imdb and yelp: { text, label: 'amazon' }
 * const sites = await train({ model: 'svc-small', task_type: 'multi-class-classification', examples: sentences, finetune: false });
 * sites.metrics; // { train_accuracy: 1, train_seconds: 2.166, cv_accuracy: 0.7916666666666666, cv_macro_f1: 0.7936274509803921, cv_folds: 5, cv_encoder: 'trained' }
 * await sites.predict('The battery died after a week.');
 * // { label: 'amazon', probability: 0.43939000368118286, scores: { amazon: 0.439…, imdb: 0.282…, yelp: 0.278… }, truncated: false }
 *
 * // No labels: a chat model labels the texts first (docs/teacher.md), called with the provider's key.
 * const billing = await train(
 *   { model: 'svc-small', task_type: 'binary-classification', label_text: 'billing question', texts, teacher: { model: 'provider-a:gpt-4o-mini' } },
 *   { teacher: { providers: { 'provider-a': { key: process.env.OPENAI_API_KEY } } } },
 * );
 * ```
 */
export async function train(request: BinaryTrainRequest, options?: TrainOptions): Promise<Classifier<'binary-classification'>>;
export async function train(request: MultiClassTrainRequest, options?: TrainOptions): Promise<Classifier<'multi-class-classification'>>;
export async function train(request: MultiLabelTrainRequest, options?: TrainOptions): Promise<Classifier<'multi-label-classification'>>;
export async function train(request: TrainRequest, options?: TrainOptions): Promise<Classifier<TaskType>>;
export async function train(
  request: Extract<TeacherTrainRequest, { task_type: 'binary-classification' }>,
  options?: TrainOptions,
): Promise<Classifier<'binary-classification'>>;
export async function train(
  request: Extract<TeacherTrainRequest, { task_type: 'multi-class-classification' }>,
  options?: TrainOptions,
): Promise<Classifier<'multi-class-classification'>>;
export async function train(
  request: Extract<TeacherTrainRequest, { task_type: 'multi-label-classification' }>,
  options?: TrainOptions,
): Promise<Classifier<'multi-label-classification'>>;
export async function train(request: TeacherTrainRequest, options?: TrainOptions): Promise<Classifier<TaskType>>;
export async function train(request: TrainRequest | TeacherTrainRequest, options: TrainOptions = {}): Promise<Classifier<TaskType>> {
  checkOptions(options);
  // Texts and a teacher: the teacher labels them first (label-with-teacher.ts), and training goes on with its labels.
  const labelled = asksForTeacher(request)
    ? (
        await labelWithTeacher(request, {
          ...options.teacher,
          ...(options.signal === undefined ? {} : { signal: options.signal }),
          ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
        })
      ).request
    : request;
  const validated = validateTrainRequest(labelled);
  const { examples, model, task_type } = validated;
  if (validated.model_id !== undefined) {
    throw new SvcError(
      'invalid_request',
      'model_id adds a version to a classifier the service keeps (POST /v2/train); train() makes a new classifier: name it with options.id',
      { param: 'model_id' },
    );
  }
  const hubId = options.hub ? options.id : undefined;
  if (hubId !== undefined) parseHubId(hubId);
  const id = options.id?.split('/').pop() ?? `${model}-${randomBytes(6).toString('hex')}`;
  throwIfAborted(options.signal);

  const base = resolveBaseModel(model);
  const started = performance.now();
  const labels = validated.task_type === 'binary-classification' ? null : labelNames(validated);
  const targets = targetsOf(validated.task_type, validated.examples, labels);
  const validation = validated.validation;
  const validationTargets = validation ? targetsOf(validated.task_type, validation, labels) : null;
  // Validation texts ride along: embedded by the same encoder as the examples, never paired.
  const texts = [...examples, ...(validation ?? [])].map((example) => example.text);
  const truncate = validated.truncate ?? kDefaultTruncate;
  await checkRequestFits(validated, options.signal);
  const plan = finetunePlan(validated);
  const iterations = numIterations(validated);
  const seed = options.seed ?? kDefaultSeed;
  let encoder: FinetunedEncoder | null = null;
  let embeddings: Float32Array;
  if (plan) {
    const steps = stepCount(pairCount(examples.length, iterations));
    options.onProgress?.({ stage: 'finetune', done: 0, total: steps });
    // The fine-tuning task embeds its texts at its end; an adapter model's head (or one read in chunks) is fitted on
    // embeddings made again below, so there the task gets the examples it pairs and no validation texts to embed.
    const embeddedAgain = plan.method === 'adapter' || truncate === 'chunks';
    encoder = await runFinetuneStage({
      baseModel: model,
      texts: embeddedAgain ? texts.slice(0, examples.length) : texts,
      truncate: truncationSide(truncate),
      targets,
      iterations,
      seed,
      threads: options.threads ?? poolThreads(),
      adapterRank: plan.method === 'adapter' ? plan.rank : null,
      endToEnd: options.endToEnd ?? null,
      signal: options.signal,
      tenant: options.tenant,
      onStep: (step) => options.onProgress?.({ stage: 'finetune', ...step }),
    });
    embeddings = encoder.embeddings;
  } else {
    embeddings = await embedExamples(texts, truncate, base.hiddenSize, (t, side) =>
      embedAll(model, t, base.hiddenSize, { ...options, truncate: side }),
    );
  }

  try {
    const dim = base.hiddenSize;
    // An adapter model predicts with its adapter as saved (fp16) merged into the base: the head is fitted on that.
    // With 'chunks' the head reads every window, embedded by the trained encoder (fine-tuning read the first).
    const trained = encoder;
    if (trained && (trained.adapter || truncate === 'chunks')) {
      embeddings = await embedExamples(texts, truncate, dim, (t, side) =>
        embedAll(model, t, dim, { ...options, truncate: side }, trained.encoderFile),
      );
    }
    // A fine-tuned encoder was trained on every example, each fold's held-out ones included, so a
    // head cross-validated on its embeddings scores 97-100 % where held-out texts score 67-87 %.
    // The base encoder never saw them: cross-validating on its embeddings is honest, on the
    // conservative side (fine-tuning mostly helps), and embedding the examples once more costs a
    // small fraction of fine-tuning.
    const estimateEmbeddings = encoder
      ? await embedExamples(
          examples.map((example) => example.text),
          truncate,
          dim,
          (t, side) => embedAll(model, t, dim, { ...options, truncate: side }),
        )
      : null;
    // The label's own words in template sentences (label-words.ts), when the head uses them: embedded
    // by the model's encoder for the head and, beside a fine-tuned model's estimate, by the base one.
    const unlabeled = validated.task_type === 'multi-label-classification' ? [] : (validated.unlabeled ?? []);
    // With unlabelled texts the label words join in unless the options say otherwise: together they won (self-training.ts).
    const lever = options.labelWords ?? (unlabeled.length > 0 ? kSelfTrainingLabelWords : kDefaultLabelWords);
    const words =
      lever.kind === 'none' ? null : labelWordTexts(task_type, labels ?? (examples as BinaryTrainRequest['examples'])[0].label_text);
    const quiet = { signal: options.signal, tenant: options.tenant };
    const wordEmbeddings = words && (await embedAll(model, words.texts, dim, quiet, encoder?.encoderFile ?? null));
    const baseWordEmbeddings = words && encoder ? await embedAll(model, words.texts, dim, quiet) : wordEmbeddings;
    // Unlabelled texts (request.unlabeled): the head self-trains on them as the model's encoder embeds them
    // (self-training.ts), and a fine-tuned model's estimate in every fold on them as the base encoder embeds them, as
    // it does the examples: without them the estimate sat 10.3 points from held-out accuracy on the accuracy bench's
    // four tasks (full fine-tuning), with them 7.7 (7.2 with the default adapter). So a fine-tuned model embeds them
    // twice, once by each encoder: the two are different functions of the text (an adapter changes every layer's
    // input from the first on), neither pass can be had from the other, and leaving out either changes the head or
    // the estimate. A frozen model embeds them once, for both. The request's work bound (kMaxTrainTokens) counts them once.
    const embedUnlabeled = (encoderFile: string | null) =>
      embedExamples(unlabeled, truncate === 'none' ? 'end' : truncate, dim, (t, side) =>
        embedAll(model, t, dim, { ...quiet, truncate: side }, encoderFile),
      );
    const unlabeledEmbeddings = unlabeled.length > 0 ? await embedUnlabeled(encoder?.encoderFile ?? null) : null;
    const baseUnlabeledEmbeddings = unlabeledEmbeddings && encoder ? await embedUnlabeled(null) : unlabeledEmbeddings;
    throwIfAborted(options.signal);
    options.onProgress?.({ stage: 'fit', done: 0, total: 1 });
    const split = examples.length * dim;
    const headKind = kHeadKinds[task_type];
    const balanced = validated.task_type !== 'binary-classification' && validated.class_weight === 'balanced';
    const fitTask = (
      on: Float32Array,
      wordsOn: Float32Array | null,
      validationEmbeddings: Float32Array | null,
      crossValidate: boolean,
      unlabeledOn: Float32Array | null = null,
    ) =>
      runTask<FitResult>(
        {
          kind: 'fit',
          head: headKind,
          embeddings: on,
          targets,
          dim,
          C: kHeadC,
          balanced,
          validation: validationTargets && validationEmbeddings ? { embeddings: validationEmbeddings, targets: validationTargets } : null,
          crossValidate,
          labelWords: words && wordsOn ? { embeddings: wordsOn, targets: words.targets, lever } : null,
          unlabeled: unlabeledOn && { embeddings: unlabeledOn, selfTraining: kSelfTraining },
        },
        options.signal,
        undefined,
        { tenant: options.tenant },
      );
    // The head on the trained embeddings; with a fine-tuned encoder, the estimate from a second fit on the base ones
    // (and none on the trained ones, whose figure would be thrown away).
    const [fit, estimate] = await Promise.all([
      fitTask(embeddings.subarray(0, split), wordEmbeddings, embeddings.subarray(split), estimateEmbeddings === null, unlabeledEmbeddings),
      estimateEmbeddings ? fitTask(estimateEmbeddings, baseWordEmbeddings, null, true, baseUnlabeledEmbeddings) : null,
    ]);
    const crossValidation = (estimate ?? fit).crossValidation!;
    // The same cross-validation's report, from each example's out-of-fold probabilities (no further fit).
    const crossValidationReport = evaluateOutOfFold(targets, labels, (estimate ?? fit).outOfFold!);
    const seconds = (performance.now() - started) / 1000;
    options.onProgress?.({ stage: 'fit', done: 1, total: 1 });

    const manifest = trainingManifest({
      id,
      request: validated,
      labels,
      targets,
      encoder,
      iterations,
      seed,
      endToEndEpochs: options.endToEnd?.epochs,
      headKind,
      C: kHeadC,
      balanced,
      words,
      lever,
      selfTrainedOn: unlabeledEmbeddings ? unlabeled.length : null,
      fit,
      crossValidation,
      cvEncoder: estimate ? 'base' : 'trained',
      crossValidationReport,
      maxLength: base.maxLength,
      seconds,
    });
    const head = Object.freeze(headOf(headKind, fit));
    // The examples as the head saw them, for `explain`.
    const bank = { examples: keptExamples(examples), embeddings: embeddings.slice(0, split), dim };
    const classifier = new Classifier(manifest, head, encoder?.encoderFile ?? null, encoder?.dir ?? null, bank);
    encoder = null; // the classifier owns its directory now

    if (options.hub && hubId !== undefined) {
      throwIfAborted(options.signal);
      options.onProgress?.({ stage: 'save', done: 0, total: 1 });
      try {
        // An adapter model stays under a megabyte in the hub, which builds its transformers.js files on a first download.
        await options.hub.publish(hubId, (dir) => classifier.save(dir, { transformersJs: false }));
      } catch (error) {
        classifier.dispose();
        throw error;
      }
      options.onProgress?.({ stage: 'save', done: 1, total: 1 });
    }
    return classifier;
  } finally {
    if (encoder) await rm(encoder.dir, { recursive: true, force: true });
  }
}

/** The head each task type trains. */
export const kHeadKinds: Readonly<Record<TaskType, HeadKind>> = Object.freeze({
  'binary-classification': 'logistic',
  'multi-class-classification': 'softmax',
  'multi-label-classification': 'one-vs-rest',
});

type AnyExample = TrainRequest['examples'][number];

/** A fitted head as a model keeps it: binary models' one row and bias, the others' rows and biases by kind. */
export function headOf(kind: HeadKind, fit: FitResult): Head {
  if (kind === 'logistic') return { weights: fit.weights, bias: fit.biases[0] };
  return { kind, weights: fit.weights, biases: fit.biases };
}

/** Examples' labels as the pool's tasks take them: a class index (binary: 1 for true) or a 0/1 row over `labels`. */
export function targetsOf(taskType: TaskType, examples: readonly AnyExample[], labels: readonly string[] | null): ExampleTargets {
  if (taskType === 'binary-classification') {
    return { kind: 'classes', classes: Int32Array.from(examples, (example) => ((example as TrainExample).label ? 1 : 0)), count: 2 };
  }
  const index = new Map((labels as string[]).map((label, k) => [label, k]));
  if (taskType === 'multi-class-classification') {
    return {
      kind: 'classes',
      classes: Int32Array.from(examples, (example) => index.get((example as ClassExample).label) as number),
      count: index.size,
    };
  }
  const sets = new Uint8Array(examples.length * index.size);
  examples.forEach((example, i) => {
    for (const label of (example as LabelSetExample).labels) sets[i * index.size + (index.get(label) as number)] = 1;
  });
  return { kind: 'label-sets', sets, count: index.size };
}
