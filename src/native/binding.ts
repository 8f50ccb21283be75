/**
 * The contract of the compiled addon (build/Release/svc_classify.node): every
 * export with its exact signature. Nothing outside src/native/ imports the addon.
 * Only primitives and typed arrays cross the boundary.
 */

export interface NativeCpuInfo {
  /**
   * The kernel level in use: "avx512-amx" (AVX-512 with AMX tiles), "avx512-vnni", "avx512", "avx2-vnni" (AVX2 with AVX-VNNI's int8 products), "avx2"
   * (x86-64), "neon-dotprod", "neon" (aarch64) or "scalar".
   */
  level: 'avx512-amx' | 'avx512-vnni' | 'avx512' | 'avx2-vnni' | 'avx2' | 'neon-dotprod' | 'neon' | 'scalar';
  avx2: boolean;
  /** AVX-VNNI (vpdpbusd on 256-bit registers), which the AVX2 int8 kernel uses when present. */
  avxvnni: boolean;
  avx512: boolean;
  avx512vnni: boolean;
  /**
   * bf16 products (AVX512_BF16): fine-tuning's linear layers run in bf16 with fp32 sums; without
   * them it keeps fp32 products. Where they are faster is measured (`kernelChoice`).
   */
  bf16: boolean;
  /**
   * AMX (tile bf16 and int8 products) that this process may use: Linux grants the tile state on
   * request, which the addon makes at load. Training's and the `'bf16'` precision's bf16 products and
   * the int8 GEMMs run on the tiles.
   */
  amx: boolean;
  /** aarch64 Advanced SIMD, and its dot-product extension (SDOT for the int8 kernels). */
  neon: boolean;
  neonDotprod: boolean;
}

/**
 * Options of the native `Trainer` constructor; every field but `dropout` is required (`EncoderTrainer`
 * fills in the defaults). The shapes, heads and LayerNorm epsilon come from the model's config.json.
 */
export interface NativeTrainerOptions {
  /** Left out: the config's `hidden_dropout_prob`. */
  dropout?: number;
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  warmupRatio: number;
  totalSteps: number;
  seed: number;
  threads: number;
  maxGradNorm: number;
  /** 1: the embedding tables train too. */
  trainEmbeddings: number;
  /** Left out: the whole encoder trains. Targets by the names of `AdapterTarget`. */
  adapter?: { rank: number; alpha: number; targets: readonly string[] };
  /** Left out: bf16 products wherever the CPU has them (AVX512_BF16). 0: fp32 products. */
  bf16Products?: number;
  /** 1: the first token's state is the embedding; 0 or left out: the mean of every token's. */
  clsPooling?: number;
  /** 0: embeddings as pooled; 1 or left out: L2-normalized. */
  normalize?: number;
}

/** One trained LoRA matrix, copied out: A is [r, in], B [out, r], row-major. */
export interface NativeAdapterTensor {
  /** PEFT's name, e.g. `base_model.model.encoder.layer.0.attention.self.query.lora_A.weight`. */
  name: string;
  shape: [number, number];
  data: Float32Array;
}

/** native/bindings/trainer_wrap.cc: contrastive fine-tuning of a BERT encoder. */
export interface NativeTrainer {
  /** One optimizer step on a packed batch of texts and the pairs over them; returns [loss, lr, stepsDone, gradNorm] (gradNorm: the gradient's global L2 norm before clipping). */
  step(ids: Int32Array, lengths: Int32Array, pairA: Int32Array, pairB: Int32Array, labels: Float32Array): Float64Array;
  /** The loss of a batch without dropout and without an update. */
  evaluate(ids: Int32Array, lengths: Int32Array, pairA: Int32Array, pairB: Int32Array, labels: Float32Array): number;
  /** Normalized mean-pooled embeddings of the current weights into out (lengths.length x dim). */
  embed(ids: Int32Array, lengths: Int32Array, out: Float32Array): void;
  /** Writes the encoder as fp16 safetensors with the checkpoint's tensor names; throws for an adapter trainer. */
  save(path: string): void;
  /** A and B of every adapted layer, layer by layer; [] without an adapter. */
  adapterTensors(): NativeAdapterTensor[];
  /** Starts the end-to-end phase from a softmax head (weights classes x dim, then bias per class). */
  startHeadPhase(
    weights: Float32Array,
    bias: Float32Array,
    options: { bodyLr: number; headLr: number; weightDecay: number; totalSteps: number },
  ): void;
  /** One end-to-end step on packed texts and their classes; returns [loss, lr, stepsDone, gradNorm] (stepsDone: of the phase). */
  headStep(ids: Int32Array, lengths: Int32Array, targets: Int32Array): Float64Array;
  /** The end-to-end head as trained so far: weights (classes x dim), then the biases. */
  head(): Float32Array;
  /** Frees the weights, optimizer state and threads now; later calls throw. */
  dispose(): void;
  readonly stepsDone: number;
  readonly dim: number;
}

