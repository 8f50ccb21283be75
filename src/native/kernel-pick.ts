/**
 * The choice among measured kernels, kept pure so it is tested with given measurements: the fastest candidate whose
 * output stays within the accuracy bound, fp32 unless another one is clearly faster.
 */

/**
 * A kernel that can run the encoder's linear layers: fp32, bf16 with vdpbf16ps, bf16 on AMX tiles, or bf16 emulated
 * with fp32 instructions (any CPU, slower than fp32, only when SVC_KERNEL forces it: it gives a machine without bf16
 * the outputs a bf16 CPU gives, to test with).
 */
export type KernelName = 'fp32' | 'bf16-vector' | 'bf16-amx' | 'bf16-emulated';

export const kKernelNames: readonly KernelName[] = Object.freeze(['fp32', 'bf16-vector', 'bf16-amx', 'bf16-emulated']);

/** One kernel's measurement on this CPU (native/core/kernels/autotune.h). */
export interface KernelRate {
  /** Which kernel was timed. */
  kernel: KernelName;
  /** Best round's rate on the measured shape (256 x 384 x 1536), in billions of floating-point operations a second. */
  gflops: number;
  /** ‖C − C_fp32‖ / ‖C_fp32‖ on that shape; 0 for fp32. */
  relError: number;
}

/**
 * The largest relative error a bf16 kernel may show on the measured product: 2⁻⁷, the bound of two roundings to bf16
 * (a correct kernel shows about 2⁻⁹). Within it the encoder's embeddings stay at cosine >= 0.9999 to fp32 and
 * probabilities within 1e-3, which test/native/encoder.test.ts checks on CPUs with bf16 products.
 */
export const kMaxRelError = 1 / 128;

/**
 * How much faster than fp32 a bf16 kernel must measure to be picked: 1.1x. Below that the gain is within the noise
 * of a few tens of milliseconds of timing on a shared machine, and fp32's exact answers are worth more.
 */
export const kMinSpeedup = 1.1;

export interface KernelPick {
  /** What precision 'auto' runs, and what fine-tuning's products use. */
  kernel: KernelName;
  /** The faster bf16 kernel where the CPU has both: what an explicit 'bf16' request runs. Null without bf16. */
  bf16Kernel: 'amx' | 'vector' | 'emulated' | null;
}

/**
 * Picks among `rates` (fp32 must be there): the fastest kernel within `maxRelError` that beats fp32 by `minSpeedup`,
 * else fp32. `force` names the kernel to use instead, without regard to the rates; it must be one the CPU has.
 */
export function pickKernel(
  rates: readonly KernelRate[],
  available: readonly KernelName[],
  options: { force?: KernelName; maxRelError?: number; minSpeedup?: number } = {},
): KernelPick {
  const { force, maxRelError = kMaxRelError, minSpeedup = kMinSpeedup } = options;
  if (!available.includes('fp32')) throw new Error('pickKernel: fp32 is always a candidate');
  const rateOf = (name: KernelName): number => rates.find((r) => r.kernel === name)?.gflops ?? 0;
  // Between the two bf16 kernels the faster one, whatever fp32 does: an explicit bf16 request runs it.
  const bf16Kernels = (['bf16-amx', 'bf16-vector'] as const).filter((k) => available.includes(k));
  const fasterBf16 = bf16Kernels.reduce<KernelName | null>((best, k) => (best === null || rateOf(k) > rateOf(best) ? k : best), null);
  const bf16Kernel = fasterBf16 === 'bf16-amx' ? 'amx' : fasterBf16 === 'bf16-vector' ? 'vector' : null;
  if (force !== undefined) {
    if (!available.includes(force)) {
      throw new Error(`kernel '${force}' is not available on this CPU (available: ${available.join(', ')})`);
    }
    const forcedBf16 = force === 'bf16-amx' ? 'amx' : force === 'bf16-vector' ? 'vector' : force === 'bf16-emulated' ? 'emulated' : null;
    return { kernel: force, bf16Kernel: forcedBf16 ?? bf16Kernel };
  }
  const fp32 = rateOf('fp32');
  let kernel: KernelName = 'fp32';
  for (const r of rates) {
    if (r.kernel === 'fp32' || !available.includes(r.kernel)) continue;
    if (!(r.relError <= maxRelError) || !(r.gflops >= fp32 * minSpeedup)) continue;
    if (kernel === 'fp32' || r.gflops > rateOf(kernel)) kernel = r.kernel;
  }
  return { kernel, bf16Kernel };
}
