// Classifier: a trained head on a base encoder. Predicting, saving and loading; the encoder
// itself lives in the pool's workers, one per base model, shared by every classifier.
import { resolve as resolvePath } from 'node:path';

import { SvcError } from '../errors.js';
import * as is from '../is.js';
import { verifyModelFiles } from '../model/checksums.js';
import { isMultiHead, readModelDir } from '../model/directory.js';
import type { Head } from '../model/directory.js';
import { resolveBaseModel } from '../model/base-models.js';
import { isHubId } from '../model/hub.js';
import type { Hub } from '../model/hub.js';
import type { Manifest, TrainingMetrics } from '../contract/manifest.js';
import { forgetEncoder, runTask } from '../pool/pool.js';
import { textProblem } from '../contract/labelled-examples.js';
import type { TaskType } from '../contract/train-request.js';
import { scoreTexts } from './batcher.js';
import { type ExampleBank, readExampleBank, writeExampleBank } from './example-bank.js';
import { parsePredictExtras, scoreLongTexts } from './long-texts.js';
import type { NeighbourSource } from './nearest.js';
import { removeScratchDir, trackScratchDir } from './scratch.js';
import { markUnknownTokens, thresholds, toLabelPrediction, toPrediction } from './predictions.js';
import type { PredictionOf, PredictOptions } from './predictions.js';

// What a predict call takes and gives lives in predictions.ts; callers take it with the Classifier.
export { kDefaultThreshold } from './predictions.js';
export type { ClassPrediction, LabelSetPrediction, Prediction, PredictionExtras, PredictionOf, PredictOptions } from './predictions.js';

export interface LoadOptions {
  /** Where to find models given by hub id (`<org>/<model_id>`). */
  hub?: Hub;
}

/** How `Classifier.save` writes an adapter model (the default fine-tune). */
export interface SaveOptions {
  /**
   * Also write the files transformers.js loads (config.json, the tokenizer files, onnx/model.onnx of the base with
   * the adapter merged in): default true. false writes only what `Classifier.load` reads, under a megabyte. Frozen
   * and fully fine-tuned models always get them.
   */
  transformersJs?: boolean;
}

function checkTexts(texts: unknown): asserts texts is string | readonly string[] {
  if (typeof texts === 'string') return checkText(texts, 'text');
  if (!Array.isArray(texts)) throw new TypeError('texts must be a string or an array of strings');
  for (let i = 0; i < texts.length; i++) {
    if (typeof texts[i] !== 'string') throw new TypeError(`texts[${i}] must be a string`);
    checkText(texts[i], `texts[${i}]`);
  }
}

// Training's rule for a text (contract/labelled-examples.ts): not empty nor only whitespace, and at most
// kMaxTextLength characters, since tokenizing a megabyte text costs far more than the 256 tokens it is cut to.
function checkText(text: string, name: string): void {
  const problem = textProblem(text);
  if (problem !== null) throw new SvcError('invalid_request', `${name} ${problem}`, { param: name });
}

/**
 * A trained text classifier. Get one from `train()` or `Classifier.load()`. `T` is its task type:
 * a binary model predicts `{ label: boolean, probability }`, a multi-class one `{ label, probability,
 * scores }`, a multi-label one `{ labels, scores }` (see {@link PredictionOf}). `Classifier.load<T>()`
 * takes the task type the caller expects; `taskType` tells it at run time.
 *
 * @example
 * ```ts
 * import { Classifier } from 'svc-classify';
 * // trained on 20 UCI IMDB sentences (10 positive, 10 negative), label_text 'positive review'
 * const classifier = await Classifier.load('./positive-review');
 * await classifier.predict('A wonderful, moving film.');
 * // { label: true, probability: 0.663558840751648, truncated: false }
 * await classifier.predict(['Loved it', 'Two hours I will never get back']);
 * // [{ label: true, probability: 0.5833572149276733, truncated: false },
 * //  { label: false, probability: 0.30579420924186707, truncated: false }]
 *
 * const tagger = await Classifier.load<'multi-label-classification'>('./tags'); // labels film, food, positive
 * await tagger.predict('A wonderful, moving film.', { threshold: { positive: 0.3 } });
 * // { labels: ['positive'], scores: { film: 0.459…, food: 0.264…, positive: 0.376… }, truncated: false }
 * ```
 */
