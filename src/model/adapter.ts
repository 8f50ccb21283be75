// A fine-tuned model's low-rank adapter (LoRA) in Hugging Face PEFT's layout, so that a Python user loads it onto
// the base model with `PeftModel.from_pretrained(base, dir)`: `adapter_model.safetensors` holds, for each adapted
// linear layer W (out x in) of each encoder layer, `A` (r x in) and `B` (out x r) under PEFT's names, and
// `adapter_config.json` says r, lora_alpha and which modules were adapted. The encoder computes W + (alpha / r) B A.
import { mkdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { SvcError } from '../errors.js';
import type { BaseModel } from './base-models.js';
import { writeFileDurably } from './durable.js';
import type { BertConfig } from './onnx/bert-weights.js';
import { encodeSafetensors, SafetensorsFile } from './safetensors.js';

/** The adapter's weights in a model directory. */
export const kAdapterFile = 'adapter_model.safetensors';
/** The adapter's settings in a model directory (PEFT's `LoraConfig`). */
export const kAdapterConfigFile = 'adapter_config.json';

/** Whether a model's encoder file (see `ModelFiles.encoderFile`) is an adapter on its base rather than a whole encoder. */
export function isAdapterFile(path: string): boolean {
  return basename(path) === kAdapterFile;
}

/** The linear layers of a BERT layer an adapter may adapt, by their module path inside `encoder.layer.<i>`. */
export const kLoraModules = Object.freeze([
  'attention.self.query',
  'attention.self.key',
  'attention.self.value',
  'attention.output.dense',
  'intermediate.dense',
  'output.dense',
] as const);
export type LoraModule = (typeof kLoraModules)[number];

/** PEFT's prefix of every tensor of a LoRA on a `BertModel` (task type FEATURE_EXTRACTION). */
const kTensorPrefix = 'base_model.model.';
/** Adapter ranks this library reads: far past any useful one, small enough that a bad file cannot allocate much. */
export const kMaxAdapterRank = 256;

/**
 * The PEFT tensor name of one LoRA matrix.
 *
 * @example
 * ```ts
 * loraTensorName(0, 'attention.self.query', 'A'); // 'base_model.model.encoder.layer.0.attention.self.query.lora_A.weight'
 * ```
 */
export function loraTensorName(layer: number, module: LoraModule, which: 'A' | 'B'): string {
  return `${kTensorPrefix}encoder.layer.${layer}.${module}.lora_${which}.weight`;
}

/** An adapter's settings, as adapter_config.json declares them. */
export interface AdapterSettings {
  readonly rank: number;
  readonly alpha: number;
  /** The adapted modules, in {@link kLoraModules} order; the same in every layer. */
  readonly modules: readonly LoraModule[];
  /** What B A is multiplied by: lora_alpha / r (lora_alpha / sqrt(r) with `use_rslora`). */
  readonly scale: number;
}

/** One LoRA matrix as the trainer hands it over: `shape` is [r, in] for A, [out, r] for B. */
export interface AdapterTensor {
  readonly name: string;
  readonly shape: readonly [number, number];
  readonly data: Float32Array;
}

/** The (in, out) sizes of a module's weight. */
function moduleShape(module: LoraModule, config: Pick<BertConfig, 'hiddenSize' | 'intermediateSize'>): { in: number; out: number } {
  const h = config.hiddenSize;
  if (module === 'intermediate.dense') return { in: h, out: config.intermediateSize };
  if (module === 'output.dense') return { in: config.intermediateSize, out: h };
  return { in: h, out: h };
}

/**
 * PEFT matches a list entry of `target_modules` against the end of a module's path (`output.dense` also
 * matches `attention.output.dense`), and a string as a regular expression over the whole path. The list is
 * what Python users read most easily; a set a list cannot say exactly becomes a pattern.
 */
function targetModules(modules: readonly LoraModule[]): string[] | string {
  const wanted = new Set(modules);
  const list = kLoraModules
    .filter((m) => wanted.has(m))
    .map((m) => (m.startsWith('attention.self.') ? m.slice('attention.self.'.length) : m));
  const matched = kLoraModules.filter((m) => list.some((t) => matchesSuffix(`encoder.layer.0.${m}`, t)));
  if (matched.length === wanted.size) return list;
  return `encoder\\.layer\\.\\d+\\.(${kLoraModules
    .filter((m) => wanted.has(m))
    .map((m) => m.replaceAll('.', '\\.'))
    .join('|')})`;
}

const matchesSuffix = (path: string, target: string) => path === target || path.endsWith(`.${target}`);

/**
 * adapter_config.json for an adapter on `baseModel`: PEFT's LoRA layout, with `base_model_name_or_path` the Hugging
 * Face name of the base's weights.
 *
 * @example
 * ```ts
 * adapterConfigJson({ rank: 8, alpha: 16, modules: kLoraModules }, resolveBaseModel('svc-small'));
 * // { peft_type: 'LORA', task_type: 'FEATURE_EXTRACTION', r: 8, lora_alpha: 16,
 * //   target_modules: ['query', 'key', 'value', 'attention.output.dense', 'intermediate.dense', 'output.dense'],
 * //   base_model_name_or_path: 'sentence-transformers/all-MiniLM-L6-v2', bias: 'none', fan_in_fan_out: false, ... }
 * ```
 */
export function adapterConfigJson(
  settings: Pick<AdapterSettings, 'rank' | 'alpha' | 'modules'>,
  baseModel: Pick<BaseModel, 'upstream'>,
): Record<string, unknown> {
  return {
    peft_type: 'LORA',
    task_type: 'FEATURE_EXTRACTION',
    base_model_name_or_path: baseModel.upstream,
    revision: null,
    inference_mode: true,
    r: settings.rank,
    lora_alpha: settings.alpha,
    lora_dropout: 0,
    target_modules: targetModules(settings.modules),
    bias: 'none',
    fan_in_fan_out: false,
    use_rslora: false,
    use_dora: false,
    init_lora_weights: true,
    layers_to_transform: null,
    layers_pattern: null,
    rank_pattern: {},
    alpha_pattern: {},
    modules_to_save: null,
  };
}

const emptyOrNull = (v: unknown) =>
  v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && Object.keys(v as object).length === 0);

