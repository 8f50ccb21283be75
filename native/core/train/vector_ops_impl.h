// Bodies of VectorOps, included by one translation unit per ISA.
#pragma once

#include <cmath>

#include "kernels/vec_math.h"
#include "train/rng.h"
#include "train/vector_ops.h"

namespace svc::train::detail {
namespace {  // every ISA's translation unit keeps its own copy

#if defined(__AVX512F__)
// Φ(x) = 0.5·(1 + erf(x/√2)) for 16 lanes, with the engine's erf polynomial (vec_math.h).
inline __m512 cdf16(__m512 x) {
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
  const __m512 az = _mm512_abs_ps(z);
  const __m512 t =
      _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(az, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 y = _mm512_set1_ps(1.061405429f);
  y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(-1.453152027f));
  y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(1.421413741f));
  y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(-0.284496736f));
  y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(0.254829592f));
  const __m512 e = svc::vec::exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), az), az));
  const __m512 erf_abs = _mm512_fnmadd_ps(_mm512_mul_ps(y, t), e, _mm512_set1_ps(1.0f));
  const __m512 sign = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(INT32_MIN)));
  const __m512 erf = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(erf_abs), _mm512_castps_si512(sign)));
  return _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_add_ps(_mm512_set1_ps(1.0f), erf));
}
#endif

void gelu_forward_impl(int64_t n, const float* __restrict x, float* __restrict y, float* __restrict cdf) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m512 xv = _mm512_loadu_ps(x + i);
    const __m512 phi = cdf16(xv);
    _mm512_storeu_ps(cdf + i, phi);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(xv, phi));
  }
#endif
  for (; i < n; ++i) {
    const float phi = 0.5f * (1.0f + svc::vec::fast_erf(x[i] * 0.70710678118654752f));
    cdf[i] = phi;
    y[i] = x[i] * phi;
  }
}

void gelu_backward_impl(int64_t n, const float* __restrict x, const float* __restrict cdf, const float* dy,
                        float* dx) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m512 xv = _mm512_loadu_ps(x + i);
    const __m512 pdf = _mm512_mul_ps(svc::vec::exp16(_mm512_mul_ps(_mm512_set1_ps(-0.5f), _mm512_mul_ps(xv, xv))),
                                     _mm512_set1_ps(0.39894228040143267794f));
    const __m512 d = _mm512_fmadd_ps(xv, pdf, _mm512_loadu_ps(cdf + i));
    _mm512_storeu_ps(dx + i, _mm512_mul_ps(_mm512_loadu_ps(dy + i), d));
  }
#endif
  for (; i < n; ++i) {
    const float pdf = svc::vec::fast_exp(-0.5f * x[i] * x[i]) * 0.39894228040143267794f;
    dx[i] = dy[i] * (cdf[i] + x[i] * pdf);
  }
}

void dropout_impl(uint64_t key, uint32_t threshold, float scale, uint64_t index0, int64_t n, float* __restrict x) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(mix64(key ^ mix64(index0 + static_cast<uint64_t>(i))) >> 32);
    x[i] = bits >= threshold ? x[i] * scale : 0.0f;
  }
}

void adamw_impl(int64_t n, float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                const uint8_t* __restrict decay_mask, const AdamWStep& s) {
  const float b1 = s.beta1, b2 = s.beta2, step = s.step_size, inv = s.inv_sqrt_bc2, eps = s.eps, decay = s.decay;
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = b1 * m[i] + (1 - b1) * gi;
    const float vi = b2 * v[i] + (1 - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float pi = decay_mask[i] ? p[i] * decay : p[i];
    p[i] = pi - step * mi / (std::sqrt(vi) * inv + eps);
  }
}

void small_gemm_impl(int m, int n, int k, const float* a, int64_t lda, bool trans_a, const float* b, int64_t ldb,
                     float* c, int64_t ldc) {
  for (int i = 0; i < m; ++i) {
    float* __restrict ci = c + i * ldc;
    for (int p = 0; p < k; ++p) {
      const float av = trans_a ? a[p * lda + i] : a[i * lda + p];
      const float* __restrict bp = b + p * ldb;
      for (int j = 0; j < n; ++j) ci[j] += av * bp[j];
    }
  }
}

inline VectorOps make_vector_ops() {
  return {gelu_forward_impl, gelu_backward_impl, dropout_impl, small_gemm_impl, adamw_impl};
}

}  // namespace
}  // namespace svc::train::detail
