// A LoRA adapter held by the native core on its own (A and B as PEFT's file stores them: fp16 from our trainer,
// widened to fp32 a row at a time inside each product), for the
// segmented path: one shared base encoder predicts a batch mixing many adapter models, each run of texts through
// its adapter. About 0.66 MB at rank 8 (fp16) on the six linear layers of svc-small's six layers.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { callNative, SvcError } from '../errors.js';
import { kAdapterConfigFile, kAdapterFile, kLoraModules, parseAdapterConfig } from '../model/adapter.js';
import { isBaseModelName, resolveBaseModel } from '../model/base-models.js';
import type { NativeAdapter } from './binding.js';
import { loadAddon } from './load.js';

/**
 * An adapter's weights file and, from its adapter_config.json, what the native core checks it against: the rank, the
 * scale, and the adapted modules as a bit mask (bit i: `kLoraModules[i]`).
 */
export function findAdapter(path: unknown): { file: string; rank: number; scale: number; modules: number } {
  if (typeof path !== 'string' || path.length === 0) throw new TypeError('options.adapter must be a non-empty string');
  const dir = existsSync(path) && statSync(path).isDirectory() ? path : dirname(path);
  const file = dir === path ? join(dir, kAdapterFile) : path;
  const configFile = join(dir, kAdapterConfigFile);
  if (!existsSync(file) || !existsSync(configFile)) {
    throw new SvcError('invalid_request', `'${path}' is not a LoRA adapter (${kAdapterFile} with ${kAdapterConfigFile} beside it)`, {
      param: 'adapter',
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(configFile, 'utf8'));
  } catch (cause) {
    throw new SvcError('invalid_request', `${configFile} is not valid JSON`, { cause });
  }
  const settings = parseAdapterConfig(raw, configFile);
  const modules = settings.modules.reduce((mask, m) => mask | (1 << kLoraModules.indexOf(m)), 0);
  return { file, rank: settings.rank, scale: settings.scale, modules };
}

/** Runs of a batch's texts and the adapter each runs through (null: the base alone); counts add up to the batch. */
export interface AdapterSegments {
  counts: ArrayLike<number>;
  adapters: readonly (Adapter | null)[];
}

/**
 * A LoRA adapter loaded on its own, to predict through a shared base {@link Encoder} (`embedIdsSync`'s segments)
 * instead of a merged copy of the base per adapter.
 *
 * @example
 * ```ts
 * const adapter = Adapter.load('./my-model', { base: 'svc-small' });
 * adapter.bytes; // 663552 at rank 8 on all six linear layers (fp16; an F32 file: 1327104)
 * adapter.dispose();
 * ```
 */
export class Adapter {
  #native: NativeAdapter | null;
  readonly bytes: number;

  private constructor(native: NativeAdapter) {
    this.#native = native;
    this.bytes = native.bytes;
  }

  /**
   * Reads an adapter (a directory with PEFT's two files, or the safetensors file with its config beside it) and checks
   * it against `base` (a base model name or a directory with config.json) and its adapter_config.json, natively: a
   * tensor of a module the config does not adapt, one it adapts but the file lacks, a wrong shape or a NaN or infinity
   * throws `SvcError('invalid_request')` naming the tensor.
   */
  static load(path: string, options: { base: string }): Adapter {
    const { file, rank, scale, modules } = findAdapter(path);
    const base = options.base;
    const configFile = isBaseModelName(base) ? resolveBaseModel(base).configFile : join(base, 'config.json');
    const { Adapter: NativeAdapterClass } = loadAddon();
    try {
      return callNative(() => new Adapter(new NativeAdapterClass(configFile, file, rank, scale, modules)));
    } catch (error) {
      // What the core refuses here is the adapter file (its message names the file and the tensor): the model's fault.
      if (error instanceof SvcError && error.code === 'native_error')
        throw new SvcError('invalid_request', error.message, { cause: error });
      throw error;
    }
  }

  /** The native handle; throws once disposed. */
  native(): NativeAdapter {
    if (!this.#native) throw new SvcError('invalid_request', 'the adapter has been disposed');
    return this.#native;
  }

  /** Drops this handle; a batch already running with the adapter finishes with it. Idempotent. */
  dispose(): void {
    this.#native?.dispose();
    this.#native = null;
  }
}

/** Checks segments against a batch of `texts` texts and hands out what the native call takes. */
export function nativeSegments(segments: AdapterSegments, texts: number): { counts: Int32Array; adapters: (NativeAdapter | null)[] } {
  const counts = Int32Array.from(segments.counts);
  if (counts.length !== segments.adapters.length) throw new RangeError('segments.counts and segments.adapters differ in length');
  let total = 0;
  for (const n of counts) {
    if (n < 0) throw new RangeError('segments.counts must not be negative');
    total += n;
  }
  if (total !== texts) throw new RangeError(`segments.counts add up to ${total}, the batch holds ${texts} texts`);
  return { counts, adapters: segments.adapters.map((a) => (a === null ? null : a.native())) };
}
