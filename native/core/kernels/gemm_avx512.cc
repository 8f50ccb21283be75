// AVX-512 GEMM tile: 14 rows x 32 columns of C in 28 zmm accumulators; per step
// of k, two panel loads and 14 broadcasts feed 28 FMAs.
// GCC 12 reports _mm512_undefined_*() inside its own intrinsic headers as uninitialized use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "kernels/gemm_tile.h"

namespace svc {
namespace detail {
namespace {

constexpr int kMr = 14;
constexpr int kNr = 32;

// kHalf: the panel holds fp16 bits, widened exactly to fp32 in registers (vcvtph2ps).
template <int MR, bool kHalf>
void tile_fixed(const float* a, const void* panel, const float* bias, int k, float* c, int64_t ldc, int cols) {
  const float* pf = static_cast<const float*>(panel);
  const uint16_t* ph = static_cast<const uint16_t*>(panel);
  __m512 acc0[MR], acc1[MR];
  const __m512 bias0 = _mm512_load_ps(bias), bias1 = _mm512_load_ps(bias + 16);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    acc0[r] = bias0;
    acc1[r] = bias1;
  }
  for (int kk = 0; kk < k; ++kk) {
    __m512 b0, b1;
    // Panels stream from memory when few rows share them (one text): fetch ahead of use.
    if constexpr (kHalf) {
      _mm_prefetch(reinterpret_cast<const char*>(ph + (kk + 24) * kNr), _MM_HINT_T0);
    } else {
      _mm_prefetch(reinterpret_cast<const char*>(pf + (kk + 12) * kNr), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(pf + (kk + 12) * kNr + 16), _MM_HINT_T0);
    }
    if constexpr (kHalf) {
      b0 = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(ph + kk * kNr)));
      b1 = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(ph + kk * kNr + 16)));
    } else {
      b0 = _mm512_load_ps(pf + kk * kNr);
      b1 = _mm512_load_ps(pf + kk * kNr + 16);
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[kk * kMr + r]);
      acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
    }
  }
  if (cols == kNr) {
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      _mm512_storeu_ps(c + r * ldc, acc0[r]);
      _mm512_storeu_ps(c + r * ldc + 16, acc1[r]);
    }
  } else {
    const __mmask16 m0 = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
    const __mmask16 m1 = cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      _mm512_mask_storeu_ps(c + r * ldc, m0, acc0[r]);
      _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc1[r]);
    }
  }
}

template <bool kHalf>
void tile(const float* a, int rows, const void* panel, const float* bias, int k, float* c, int64_t ldc, int cols,
          const float* residual, Epilogue epilogue) {
  static constexpr auto kTable = row_tiles<kMr>([](auto r) { return &tile_fixed<decltype(r)::value, kHalf>; });
  kTable[rows - 1](a, panel, bias, k, c, ldc, cols);
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}

}  // namespace

GemmKernel gemm_kernel_avx512() { return {kMr, kNr, tile<false>, tile<true>}; }

}  // namespace detail
}  // namespace svc
