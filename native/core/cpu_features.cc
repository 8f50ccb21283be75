#include "cpu_features.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define SVC_X86 1
#endif

#if defined(SVC_X86) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)  // older kernel headers lack the name; the bit is ABI
#endif
#endif

namespace svc {
namespace {

#ifdef SVC_X86
unsigned long long read_xcr0() {
  unsigned int eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

// Linux hands out AMX's 8 KiB tile state only to processes that ask for it
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); the grant covers every thread.
bool request_amx_state() {
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;  // other systems: the vector kernels (no AMX)
#endif
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#ifdef SVC_X86
  unsigned int eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = ecx & bit_OSXSAVE;
  const bool fma = ecx & bit_FMA;
  const bool f16c = ecx & bit_F16C;
  if (!osxsave) return f;
  const unsigned long long xcr0 = read_xcr0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;    // SSE + AVX registers saved by the OS
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;  // plus opmask and ZMM
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return f;
  f.avx2 = ymm_state && fma && f16c && (ebx & bit_AVX2);
  f.avx512 = f.avx2 && zmm_state && (ebx & bit_AVX512F) && (ebx & bit_AVX512BW) && (ebx & bit_AVX512DQ) &&
             (ebx & bit_AVX512VL);
  f.avx512vnni = f.avx512 && (ecx & bit_AVX512VNNI);
  // Leaf 7, sub-leaf 0, EDX: bit 22 AMX-BF16, bit 24 AMX-TILE, bit 25 AMX-INT8; XCR0 bits 17 and
  // 18: the OS saves the tile configuration and data.
  const bool amx_cpu = ((edx >> 22) & 1) && ((edx >> 24) & 1) && ((edx >> 25) & 1);
  const bool tile_state = (xcr0 & 0x60000) == 0x60000;
  // Leaf 7, sub-leaf 1, EAX: bit 4 AVX-VNNI, bit 5 AVX512_BF16.
  if (f.avx2 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
    f.avxvnni = (eax >> 4) & 1;
    f.avx512bf16 = f.avx512 && ((eax >> 5) & 1);
  }
  // The kernels that use tiles also use AVX-512 VNNI and BF16 around them.
  f.amx = f.avx512vnni && f.avx512bf16 && amx_cpu && tile_state;
#endif
#if defined(__aarch64__)
  f.neon = true;  // Advanced SIMD is part of the aarch64 base architecture
#if defined(__linux__)
  f.neon_dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
#endif
  // An explicit cap lets tests run every code path on one machine.
  if (const char* cap = std::getenv("SVC_ISA")) {
    if (std::strcmp(cap, "scalar") == 0)
      f = CpuFeatures{};
    else if (std::strcmp(cap, "avx2") == 0)
      f.avx512 = f.avx512vnni = f.avx512bf16 = f.avxvnni = f.amx = false;
    else if (std::strcmp(cap, "avx2-vnni") == 0)
      f.avx512 = f.avx512vnni = f.avx512bf16 = f.amx = false;
    else if (std::strcmp(cap, "avx512") == 0)
      f.avx512vnni = f.avx512bf16 = f.amx = false;
    else if (std::strcmp(cap, "avx512-vnni") == 0)
      f.amx = false;
    else if (std::strcmp(cap, "neon") == 0)
      f.neon_dotprod = false;
  }
#ifdef SVC_X86
  // Asked for only when a kernel will use it, and after the cap (a capped run leaves the
  // process's signal frames at their usual size).
  if (f.amx) f.amx = request_amx_state();
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();  // thread-safe static init
  return features;
}

CpuLevel cpu_level() {
  static const CpuLevel level = [] {
    const CpuFeatures& f = cpu_features();
    if (f.amx) return CpuLevel::kAvx512Amx;
    if (f.avx512vnni) return CpuLevel::kAvx512Vnni;
    if (f.avx512) return CpuLevel::kAvx512;
    if (f.avx2 && f.avxvnni) return CpuLevel::kAvx2Vnni;
    if (f.avx2) return CpuLevel::kAvx2;
    if (f.neon_dotprod) return CpuLevel::kNeonDotprod;
    if (f.neon) return CpuLevel::kNeon;
    return CpuLevel::kScalar;
  }();
  return level;
}

const char* cpu_level_name() {
  // Indexed by CpuLevel, lowest first.
  static constexpr const char* kNames[] = {"scalar",    "neon",   "neon-dotprod", "avx2",
                                           "avx2-vnni", "avx512", "avx512-vnni",  "avx512-amx"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<int>(CpuLevel::kAvx512Amx) + 1);
  return kNames[static_cast<int>(cpu_level())];
}

}  // namespace svc
