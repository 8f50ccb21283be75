import { loadAddon } from './load.js';
import type { NativeCpuInfo } from './binding.js';

export { loadAddon, packageRoot } from './load.js';
export type { NativeAddon, NativeCpuInfo, NativeTrainer, NativeTrainerOptions } from './binding.js';
export { EncoderTrainer, trainSelfTest } from './trainer.js';
export type { EncoderTrainerOptions, PairBatch, TrainStep } from './trainer.js';

/**
 * What the native core detected about this CPU, and so which kernels it runs.
 *
 * @example
 * ```ts
 * import { cpuInfo } from 'svc-classify';
 * cpuInfo(); // { level: 'avx512-vnni', avx2: true, avxvnni: true, avx512: true, avx512vnni: true, bf16: false, amx: false, neon: false, neonDotprod: false }
 * ```
 */
export function cpuInfo(): NativeCpuInfo {
  return loadAddon().cpuInfo();
}
