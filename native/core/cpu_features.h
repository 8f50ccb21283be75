// Run-time CPU feature detection: kernels are compiled for several ISAs and the
// fastest one this CPU supports is picked once, at first use.
#pragma once

// Which kernel files this build holds: *_avx2.cc / *_avx512.cc are compiled for x86-64 only,
// *_neon.cc / *_dotprod.cc for aarch64 only (CMakeLists.txt, binding.gyp), so dispatch code
// names their entry points only under these.
#if defined(__x86_64__) || defined(_M_X64)
#define SVC_ARCH_X86 1
#elif defined(__aarch64__) || defined(_M_ARM64)
#define SVC_ARCH_ARM64 1
#endif

namespace svc {

struct CpuFeatures {
  bool avx2 = false;     // with FMA and F16C
  bool avxvnni = false;  // AVX-VNNI: vpdpbusd on ymm (VEX), for the AVX2 int8 kernel; SVC_ISA=avx2 caps it away
  bool avx512 = false;   // F, BW, DQ, VL
  bool avx512vnni = false;
  bool avx512bf16 = false;  // vdpbf16ps (training's bf16 products); SVC_ISA=avx512 caps it away like VNNI
  // AMX (tiles with bf16 and int8 products), with the OS's permission to use the tile state
  // granted to this process; SVC_ISA=avx512-vnni or lower caps it away.
  bool amx = false;
  bool neon = false;          // aarch64 Advanced SIMD (every aarch64 CPU has it)
  bool neon_dotprod = false;  // plus the dot-product extension (SDOT), Armv8.2 and later
};

// Detected once; SVC_ISA=scalar|avx2|avx2-vnni|avx512|avx512-vnni (x86) or scalar|neon (aarch64) in the environment
// caps the level (for tests and benchmarks).
const CpuFeatures& cpu_features();

// The kernel levels, lowest first. On one architecture each level holds everything below it, so a dispatch
// asks `cpu_level() >= CpuLevel::kAvx2` instead of ordering the feature flags again; across architectures the
// order means nothing (x86 dispatch code compares only with x86 levels, under SVC_ARCH_X86).
enum class CpuLevel { kScalar, kNeon, kNeonDotprod, kAvx2, kAvx2Vnni, kAvx512, kAvx512Vnni, kAvx512Amx };

// The best level cpu_features() allows: the one place that orders the flags.
CpuLevel cpu_level();

// "avx512-amx", "avx512-vnni", "avx512", "avx2-vnni", "avx2", "neon-dotprod", "neon" or "scalar": cpu_level()'s name.
const char* cpu_level_name();

}  // namespace svc