/**
 * Parses adapter_config.json and refuses what this library's encoder cannot apply (a clear
 * `SvcError('invalid_request')` naming the field): anything but LoRA, biases, `fan_in_fan_out`, DoRA, per-layer
 * ranks or layer subsets, and target modules that adapt none of the six linear layers of a BERT layer.
 *
 * @example
 * ```ts
 * parseAdapterConfig(JSON.parse(readFileSync('model/adapter_config.json', 'utf8')), 'model/adapter_config.json');
 * // { rank: 8, alpha: 16, modules: ['attention.self.query', ...], scale: 2 }
 * ```
 */
export function parseAdapterConfig(raw: unknown, file: string): AdapterSettings {
  const fail = (what: string): never => {
    throw new SvcError('invalid_request', `${file}: ${what}`);
  };
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) fail('is not a JSON object');
  const c = raw as Record<string, unknown>;
  if (c.peft_type !== 'LORA') fail(`peft_type ${JSON.stringify(c.peft_type)} is not "LORA"`);
  const rank = c.r as number;
  if (typeof rank !== 'number' || !Number.isInteger(rank) || rank < 1 || rank > kMaxAdapterRank) {
    fail(`r must be an integer from 1 to ${kMaxAdapterRank}`);
  }
  const alpha = c.lora_alpha as number;
  if (typeof alpha !== 'number' || !Number.isFinite(alpha) || alpha <= 0) fail('lora_alpha must be a positive number');
  if ((c.bias ?? 'none') !== 'none') fail(`bias ${JSON.stringify(c.bias)} is not supported (only "none")`);
  if (c.fan_in_fan_out === true) fail('fan_in_fan_out is not supported (BERT linear layers are [out, in])');
  if (c.use_dora === true) fail('use_dora is not supported');
  for (const key of ['rank_pattern', 'alpha_pattern', 'layers_to_transform', 'modules_to_save'] as const) {
    if (!emptyOrNull(c[key])) fail(`${key} is not supported (every adapted layer has the same r and alpha)`);
  }
  const targets = c.target_modules;
  let modules: LoraModule[];
  if (typeof targets === 'string') {
    let pattern: RegExp;
    try {
      pattern = new RegExp(`^(?:${targets})$`);
    } catch {
      return fail('target_modules is not a regular expression this library reads');
    }
    modules = kLoraModules.filter((m) => pattern.test(`encoder.layer.0.${m}`));
  } else if (Array.isArray(targets) && targets.every((t) => typeof t === 'string')) {
    modules = kLoraModules.filter((m) => (targets as string[]).some((t) => matchesSuffix(`encoder.layer.0.${m}`, t)));
  } else {
    return fail('target_modules must be a list of module names or a pattern');
  }
  if (modules.length === 0) fail(`target_modules ${JSON.stringify(targets)} adapts none of ${kLoraModules.join(', ')}`);
  const scale = c.use_rslora === true ? alpha / Math.sqrt(rank) : alpha / rank;
  return Object.freeze({ rank, alpha, modules: Object.freeze(modules), scale });
}

