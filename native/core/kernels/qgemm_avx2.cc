// AVX2 int8 GEMM tile for CPUs without AVX-512: 2 rows x 32 columns (four ymm
// per row). The u8 x s8 four-term dot product per int32 lane is built from two
// vpmaddwd on bytes widened to 16 bits, which cannot saturate.
#include <immintrin.h>

#include "kernels/gemm_tile.h"
#include "kernels/qgemm.h"

namespace svc {
namespace detail {
namespace {

constexpr int kNr = PackedS8::kNr;
constexpr int kMr = 2;

inline __m256i dot4(__m256i acc, __m256i a_even, __m256i a_odd, __m256i b) {
  const __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
  const __m256i b_odd = _mm256_srai_epi16(b, 8);
  acc = _mm256_add_epi32(acc, _mm256_madd_epi16(a_even, b_even));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a_odd, b_odd));
}

void tile(const uint8_t* a, const float* a_scale, int rows, const int8_t* panel, const float* w_scale,
          const int32_t* offset, const float* bias, int kp, float* c, int64_t ldc, int cols, const float* residual,
          Epilogue epilogue) {
  __m256i acc[kMr][4];
  for (int r = 0; r < kMr; ++r)
    for (int q = 0; q < 4; ++q) acc[r][q] = _mm256_setzero_si256();
  const __m256i lo_mask = _mm256_set1_epi16(0x00FF);
  for (int g = 0; g < kp / 4; ++g) {
    const int8_t* b = panel + g * kNr * 4;
    for (int r = 0; r < rows; ++r) {
      int32_t quad;
      __builtin_memcpy(&quad, a + (g * kMr + r) * 4, 4);
      const __m256i av = _mm256_set1_epi32(quad);
      const __m256i a_even = _mm256_and_si256(av, lo_mask);
      const __m256i a_odd = _mm256_srli_epi16(av, 8);
      for (int q = 0; q < 4; ++q)
        acc[r][q] = dot4(acc[r][q], a_even, a_odd, _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32 * q)));
    }
  }
  for (int r = 0; r < rows; ++r) {
    alignas(32) float tmp[kNr];
    const __m256 as = _mm256_set1_ps(a_scale[r]);
    for (int q = 0; q < 4; ++q) {
      const __m256i off = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset + 8 * q));
      const __m256 scale = _mm256_mul_ps(as, _mm256_loadu_ps(w_scale + 8 * q));
      _mm256_store_ps(tmp + 8 * q, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r][q], off)), scale,
                                                   _mm256_loadu_ps(bias + 8 * q)));
    }
    for (int j = 0; j < cols; ++j) c[r * ldc + j] = tmp[j];
  }
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}

}  // namespace

QGemmKernel qgemm_kernel_avx2() { return {kMr, tile, quantize_block_portable}; }

}  // namespace detail
}  // namespace svc
