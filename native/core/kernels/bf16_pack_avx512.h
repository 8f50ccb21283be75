// Packing helpers shared by the bf16 product kernels (gemm_bf16_avx512.cc and
// gemm_bf16_amx_avx512.cc). Include only from files built with the AVX-512 flags and
// AVX512_BF16 enabled (see either file's target pragma).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace svc::train::detail {
namespace {

// 32 floats (lo: the first 16, hi: the next 16) as 32 bf16 in the same order, rounded to nearest even.
inline __m512i to_bf16(__m512 lo, __m512 hi) { return (__m512i)_mm512_cvtne2ps_pbh(hi, lo); }

// Two rows of 16 floats as 16 bf16 pairs (u32 lane j = bf16(r0[j]) | bf16(r1[j]) << 16).
inline __m512i pair_rows(__m512 r0, __m512 r1) {
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                              6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(interleave, to_bf16(r0, r1));
}

inline __mmask16 first(int count) {
  return count >= 16 ? static_cast<__mmask16>(0xffff) : count <= 0 ? 0 : static_cast<__mmask16>((1u << count) - 1);
}

// r[i] lane j -> r[j] lane i: a 16 x 16 transpose of 32-bit lanes in three rounds.
inline void transpose16(__m512i r[16]) {
  __m512i a[16], b[16];
  for (int i = 0; i < 16; i += 2) {
    a[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    a[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // b[4k + c], 128-bit lane L: lane 4L + c of rows 4k..4k+3.
  for (int k = 0; k < 16; k += 4) {
    b[k] = _mm512_unpacklo_epi64(a[k], a[k + 2]);
    b[k + 1] = _mm512_unpackhi_epi64(a[k], a[k + 2]);
    b[k + 2] = _mm512_unpacklo_epi64(a[k + 1], a[k + 3]);
    b[k + 3] = _mm512_unpackhi_epi64(a[k + 1], a[k + 3]);
  }
  for (int c = 0; c < 4; ++c) {  // gather the four 128-bit pieces of lanes 4L + c
    const __m512i e0 = _mm512_shuffle_i32x4(b[c], b[4 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i e1 = _mm512_shuffle_i32x4(b[c], b[4 + c], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512i e2 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i e3 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
    r[c] = _mm512_shuffle_i32x4(e0, e2, _MM_SHUFFLE(2, 0, 2, 0));
    r[8 + c] = _mm512_shuffle_i32x4(e0, e2, _MM_SHUFFLE(3, 1, 3, 1));
    r[4 + c] = _mm512_shuffle_i32x4(e1, e3, _MM_SHUFFLE(2, 0, 2, 0));
    r[12 + c] = _mm512_shuffle_i32x4(e1, e3, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// Up to 16 rows of k floats (row i at src + i·ld, rows from `count` on read as zero) as bf16
// pairs along k, transposed: dst[q·stride + i] = pair q of row i, for the lanes in `lanes`.
inline void pairs_transposed(const float* src, int64_t ld, int count, int k, uint32_t* dst, int64_t stride,
                             __mmask16 lanes) {
  const int kp = (k + 1) / 2;
  for (int q0 = 0; q0 < kp; q0 += 16) {
    const int p0 = 2 * q0;
    const __mmask16 m0 = first(k - p0), m1 = first(k - p0 - 16);
    __m512i r[16];
    for (int i = 0; i < 16; ++i) {
      const float* row = src + i * ld + p0;
      r[i] = i < count ? to_bf16(_mm512_maskz_loadu_ps(m0, row), _mm512_maskz_loadu_ps(m1, row + 16))
                       : _mm512_setzero_si512();
    }
    transpose16(r);
    for (int q = 0, qs = std::min(16, kp - q0); q < qs; ++q)
      _mm512_mask_storeu_epi32(dst + static_cast<int64_t>(q0 + q) * stride, lanes, r[q]);
  }
}

}  // namespace
}  // namespace svc::train::detail