/** A validated adapter: its settings and its A and B per adapted linear layer (`encoder.layer.<i>.<module>`). */
export interface Adapter {
  readonly settings: AdapterSettings;
  readonly pairs: ReadonlyMap<string, { readonly a: Float32Array; readonly b: Float32Array; readonly in: number; readonly out: number }>;
}

/**
 * Checks LoRA tensors against the settings and the base's config, naming the tensor at fault: every name one of
 * an adapted module's A or B in a layer the base has, none missing, A [r, in] and B [out, r], every value finite.
 * `read(name)` gives a tensor's shape and fp32 values. The native encoder checks the same when it merges.
 */
export function checkAdapterTensors(
  names: readonly string[],
  read: (name: string) => { shape: readonly number[]; values: () => Float32Array },
  settings: AdapterSettings,
  config: Pick<BertConfig, 'hiddenSize' | 'intermediateSize' | 'numLayers'>,
  source: string,
): Adapter {
  const fail = (name: string, what: string): never => {
    throw new SvcError('invalid_request', `${source}: tensor '${name}' ${what}`);
  };
  const expected = new Set<string>();
  for (let layer = 0; layer < config.numLayers; layer++) {
    for (const module of settings.modules) for (const which of ['A', 'B'] as const) expected.add(loraTensorName(layer, module, which));
  }
  for (const name of names) {
    if (!expected.has(name)) {
      fail(name, `is not a LoRA weight of the adapted modules (${settings.modules.join(', ')}) in the base's ${config.numLayers} layers`);
    }
  }
  const present = new Set(names);
  const pairs = new Map<string, { a: Float32Array; b: Float32Array; in: number; out: number }>();
  for (let layer = 0; layer < config.numLayers; layer++) {
    for (const module of settings.modules) {
      const size = moduleShape(module, config);
      const take = (which: 'A' | 'B', shape: [number, number]) => {
        const name = loraTensorName(layer, module, which);
        if (!present.has(name)) fail(name, 'is missing (adapter_config.json adapts this module)');
        const tensor = read(name);
        if (tensor.shape.length !== 2 || tensor.shape[0] !== shape[0] || tensor.shape[1] !== shape[1]) {
          fail(name, `has shape [${tensor.shape.join(', ')}], expected [${shape.join(', ')}] (r = ${settings.rank} and the base's config)`);
        }
        const values = tensor.values();
        const bad = firstNonFinite(values);
        if (bad >= 0) fail(name, `holds a non-finite value at element ${bad}`);
        return values;
      };
      pairs.set(`encoder.layer.${layer}.${module}`, {
        a: take('A', [settings.rank, size.in]),
        b: take('B', [size.out, settings.rank]),
        ...size,
      });
    }
  }
  return Object.freeze({ settings, pairs });
}

/**
 * The index of the first NaN or infinity, or -1. A plain loop: every cold load of an adapter model checks its
 * 331,776 values (rank 8), and findIndex's callback per value cost it some 5 ms of the first predict.
 */