export class Classifier<T extends TaskType = 'binary-classification'> {
  readonly #manifest: Manifest;
  readonly #head: Head;
  readonly #encoderFile: string | null;
  readonly #scratchDir: string | null;
  // The training examples for `explain`: in memory after train(), else read from the model's files when asked.
  readonly #examples: ExampleBank | (() => Promise<ExampleBank>) | null;
  // A loaded model's folder, where explain's worker reads the examples itself.
  #examplesDir: (() => Promise<string>) | null = null;
  #disposed = false;

  /**
   * @internal Use `train()` or `Classifier.load()`. `encoderFile` is a fine-tuned model's own
   * encoder, or an adapter model's adapter_model.safetensors; `scratchDir`, a temporary directory holding it that `dispose()` removes;
   * `examples`, the training examples with their embeddings, or how to read them.
   */
  constructor(
    manifest: Manifest,
    head: Head,
    encoderFile: string | null = null,
    scratchDir: string | null = null,
    examples: ExampleBank | (() => Promise<ExampleBank>) | null = null,
  ) {
    if ((manifest.body !== 'frozen') !== (encoderFile !== null)) {
      throw new SvcError('internal', `a '${manifest.body}' classifier ${encoderFile === null ? 'needs' : 'takes no'} encoder weights`);
    }
    if (isMultiHead(head) !== (manifest.task_type !== 'binary-classification')) {
      throw new SvcError('internal', `a '${manifest.task_type}' classifier cannot take this head`);
    }
    this.#manifest = Object.freeze({ ...manifest });
    this.#head = head;
    this.#encoderFile = encoderFile;
    this.#scratchDir = scratchDir;
    this.#examples = examples;
    if (scratchDir !== null) trackScratchDir(this, scratchDir);
  }

  /** The model id, e.g. `svc-small-1a2b3c4d5e6f`. */
  get id(): string {
    return this.#manifest.id;
  }

  /** What `label: true` means, as given in the training examples (binary models; '' for the others). */
  get labelText(): string {
    return this.#manifest.label_text ?? '';
  }

  /** `binary-classification`, `multi-class-classification` or `multi-label-classification`. */
  get taskType(): T {
    return this.#manifest.task_type as T;
  }

