#include "kernels/gemm_bf16.h"

#include <stdexcept>

#include "cpu_features.h"
#include "kernels/autotune.h"

namespace svc::train {

bool bf16_products() {
#if SVC_ARCH_X86
  return cpu_features().avx512bf16;
#else
  return false;
#endif
}

void pack_b_bf16(bool tb, const float* b, int ldb, int k, int n, PackedBf16& out, Workers* workers) {
  out.n = n;
  out.k = k;
  out.data.resize(static_cast<size_t>((n + kBf16PanelWidth - 1) / kBf16PanelWidth) * out.padded_pairs() *
                  kBf16PanelWidth * 2);
  if (n <= 0 || k <= 0) return;
#if SVC_ARCH_X86
  if (bf16_products()) return detail::pack_b_bf16_avx512(tb, b, ldb, k, n, out, workers);
#endif
  throw std::logic_error("pack_b_bf16: this CPU has no bf16 products");
}

void gemm_bf16(bool ta, int m, const float* a, int lda, const PackedBf16& b, float beta, float* c, int ldc,
               Workers* workers) {
  if (beta != 0.f && beta != 1.f) throw std::invalid_argument("gemm_bf16: beta must be 0 or 1");
  if (m <= 0 || b.n <= 0) return;
#if SVC_ARCH_X86
  // Where the CPU has both, the kernel the measurement picked (kernels/autotune.h); AMX until one is made.
  if (bf16_products() && cpu_features().amx && bf16_kernel() == Bf16Kernel::kAmx)
    return detail::gemm_bf16_amx(ta, m, a, lda, b, beta, c, ldc, workers);
  if (bf16_products()) return detail::gemm_bf16_avx512(ta, m, a, lda, b, beta, c, ldc, workers);
#endif
  throw std::logic_error("gemm_bf16: this CPU has no bf16 products");
}

}  // namespace svc::train
