// AVX-512 GEMM tile: 14 rows x 32 columns of C in 28 zmm accumulators; per step
// of k, two panel loads and 14 broadcasts feed 28 FMAs.
#include <immintrin.h>

#include <array>
#include <utility>

#include "kernels/gemm_tile.h"

namespace svc {
namespace detail {
namespace {

constexpr int kMr = 14;
constexpr int kNr = 32;

template <int MR>
void tile_fixed(const float* a, const float* panel, const float* bias, int k, float* c, int64_t ldc,
                int cols) {
  __m512 acc0[MR], acc1[MR];
  const __m512 bias0 = _mm512_load_ps(bias), bias1 = _mm512_load_ps(bias + 16);
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    acc0[r] = bias0;
    acc1[r] = bias1;
  }
  for (int kk = 0; kk < k; ++kk) {
    const __m512 b0 = _mm512_load_ps(panel + kk * kNr);
    const __m512 b1 = _mm512_load_ps(panel + kk * kNr + 16);
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

using FixedFn = void (*)(const float*, const float*, const float*, int, float*, int64_t, int);
template <int... R>
constexpr auto make_table(std::integer_sequence<int, R...>) {
  return std::array<FixedFn, sizeof...(R)>{tile_fixed<R + 1>...};
}

void tile(const float* a, int rows, const float* panel, const float* bias, int k, float* c, int64_t ldc,
          int cols, const float* residual, Epilogue epilogue) {
  static constexpr auto kTable = make_table(std::make_integer_sequence<int, kMr>{});
  kTable[rows - 1](a, panel, bias, k, c, ldc, cols);
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}

}  // namespace

GemmKernel gemm_kernel_avx512() { return {kMr, kNr, tile}; }

}  // namespace detail
}  // namespace svc
