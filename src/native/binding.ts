/**
 * The contract of the compiled addon (build/Release/svc_classify.node): every
 * export with its exact signature. Nothing outside src/native/ imports the addon.
 * Only primitives and typed arrays cross the boundary.
 */

export interface NativeCpuInfo {
  /** The kernel level in use: "avx512-vnni", "avx512", "avx2" or "scalar". */
  level: 'avx512-vnni' | 'avx512' | 'avx2' | 'scalar';
  avx2: boolean;
  avx512: boolean;
  avx512vnni: boolean;
}

export interface NativeAddon {
  cpuInfo(): NativeCpuInfo;
  napiVersion: number;
}