  /** The class or label names of a multi-class or multi-label model, in the order of its head's rows; [] for binary. */
  get labels(): string[] {
    return [...(this.#manifest.labels ?? [])];
  }

  /** The base encoder's name, e.g. `svc-small`. */
  get baseModel(): string {
    return this.#manifest.base_model;
  }

  /** Unix seconds. */
  get createdAt(): number {
    return this.#manifest.created_at;
  }

  get metrics(): TrainingMetrics {
    return { ...this.#manifest.metrics };
  }

  /** The manifest as written to manifest.json. */
  get manifest(): Manifest {
    return structuredClone(this.#manifest);
  }

  /**
   * `frozen`: the base encoder with a trained head; `finetuned`: its own fine-tuned encoder too; `adapter`: the base
   * encoder with its own LoRA adapter (about a megabyte).
   */
  get body(): Manifest['body'] {
    return this.#manifest.body;
  }

  /**
   * The head's coefficients (a copy): a binary model's weights and bias; a multi-class or
   * multi-label model's `kind`, its labels x dim `weights` and a bias per label.
   */
  get head(): T extends 'binary-classification'
    ? { weights: Float64Array; bias: number }
    : { kind: 'softmax' | 'one-vs-rest'; weights: Float64Array; biases: Float64Array } {
    const head = this.#head;
    const copy = isMultiHead(head)
      ? { kind: head.kind, weights: head.weights.slice(), biases: head.biases.slice() }
      : { weights: head.weights.slice(), bias: head.bias };
    return copy as never;
  }

  /** Predicts one text. */
  predict(text: string, options?: PredictOptions): Promise<PredictionOf<T>>;
  /** Predicts several texts; the result is in input order. */
  predict(texts: readonly string[], options?: PredictOptions): Promise<PredictionOf<T>[]>;
  async predict(texts: string | readonly string[], options: PredictOptions = {}): Promise<PredictionOf<T> | PredictionOf<T>[]> {
    checkTexts(texts);
    this.#checkLive();
    const taskType = this.#manifest.task_type;
    const labels = this.#manifest.labels ?? [];
    if (options.threshold !== undefined && taskType !== 'multi-label-classification') {
      throw new SvcError('invalid_request', `threshold is only used by multi-label models; ${this.id} is ${taskType}`, {
        param: 'threshold',
      });
    }
    const cut = thresholds(options.threshold, labels);
    const { truncate, explain } = parsePredictExtras(options);
    const batch = typeof texts === 'string' ? [texts] : texts;
    const call = { signal: options.signal, tenant: options.tenant };
    const base = this.#manifest.base_model;
    // The default call is the batcher's one call with this head; the other path embeds the texts (see long-texts.ts).
    const scored =
      truncate === 'end' && explain === undefined
        ? { ...(await scoreTexts(base, this.#encoderFile, this.#head, batch, call)), chunks: null, neighbours: null }
        : await scoreLongTexts(
            { baseModel: base, encoderFile: this.#encoderFile, head: this.#head, taskType, examples: () => this.#neighbourSource() },
            batch,
            { ...call, truncate, explain, paramOf: options.paramOf ?? (typeof texts === 'string' ? () => 'text' : (t) => `texts[${t}]`) },
          );
    const { probabilities, truncated } = scored;
    const rows = Math.max(1, labels.length);
    const one = (i: number) =>
      (taskType === 'binary-classification'
        ? toPrediction(probabilities[i], truncated[i])
        : toLabelPrediction(taskType, labels, probabilities.subarray(i * rows, (i + 1) * rows), truncated[i], cut)) as PredictionOf<T>;
    const predictions = Array.from({ length: batch.length }, (_, i) => one(i));
    markUnknownTokens(predictions, scored.unknownShare);
    const { chunks } = scored;
    if (chunks) predictions.forEach((p, i) => (p.chunks = chunks[i]));
    if (scored.neighbours) {
      const nearest = scored.neighbours(predictions.map((p) => ('label' in p ? p.label : null)));
      predictions.forEach((p, i) => (p.nearest = nearest[i]));
    }
    return typeof texts === 'string' ? predictions[0] : predictions;
  }

  /** The training examples and their embeddings (to save them with the model). */
  async #exampleBank(): Promise<ExampleBank> {
    if (this.#examples === null) throw this.#noExamples();
    return typeof this.#examples === 'function' ? this.#examples() : this.#examples;
  }

  /** Where `explain` finds the training examples: in memory after train(), else the model's folder, read by a worker. */
  async #neighbourSource(): Promise<NeighbourSource> {
    if (this.#examplesDir !== null) {
      const examples = this.#manifest.training.examples;
      return { kind: 'files', dir: await this.#examplesDir(), modelId: this.id, taskType: this.#manifest.task_type, examples };
    }
    const { examples, embeddings } = await this.#exampleBank();
    return { kind: 'memory', examples, embeddings };
  }

  #noExamples(): SvcError {
    return new SvcError('conflict', `explain needs the training examples kept with the model, and ${this.id} has none`, {
      param: 'explain',
    });
  }

  /**
   * Writes the model directory (created if missing): manifest, head, the weights `Classifier.load` reads, and the files
   * transformers.js loads, so that `pipeline('text-classification', dir)` gives this classifier's probabilities. An
   * adapter model (the default fine-tune) gets them as the base with its adapter merged in, beside the adapter the
   * library keeps reading: about 91 MB and 3 to 5 s on two busy cores, where `{ transformersJs: false }` writes
   * only what the library reads (0.7 MB, a tenth of a second). The work runs in the pool.
   *
   * @example
   * ```ts
   * await classifier.save('./positive-review');
   * // ./positive-review: adapter_config.json adapter_model.safetensors config.json example_embeddings.safetensors
   * //                    examples.json head.json manifest.json onnx/model.onnx tokenizer.json tokenizer_config.json
   * await classifier.save('./positive-review-small', { transformersJs: false });
   * // ./positive-review-small: adapter_config.json adapter_model.safetensors example_embeddings.safetensors
   * //                          examples.json head.json manifest.json
   * ```
   */
  async save(dir: string, options: SaveOptions = {}): Promise<void> {
    if (typeof dir !== 'string' || dir.length === 0) throw new TypeError('dir must be a non-empty string');
    is.object(options, 'options');
    const transformersJs = is.boolean(options.transformersJs ?? true, 'options.transformersJs');
    this.#checkLive();
    await runTask({
      kind: 'save',
      dir: resolvePath(dir),
      manifest: this.#manifest,
      encoderFile: this.#encoderFile,
      head: this.#head,
      transformersJs,
    });
    // A model loaded from a directory saved without examples is saved without them too.
    const bank = await this.#exampleBank().catch((error: unknown) => {
      if (error instanceof SvcError && error.code === 'conflict') return null;
      throw error;
    });
    if (bank !== null) await writeExampleBank(resolvePath(dir), bank);
  }

  /**
   * Loads a model directory, or with `options.hub` a model by hub id.
   *
   * @example
   * ```ts
   * const hub = new DirectoryHub('./hub');
   * const classifier = await Classifier.load('acme/svc-small-1a2b3c4d5e6f', { hub });
   * classifier.labelText; // 'positive review'
   * ```
   */
  static async load<T extends TaskType = 'binary-classification'>(dirOrHubId: string, options: LoadOptions = {}): Promise<Classifier<T>> {
    if (typeof dirOrHubId !== 'string' || dirOrHubId.length === 0) {
      throw new TypeError('dirOrHubId must be a non-empty string');
    }
    const { hub } = options;
    if (hub !== undefined && (typeof hub !== 'object' || typeof hub.resolve !== 'function')) {
      throw new TypeError('options.hub must be a Hub');
    }
    const fromHub = hub !== undefined && isHubId(dirOrHubId);
    const dir = fromHub ? await hub.resolve(dirOrHubId) : dirOrHubId;
    const { manifest, head, encoderFile, checksums } = await readModelDir(dir);
    // A bad adapter fails the load, naming the tensor: a worker reads and checks it natively (the main thread reads
    // none of its values) and keeps it for the first predict.
    if (manifest.body === 'adapter') await runTask({ kind: 'adapter', baseModel: manifest.base_model, file: encoderFile! });
    // Then files that parse but differ from the saved ones (a value changed): their SHA-256 against the manifest's.
    await verifyModelFiles(dir, manifest, checksums);
    const dim = resolveBaseModel(manifest.base_model).hiddenSize;
    // Read only when asked: `explain` has a worker read them (and keep them); `save` reads them here. The folder is
    // looked up each time, since the hub may have moved its files meanwhile.
    const examplesDir = async () => (fromHub ? await hub.resolve(dirOrHubId) : dir);
    const examples = async () => readExampleBank(await examplesDir(), manifest.id, manifest.task_type, dim);
    const classifier = new Classifier<T>(manifest, head, encoderFile, null, examples);
    classifier.#examplesDir = examplesDir;
    return classifier;
  }

  /**
   * Releases the classifier: a base encoder stays loaded for the others, a fine-tuned one is
   * unloaded from the pool's workers (and a just-trained one's temporary files removed).
   * Predicting afterwards throws.
   */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    if (this.#encoderFile !== null) forgetEncoder(this.#encoderFile);
    if (this.#scratchDir !== null) removeScratchDir(this, this.#scratchDir);
  }

  #checkLive(): void {
    if (this.#disposed) throw new SvcError('invalid_request', `classifier ${this.id} was disposed`);
  }
}
