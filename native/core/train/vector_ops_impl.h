// Bodies of VectorOps, included by one translation unit per ISA.
#pragma once

#include <cmath>

#include "kernels/vec_math.h"
#include "tensor/half.h"
#include "train/lora_rows_impl.h"
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
#elif defined(__AVX2__)
// The same Φ, 8 lanes, on the engine's 8-lane erf.
inline __m256 cdf8(__m256 x) {
  const __m256 erf = svc::vec::erf8(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
  return _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_add_ps(_mm256_set1_ps(1.0f), erf));
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
#elif defined(__AVX2__)
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    const __m256 phi = cdf8(xv);
    _mm256_storeu_ps(cdf + i, phi);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(xv, phi));
  }
#endif
  for (; i < n; ++i) {
    const float phi = 0.5f * (1.0f + svc::vec::fast_erf(x[i] * 0.70710678118654752f));
    cdf[i] = phi;
    y[i] = x[i] * phi;
  }
}

void gelu_backward_impl(int64_t n, const float* __restrict x, const float* __restrict cdf, const float* dy, float* dx) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m512 xv = _mm512_loadu_ps(x + i);
    const __m512 pdf = _mm512_mul_ps(svc::vec::exp16(_mm512_mul_ps(_mm512_set1_ps(-0.5f), _mm512_mul_ps(xv, xv))),
                                     _mm512_set1_ps(0.39894228040143267794f));
    const __m512 d = _mm512_fmadd_ps(xv, pdf, _mm512_loadu_ps(cdf + i));
    _mm512_storeu_ps(dx + i, _mm512_mul_ps(_mm512_loadu_ps(dy + i), d));
  }
#elif defined(__AVX2__)
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    const __m256 pdf = _mm256_mul_ps(svc::vec::exp8(_mm256_mul_ps(_mm256_set1_ps(-0.5f), _mm256_mul_ps(xv, xv))),
                                     _mm256_set1_ps(0.39894228040143267794f));
    const __m256 d = _mm256_fmadd_ps(xv, pdf, _mm256_loadu_ps(cdf + i));
    _mm256_storeu_ps(dx + i, _mm256_mul_ps(_mm256_loadu_ps(dy + i), d));
  }
#endif
  for (; i < n; ++i) {
    const float pdf = svc::vec::fast_exp(-0.5f * x[i] * x[i]) * 0.39894228040143267794f;
    dx[i] = dy[i] * (cdf[i] + x[i] * pdf);
  }
}

#if defined(__AVX2__) && !defined(__AVX512F__)
// AVX2 has no 64-bit multiply (AVX-512's build vectorizes mix64 with vpmullq): the low 64 bits of
// a·b from three 32 x 32 -> 64 products, b a constant.
inline __m256i mul64_lo(__m256i a, __m256i b) {
  const __m256i cross =
      _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b), _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
  return _mm256_add_epi64(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
}

// mix64 (rng.h) of 4 lanes, bit for bit.
inline __m256i mix64x4(__m256i z) {
  z = _mm256_add_epi64(z, _mm256_set1_epi64x(static_cast<int64_t>(0x9e3779b97f4a7c15ull)));
  z = mul64_lo(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)),
               _mm256_set1_epi64x(static_cast<int64_t>(0xbf58476d1ce4e5b9ull)));
  z = mul64_lo(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)),
               _mm256_set1_epi64x(static_cast<int64_t>(0x94d049bb133111ebull)));
  return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}
#endif

void dropout_impl(uint64_t key, uint32_t threshold, float scale, uint64_t index0, int64_t n, float* __restrict x) {
  int64_t i = 0;
#if defined(__AVX2__) && !defined(__AVX512F__)
  // 8 cells a pass: the high 32 bits of each lane's mix, back in cell order, kept when >= threshold.
  const __m256i vkey = _mm256_set1_epi64x(static_cast<int64_t>(key)),
                vthreshold = _mm256_set1_epi32(static_cast<int>(threshold));
  const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256 vscale = _mm256_set1_ps(scale);
  for (; i + 8 <= n; i += 8) {
    const uint64_t at = index0 + static_cast<uint64_t>(i);
    const __m256i lo = _mm256_setr_epi64x(static_cast<int64_t>(at), static_cast<int64_t>(at + 1),
                                          static_cast<int64_t>(at + 2), static_cast<int64_t>(at + 3));
    const __m256i hi = _mm256_add_epi64(lo, _mm256_set1_epi64x(4));
    const __m256i m0 = mix64x4(_mm256_xor_si256(vkey, mix64x4(lo))), m1 = mix64x4(_mm256_xor_si256(vkey, mix64x4(hi)));
    // Dwords: cells 0, 4, 1, 5 | 2, 6, 3, 7 (m0's high halves shifted down, m1's in place), then reordered.
    const __m256i bits = _mm256_permutevar8x32_epi32(_mm256_blend_epi32(_mm256_srli_epi64(m0, 32), m1, 0xAA), order);
    const __m256i keep = _mm256_cmpeq_epi32(_mm256_max_epu32(bits, vthreshold), bits);
    _mm256_storeu_ps(x + i, _mm256_and_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vscale), _mm256_castsi256_ps(keep)));
  }
