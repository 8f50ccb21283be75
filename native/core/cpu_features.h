// Run-time CPU feature detection: kernels are compiled for several ISAs and the
// fastest one this CPU supports is picked once, at first use.
#pragma once

namespace svc {

struct CpuFeatures {
  bool avx2 = false;      // with FMA and F16C
  bool avx512 = false;    // F, BW, DQ, VL
  bool avx512vnni = false;
};

// Detected once; SVC_ISA=scalar|avx2|avx512 in the environment caps the level (for tests and benchmarks).
const CpuFeatures& cpu_features();

// "avx512-vnni", "avx512", "avx2" or "scalar": the best level cpu_features() allows.
const char* cpu_level_name();

}  // namespace svc