/** A loaded encoder (native/core/encoder). Weights are shared process-wide per (file, precision). */
export interface NativeEncoder {
  readonly dim: number;
  /** Threads of its pool, the calling thread included. */
  readonly threads: number;
  /** Resident bytes of the (shared) weights it uses. */
  readonly weightBytes: number;
  /** The precision of its weights: 'fp32' for a 'bf16' request on a CPU without bf16 products. */
  readonly precision: 'fp32' | 'int8' | 'bf16';
  /**
   * Mean-pooled, L2-normalized embeddings of the packed texts into `out` (lengths.length x dim). With `counts` and
   * `adapters`: the texts in runs of `counts[s]`, each through `adapters[s]` (null: the base), added to the shared
   * base's products per run of rows.
   */
  embed(ids: Int32Array, lengths: Int32Array, out: Float32Array, counts?: Int32Array, adapters?: (NativeAdapter | null)[]): void;
  /** Final hidden states of every token into `out` (ids.length x dim); runs of adapters as for `embed`. */
  hiddenStates(ids: Int32Array, lengths: Int32Array, out: Float32Array, counts?: Int32Array, adapters?: (NativeAdapter | null)[]): void;
  /** How `embed` pools from now on: the first token's state (`cls`) or the mean, then L2-normalized or not. */
  setPooling(cls: boolean, normalize: boolean): void;
  /** Frees the pool and drops the reference to the shared weights; later calls throw. */
  dispose(): void;
}

/** A LoRA adapter, A and B held in its file's float type (native/core/encoder/adapter.h), for an encoder's runs of rows. */
export interface NativeAdapter {
  /** Resident bytes of its A and B. */
  readonly bytes: number;
  /** Drops this handle's reference; a batch running with it keeps its own until it ends. */
  dispose(): void;
}

export interface NativeEncoderConstructor {
  new (configPath: string, weightsPath: string, precision: 'fp32' | 'int8' | 'bf16', threads: number): NativeEncoder;
  /**
   * With a LoRA adapter (PEFT's adapter_model.safetensors) merged into the weights before they are packed:
   * W + adapterScale B A, every tensor checked against the config and `adapterRank` (the error names it).
   */
  new (
    configPath: string,
    weightsPath: string,
    precision: 'fp32' | 'int8' | 'bf16',
    threads: number,
    adapterPath: string,
    adapterRank: number,
    adapterScale: number,
  ): NativeEncoder;
}

export interface NativeAddon {
  cpuInfo(): NativeCpuInfo;
  napiVersion: number;
  /** Bytes the C allocator holds in use (glibc's mallinfo2); null where the C library cannot say. */
  mallocBytesInUse(): number | null;
  /**
   * Times every linear-layer kernel this CPU allows (after SVC_ISA's cap; fp32 first) for about `budgetMs`, rounds
   * interleaved, each checked against fp32 (native/core/kernels/autotune.h).
   */
  measureKernels(threads: number, budgetMs: number): { name: string; gflops: number; relError: number; rounds: number }[];
  /** Which bf16 kernel runs where the CPU has both (process-wide; AMX until set); 'emulated' runs bf16 on any CPU. */
  setBf16Kernel(kernel: 'amx' | 'vector' | 'emulated'): void;
  /** Throws when config.json or the weights are malformed, or a tensor's shape disagrees with the config. */
  Trainer: new (configFile: string, weightsFile: string, options: NativeTrainerOptions) => NativeTrainer;
  /** Max relative error of each training-core gradient check against finite differences. */
  trainSelfTest(): Record<string, number>;
  Encoder: NativeEncoderConstructor;
  /**
   * Reads and checks PEFT's adapter_model.safetensors against the base's config.json, rank and lora_alpha / r, and,
   * with `modules` (bit i: `kLoraModules[i]` is adapted), that it holds A and B of exactly those modules in every
   * layer. The error names the tensor at fault.
   */
  Adapter: new (configPath: string, adapterPath: string, rank: number, scale: number, modules?: number) => NativeAdapter;
  /** Distinct weight sets currently loaded in this process. */
  loadedWeightSets(): number;
  Tokenizer: NativeTokenizerConstructor;
}

/** The addon's `Tokenizer` class (native/bindings/tokenizer_wrap.cc). */
export interface NativeTokenizer {
  /** Ids of one text, special tokens included, at most `maxLength` of them (its first tokens, or with 'start' its last). */
  encode(text: string, maxLength: number, truncate?: 'end' | 'start'): Int32Array;
  /**
   * All ids concatenated, one length per text; `truncated[i]` is 1 when text i had more tokens than
   * fit; `unknown[i]` counts text i's ids that are the unknown token; offsets are UTF-16 [start, end) pairs per id.
   * `truncate`: the side every text is cut on, or one per text (1: 'start').
   */
  encodeBatch(
    texts: readonly string[],
    maxLength: number,
    withOffsets: boolean,
    truncate?: 'end' | 'start' | Uint8Array,
  ): { ids: Int32Array; lengths: Int32Array; truncated: Uint8Array; unknown: Int32Array; offsets?: Int32Array };
  tokenId(token: string): number | null;
  /** Special tokens the post-processor adds around a text ([CLS] and [SEP]: 2). */
  readonly specialTokenCount: number;
  /** truncation.max_length in the file, 0 when it sets none. */
  readonly fileMaxLength: number;
}

export interface NativeTokenizerConstructor {
  /** Loads a tokenizer.json; throws an Error with the reason when it cannot. */
  new (path: string): NativeTokenizer;
}