#endif
  for (; i < n; ++i) {
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

// Row max, then exp(x·scale - max·scale) with the engine's exp polynomial and its sum: the
// row loops of std::exp in the baseline build were a fifth of a long-text step.
void softmax_rows_impl(int64_t rows, int64_t n, float scale, float* x) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict row = x + r * n;
    int64_t j = 0;
    float mx = row[0], total = 0;
#if defined(__AVX512F__)
    __m512 vmax = _mm512_set1_ps(row[0]);
    for (; j + 16 <= n; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(row + j));
    mx = _mm512_reduce_max_ps(vmax);
#elif defined(__AVX2__)
    __m256 vmax = _mm256_set1_ps(row[0]);
    for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(row + j));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, vmax);
    for (const float lane : lanes) mx = lane > mx ? lane : mx;
#endif
    for (; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
    const float shift = mx * scale;  // = max of x·scale: scale > 0 keeps the order
    j = 0;
#if defined(__AVX512F__)
    __m512 acc = _mm512_setzero_ps();
    for (; j + 16 <= n; j += 16) {
      const __m512 e =
          svc::vec::exp16(_mm512_fmsub_ps(_mm512_loadu_ps(row + j), _mm512_set1_ps(scale), _mm512_set1_ps(shift)));
      _mm512_storeu_ps(row + j, e);
      acc = _mm512_add_ps(acc, e);
    }
    total = _mm512_reduce_add_ps(acc);
#elif defined(__AVX2__)
    __m256 acc = _mm256_setzero_ps();
    for (; j + 8 <= n; j += 8) {
      const __m256 e =
          svc::vec::exp8(_mm256_fmsub_ps(_mm256_loadu_ps(row + j), _mm256_set1_ps(scale), _mm256_set1_ps(shift)));
      _mm256_storeu_ps(row + j, e);
      acc = _mm256_add_ps(acc, e);
    }
    alignas(32) float sums[8];
    _mm256_store_ps(sums, acc);
    for (const float part : sums) total += part;
#endif
    for (; j < n; ++j) total += (row[j] = svc::vec::fast_exp(row[j] * scale - shift));
    const float inv = 1.0f / total;
    for (j = 0; j < n; ++j) row[j] *= inv;
  }
}

void softmax_backward_rows_impl(int64_t rows, int64_t n, float scale, const float* p, float* d) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict prow = p + r * n;
    float* __restrict drow = d + r * n;
    const float dot = svc::vec::dot(prow, drow, static_cast<int>(n));
    for (int64_t j = 0; j < n; ++j) drow[j] = prow[j] * (drow[j] - dot) * scale;
  }
}

void mask_bits_impl(int64_t rows, int64_t n, const float* __restrict x, uint8_t* __restrict bits) {
  const int64_t row_bytes = (n + 7) / 8;
  for (int64_t r = 0; r < rows; ++r, x += n, bits += row_bytes) {
    int64_t j = 0;
#if defined(__AVX2__) || defined(__AVX512F__)
    for (; j + 8 <= n; j += 8)
      bits[j / 8] = static_cast<uint8_t>(
          _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + j), _mm256_setzero_ps(), _CMP_NEQ_UQ)));
#endif
    for (; j < n; j += 8) {
      uint8_t byte = 0;
      for (int64_t k = j; k < j + 8 && k < n; ++k) byte |= static_cast<uint8_t>(x[k] != 0.0f) << (k - j);
      bits[j / 8] = byte;
    }
  }
}

void apply_mask_bits_impl(int64_t rows, int64_t n, const uint8_t* bits, float scale, const float* x, float* y) {
  const int64_t row_bytes = (n + 7) / 8;
  for (int64_t r = 0; r < rows; ++r, x += n, y += n, bits += row_bytes) {
    int64_t j = 0;
#if defined(__AVX2__) || defined(__AVX512F__)
    // Each lane tests its own bit of the byte: the same and(x·scale, keep) as dropout_impl.
    const __m256i select = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256 vscale = _mm256_set1_ps(scale);
    for (; j + 8 <= n; j += 8) {
      const __m256i keep = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(bits[j / 8]), select), select);
      _mm256_storeu_ps(y + j, _mm256_and_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), vscale), _mm256_castsi256_ps(keep)));
    }
#endif
    for (; j < n; ++j) y[j] = (bits[j / 8] >> (j % 8)) & 1u ? x[j] * scale : 0.0f;
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

void widen_f16_impl(int64_t n, const uint16_t* __restrict h, float* __restrict out) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
#endif
  for (; i < n; ++i) out[i] = svc::half_to_float(h[i]);
}

void lora_forward_rows_impl(int rows, int in, int out, int r, float s, const float* x, const float* at, const float* bt,
                            float* u, float* y, int64_t ldy) {
  lora_forward_rows<float>(rows, in, out, r, s, x, at, bt, u, y, ldy);
}

void lora_backward_rows_impl(int rows, int in, int out, int r, float s, const float* x, const float* a, const float* b,
                             const float* u, const float* dy, int64_t ldy, float* dx, float* g, float* da, float* dbt) {
  lora_backward_rows<float>(rows, in, out, r, s, x, a, b, u, dy, ldy, dx, g, da, dbt);
}

inline VectorOps make_vector_ops() {
  return {gelu_forward_impl, gelu_backward_impl,   dropout_impl,           small_gemm_impl,
          mask_bits_impl,    apply_mask_bits_impl, softmax_rows_impl,      softmax_backward_rows_impl,
          adamw_impl,        widen_f16_impl,       lora_forward_rows_impl, lora_backward_rows_impl};
}

}  // namespace
}  // namespace svc::train::detail
