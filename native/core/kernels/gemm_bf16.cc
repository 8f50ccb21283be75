#include "kernels/gemm_bf16.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "cpu_features.h"
#include "kernels/autotune.h"
#include "kernels/gemm.h"

namespace svc::train {

bool bf16_emulated() { return bf16_kernel() == Bf16Kernel::kEmulated; }

bool bf16_products() {
  if (bf16_emulated()) return true;
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
  if (bf16_emulated()) return detail::pack_b_bf16_emulated(tb, b, ldb, k, n, out);
#if SVC_ARCH_X86
  if (bf16_products()) return detail::pack_b_bf16_avx512(tb, b, ldb, k, n, out, workers);
#endif
  throw std::logic_error("pack_b_bf16: this CPU has no bf16 products");
}

void gemm_bf16(bool ta, int m, const float* a, int lda, const PackedBf16& b, float beta, float* c, int ldc,
               Workers* workers) {
  if (beta != 0.f && beta != 1.f) throw std::invalid_argument("gemm_bf16: beta must be 0 or 1");
  if (m <= 0 || b.n <= 0) return;
  if (bf16_emulated()) return detail::gemm_bf16_emulated(ta, m, a, lda, b, beta, c, ldc, workers);
#if SVC_ARCH_X86
  // Where the CPU has both, the kernel the measurement picked (kernels/autotune.h); AMX until one is made.
  if (bf16_products() && cpu_features().amx && bf16_kernel() == Bf16Kernel::kAmx)
    return detail::gemm_bf16_amx(ta, m, a, lda, b, beta, c, ldc, workers);
  if (bf16_products()) return detail::gemm_bf16_avx512(ta, m, a, lda, b, beta, c, ldc, workers);
#endif
  throw std::logic_error("gemm_bf16: this CPU has no bf16 products");
}

namespace detail {

namespace {

// Round to nearest even, as vcvtne2ps2bf16 does; a NaN stays a (quiet) NaN.
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

// The layout of gemm_bf16.h: panel p, pair q, column j holds op(B)(2q, 32p+j) then op(B)(2q+1, 32p+j).
void pack_b_bf16_emulated(bool tb, const float* b, int ldb, int k, int n, PackedBf16& out) {
  out.widened = std::make_shared<PackedBf16::Widened>();
  std::fill(out.data.data(), out.data.data() + out.data.size(), uint16_t{0});
  const int panels = (n + kBf16PanelWidth - 1) / kBf16PanelWidth, kpp = out.padded_pairs();
  for (int p = 0; p < panels; ++p)
    for (int r = 0; r < k; ++r)
      for (int j = 0; j < kBf16PanelWidth && p * kBf16PanelWidth + j < n; ++j) {
        const int col = p * kBf16PanelWidth + j;
        const float v = tb ? b[static_cast<int64_t>(col) * ldb + r] : b[static_cast<int64_t>(r) * ldb + col];
        out.data[((static_cast<size_t>(p) * kpp + r / 2) * kBf16PanelWidth + j) * 2 + r % 2] = to_bf16(v);
      }
}

// bf16's arithmetic on fp32 instructions: op(A) rounded to bf16 and op(B) widened from its bf16 panels, then the fp32
// product, whose every multiply of two bf16 values is exact in fp32 and whose sums are fp32, as vdpbf16ps's are.
// Rounding A costs m·k against the product's m·n·k; op(B) is widened and packed for the fp32 kernel once per
// pack_b_bf16 (2n·k).
void gemm_bf16_emulated(bool ta, int m, const float* a, int lda, const PackedBf16& b, float beta, float* c, int ldc,
                        Workers* workers) {
  const int k = b.k, n = b.n, kpp = b.padded_pairs();
  const auto widen = [&] {
    // The fp32 kernel multiplies by Wᵀ with W [n x k]: row `col` of W is column `col` of op(B).
    std::vector<float> w16(static_cast<size_t>(n) * k);
    for (int col = 0; col < n; ++col) {
      const int p = col / kBf16PanelWidth, j = col % kBf16PanelWidth;
      for (int r = 0; r < k; ++r)
        w16[static_cast<size_t>(col) * k + r] =
            from_bf16(b.data[((static_cast<size_t>(p) * kpp + r / 2) * kBf16PanelWidth + j) * 2 + r % 2]);
    }
    return pack_f32(w16.data(), nullptr, n, k);
  };
  // Panels packed by the hardware kernel's pack_b_bf16 (the switch moved after they were made) are widened each call.
  PackedF32 unshared;
  if (b.widened)
    std::call_once(b.widened->once, [&] { b.widened->packed = widen(); });
  else
    unshared = widen();
  std::vector<float> a16(static_cast<size_t>(m) * k);
  for (int i = 0; i < m; ++i)
    for (int r = 0; r < k; ++r)
      a16[static_cast<size_t>(i) * k + r] =
          from_bf16(to_bf16(ta ? a[static_cast<int64_t>(r) * lda + i] : a[static_cast<int64_t>(i) * lda + r]));
  const PackedF32& packed = b.widened ? b.widened->packed : unshared;
  // beta 1 adds the old C as the residual, from a copy: the kernel may write C before it reads the residual.
  std::vector<float> old;
  if (beta != 0.f) {
    old.resize(static_cast<size_t>(m) * ldc);
    for (int i = 0; i < m; ++i)
      std::copy(c + static_cast<int64_t>(i) * ldc, c + static_cast<int64_t>(i) * ldc + n,
                old.data() + static_cast<size_t>(i) * ldc);
  }
  GemmArgs args;
  args.a = a16.data();
  args.lda = k;
  args.m = m;
  args.c = c;
  args.ldc = ldc;
  args.residual = beta != 0.f ? old.data() : nullptr;
  AlignedBuffer<float> scratch;
  gemm_f32(args, packed, scratch, workers);
}

}  // namespace detail

}  // namespace svc::train
