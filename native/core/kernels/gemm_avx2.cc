// AVX2 GEMM tile: 6 rows x 16 columns of C in 12 ymm accumulators; per step
// of k, two panel loads and 6 broadcasts feed 12 FMAs.
#include <immintrin.h>

#include "kernels/gemm_tile.h"

namespace svc {
namespace detail {
namespace {

constexpr int kMr = 6;
constexpr int kNr = 16;

template <int MR>
void tile_fixed(const float* a, const float* panel, const float* bias, int k, float* c, int64_t ldc, int cols) {
  __m256 acc0[MR], acc1[MR];
  const __m256 bias0 = _mm256_load_ps(bias), bias1 = _mm256_load_ps(bias + 8);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    acc0[r] = bias0;
    acc1[r] = bias1;
  }
  for (int kk = 0; kk < k; ++kk) {
    const __m256 b0 = _mm256_load_ps(panel + kk * kNr);
    const __m256 b1 = _mm256_load_ps(panel + kk * kNr + 8);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_set1_ps(a[kk * kMr + r]);
      acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
    }
  }
  if (cols == kNr) {
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      _mm256_storeu_ps(c + r * ldc, acc0[r]);
      _mm256_storeu_ps(c + r * ldc + 8, acc1[r]);
    }
  } else {
    alignas(32) float tmp[kNr];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      _mm256_store_ps(tmp, acc0[r]);
      _mm256_store_ps(tmp + 8, acc1[r]);
      for (int j = 0; j < cols; ++j) c[r * ldc + j] = tmp[j];
    }
  }
}

void tile(const float* a, int rows, const void* panel, const float* bias, int k, float* c, int64_t ldc, int cols,
          const float* residual, Epilogue epilogue) {
  static constexpr auto kTable = row_tiles<kMr>([](auto r) { return &tile_fixed<decltype(r)::value>; });
  kTable[rows - 1](a, static_cast<const float*>(panel), bias, k, c, ldc, cols);
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}

}  // namespace

GemmKernel gemm_kernel_avx2() { return {kMr, kNr, tile, nullptr}; }

}  // namespace detail
}  // namespace svc