function firstNonFinite(values: Float32Array): number {
  for (let i = 0; i < values.length; i++) if (values[i]! - values[i]! !== 0) return i; // NaN for NaN and +-Infinity
  return -1;
}

async function readJson(file: string): Promise<unknown> {
  const text = await readFile(file, 'utf8').catch((cause: NodeJS.ErrnoException) => {
    throw new SvcError(cause.code === 'ENOENT' ? 'not_found' : 'internal', `the adapter: cannot read ${file}`, { cause });
  });
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new SvcError('invalid_request', `${file} is not valid JSON`, { cause });
  }
}

/** Reads and checks an adapter's settings (adapter_config.json). */
export async function readAdapterSettings(configFile: string): Promise<AdapterSettings> {
  return parseAdapterConfig(await readJson(configFile), configFile);
}

/**
 * Reads an adapter (its config file and weights file) and checks it against the base's config; rejects with
 * `SvcError('invalid_request')` naming the tensor or field at fault.
 */
export async function readAdapter(configFile: string, weightsFile: string, config: BertConfig): Promise<Adapter> {
  const settings = await readAdapterSettings(configFile);
  let file: SafetensorsFile;
  try {
    file = SafetensorsFile.parse(await readFile(weightsFile), weightsFile);
  } catch (cause) {
    if (cause instanceof SvcError && cause.code === 'internal') throw new SvcError('invalid_request', cause.message, { cause });
    throw new SvcError('not_found', `the adapter: cannot read ${weightsFile}`, { cause });
  }
  return checkAdapterTensors(
    file.names,
    (name) => ({
      shape: file.info(name).shape,
      values: () => {
        try {
          return file.float32(name);
        } catch (cause) {
          throw new SvcError('invalid_request', `${weightsFile}: tensor '${name}' is not a floating-point tensor`, { cause });
        }
      },
    }),
    settings,
    config,
    weightsFile,
  );
}

/** How adapter weights are stored: fp16 halves the file (0.59 MB at rank 8 on six layers of svc-small). */
export type AdapterDtype = 'F16' | 'F32';
export const kAdapterDtype: AdapterDtype = 'F16';
const kMaxFloat16 = 65504;

/**
 * Writes adapter_model.safetensors (tensors in PEFT's names, in layer and module order) and adapter_config.json
 * into `dir`, each durably. The tensors are checked first, as a reader would.
 */
export async function writeAdapter(
  dir: string,
  tensors: readonly AdapterTensor[],
  settings: Pick<AdapterSettings, 'rank' | 'alpha' | 'modules'>,
  baseModel: Pick<BaseModel, 'upstream'>,
  config: BertConfig,
  dtype: AdapterDtype = kAdapterDtype,
): Promise<void> {
  const configJson = adapterConfigJson(settings, baseModel);
  const parsed = parseAdapterConfig(configJson, kAdapterConfigFile);
  const byName = new Map(tensors.map((t) => [t.name, t]));
  if (byName.size !== tensors.length) throw new SvcError('internal', 'the adapter names a tensor twice');
  checkAdapterTensors(
    [...byName.keys()],
    (name) => ({ shape: byName.get(name)!.shape, values: () => byName.get(name)!.data }),
    parsed,
    config,
    'the trained adapter',
  );
  const ordered: AdapterTensor[] = [];
  for (let layer = 0; layer < config.numLayers; layer++) {
    for (const module of parsed.modules)
      for (const which of ['A', 'B'] as const) ordered.push(byName.get(loraTensorName(layer, module, which))!);
  }
  // A value past fp16's range would read back as infinity, which every reader refuses: such an adapter keeps fp32.
  const fits = ordered.every((t) => t.data.every((v) => Math.abs(v) <= kMaxFloat16));
  const bytes = encodeSafetensors(
    ordered.map((t) => ({ name: t.name, shape: t.shape, data: t.data, dtype: fits ? dtype : 'F32' })),
    { format: 'pt' },
  );
  await mkdir(dir, { recursive: true });
  await writeFileDurably(join(dir, kAdapterFile), bytes);
  await writeFileDurably(join(dir, kAdapterConfigFile), `${JSON.stringify(configJson, null, 2)}\n`);
}
