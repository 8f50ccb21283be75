// AVX-512 micro-kernel of the training GEMM: 8 rows x 32 columns held in 16
// zmm accumulators, one broadcast of A per row and two loads of B per k.
#include <immintrin.h>

#include "train/linalg.h"

namespace svc::train {

void gemm_kernel_8x32_avx512(int kc, const float* a, const float* b, float* c, int ldc) {
  __m512 acc[8][2];
  for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(b);
    const __m512 b1 = _mm512_loadu_ps(b + 16);
    for (int r = 0; r < 8; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
    a += 8;
    b += 32;
  }
  for (int r = 0; r < 8; ++r) {
    float* row = c + r * ldc;
    _mm512_storeu_ps(row, _mm512_add_ps(_mm512_loadu_ps(row), acc[r][0]));
    _mm512_storeu_ps(row + 16, _mm512_add_ps(_mm512_loadu_ps(row + 16), acc[r][1]));
  }
}

}  // namespace svc::train
