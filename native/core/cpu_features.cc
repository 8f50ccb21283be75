#include "cpu_features.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define SVC_X86 1
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
  const bool ymm_state = (xcr0 & 0x6) == 0x6;     // SSE + AVX registers saved by the OS
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;   // plus opmask and ZMM
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return f;
  f.avx2 = ymm_state && fma && f16c && (ebx & bit_AVX2);
  f.avx512 = f.avx2 && zmm_state && (ebx & bit_AVX512F) && (ebx & bit_AVX512BW) &&
             (ebx & bit_AVX512DQ) && (ebx & bit_AVX512VL);
  f.avx512vnni = f.avx512 && (ecx & bit_AVX512VNNI);
  // Leaf 7, sub-leaf 1, EAX: bit 4 AVX-VNNI, bit 5 AVX512_BF16.
  if (f.avx2 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
    f.avxvnni = (eax >> 4) & 1;
    f.avx512bf16 = f.avx512 && ((eax >> 5) & 1);
  }
#endif
#if defined(__aarch64__)
  f.neon = true;  // Advanced SIMD is part of the aarch64 base architecture
#if defined(__linux__)
  f.neon_dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
#endif
  // An explicit cap lets tests run every code path on one machine.
  if (const char* cap = std::getenv("SVC_ISA")) {
    if (std::strcmp(cap, "scalar") == 0) f = CpuFeatures{};
    else if (std::strcmp(cap, "avx2") == 0) f.avx512 = f.avx512vnni = f.avx512bf16 = f.avxvnni = false;
    else if (std::strcmp(cap, "avx2-vnni") == 0) f.avx512 = f.avx512vnni = f.avx512bf16 = false;
    else if (std::strcmp(cap, "avx512") == 0) f.avx512vnni = f.avx512bf16 = false;
    else if (std::strcmp(cap, "neon") == 0) f.neon_dotprod = false;
  }
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();  // thread-safe static init
  return features;
}

const char* cpu_level_name() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512vnni) return "avx512-vnni";
  if (f.avx512) return "avx512";
  if (f.avx2 && f.avxvnni) return "avx2-vnni";
  if (f.avx2) return "avx2";
  if (f.neon_dotprod) return "neon-dotprod";
  if (f.neon) return "neon";
  return "scalar";
}

}  // namespace svc
