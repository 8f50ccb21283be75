// Bodies of the OpsTable kernels. Included by ops.cc, ops_avx2.cc and
// ops_avx512.cc, each compiled with its own ISA flags; internal linkage keeps the
// copies apart.
#pragma once

#include <cmath>

#include "kernels/ops.h"
#include "kernels/vec_math.h"

namespace svc {
namespace {

void layer_norm_impl(float* x, int64_t ld, int64_t rows, int n, const float* gamma, const float* beta, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * ld;
    const float mean = vec::sum(row, n) / static_cast<float>(n);
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) {
        const float d = row[i + j] - mean;
        acc[j] += d * d;
      }
    float var = 0;
    for (; i < n; ++i) var += (row[i] - mean) * (row[i] - mean);
    for (int j = 0; j < 16; ++j) var += acc[j];
    const float rstd = 1.0f / std::sqrt(var / static_cast<float>(n) + eps);
    for (int j = 0; j < n; ++j) row[j] = (row[j] - mean) * rstd * gamma[j] + beta[j];
  }
}

#if defined(__AVX512F__)
// One head of one text as two small register-blocked GEMMs (dh = 32 for MiniLM, 64 for
// BERT-base): S = Q K^T with 16 keys per zmm and 8 queries per block (K transposed and
// zero-padded once per head), softmax per row, then O = P V with 24 zmm accumulators
// (12 queries x 32 dims, or 6 x 64).
// Row tails reuse the last row (valid memory, results not stored), so every inner loop
// has fixed trip counts and stays in registers.
template <int kDh>
void attention_head_avx512(const float* q, const float* k, const float* v, int64_t ld, int len, float scale,
                           float* out, int64_t ldo, float* scratch) {
  constexpr int kVecs = kDh / 16;       // zmm per row of V and O
  constexpr int kRows = 24 / kVecs;     // queries per P V block
  const int lp = (len + 15) / 16 * 16;
  float* kt = scratch;                                   // [kDh x lp]
  float* scores = scratch + static_cast<int64_t>(kDh) * lp;  // [len x lp]
  // Transpose K 16 keys at a time with masked gathers: lanes past the text's end read
  // nothing and come out zero, which is the padding.
  const __m512i rows16 = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(static_cast<int>(ld)));
  for (int j0 = 0; j0 < lp; j0 += 16) {
    const __mmask16 valid = static_cast<__mmask16>(len - j0 >= 16 ? 0xFFFF : (1u << (len - j0)) - 1);
    const float* base = k + static_cast<int64_t>(j0) * ld;
    for (int d = 0; d < kDh; ++d)
      _mm512_storeu_ps(kt + d * lp + j0, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), valid, rows16, base + d, 4));
  }
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int i0 = 0; i0 < len; i0 += 8) {
    const float* qrow[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) qrow[r] = q + (i0 + r < len ? i0 + r : len - 1) * ld;
    for (int j0 = 0; j0 < lp; j0 += 16) {
      __m512 acc[8];
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) acc[r] = _mm512_setzero_ps();
      for (int d = 0; d < kDh; ++d) {
        const __m512 kv = _mm512_loadu_ps(kt + d * lp + j0);
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(qrow[r][d]), kv, acc[r]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r)
        if (i0 + r < len) _mm512_storeu_ps(scores + (i0 + r) * lp + j0, _mm512_mul_ps(acc[r], vscale));
    }
  }
  const __mmask16 tail = static_cast<__mmask16>(len % 16 == 0 ? 0xFFFF : (1u << (len % 16)) - 1);
  for (int i = 0; i < len; ++i) {
    float* row = scores + i * lp;
    __m512 vmax = _mm512_set1_ps(-3.0e38f);
    for (int j0 = 0; j0 < lp; j0 += 16)
      vmax = _mm512_mask_max_ps(vmax, j0 + 16 >= lp ? tail : 0xFFFF, vmax, _mm512_loadu_ps(row + j0));
    const float inv = 1.0f / vec::exp_shifted_sum(row, len, _mm512_reduce_max_ps(vmax));
    const __m512 vinv = _mm512_set1_ps(inv);
    for (int j0 = 0; j0 + 16 <= len; j0 += 16) _mm512_storeu_ps(row + j0, _mm512_mul_ps(_mm512_loadu_ps(row + j0), vinv));
    for (int j = len / 16 * 16; j < len; ++j) row[j] *= inv;
  }
  for (int i0 = 0; i0 < len; i0 += kRows) {
    const float* prow[kRows];
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) prow[r] = scores + (i0 + r < len ? i0 + r : len - 1) * lp;
    __m512 o[kRows][kVecs];
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < kVecs; ++c) o[r][c] = _mm512_setzero_ps();
    for (int j = 0; j < len; ++j) {
      const float* vj = v + j * ld;
      __m512 vv[kVecs];
#pragma GCC unroll 4
      for (int c = 0; c < kVecs; ++c) vv[c] = _mm512_loadu_ps(vj + 16 * c);
#pragma GCC unroll 12
      for (int r = 0; r < kRows; ++r) {
        const __m512 p = _mm512_set1_ps(prow[r][j]);
#pragma GCC unroll 4
        for (int c = 0; c < kVecs; ++c) o[r][c] = _mm512_fmadd_ps(p, vv[c], o[r][c]);
      }
    }
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      if (i0 + r >= len) break;
      float* oi = out + (i0 + r) * ldo;
#pragma GCC unroll 4
      for (int c = 0; c < kVecs; ++c) _mm512_storeu_ps(oi + 16 * c, o[r][c]);
    }
  }
}
#endif

void attention_head_impl(const float* q, const float* k, const float* v, int64_t ld, int len, int dh, float scale,
                         float* out, int64_t ldo, float* scratch) {
#if defined(__AVX512F__)
  if (dh == 32) return attention_head_avx512<32>(q, k, v, ld, len, scale, out, ldo, scratch);
  if (dh == 64) return attention_head_avx512<64>(q, k, v, ld, len, scale, out, ldo, scratch);
#endif
  float* kt = scratch;              // [dh x len]: K transposed, so scores are axpys over keys
  float* scores = scratch + static_cast<int64_t>(dh) * len;  // [len]
  for (int j = 0; j < len; ++j)
    for (int d = 0; d < dh; ++d) kt[static_cast<int64_t>(d) * len + j] = k[j * ld + d];
  for (int i = 0; i < len; ++i) {
    const float* qi = q + i * ld;
    for (int j = 0; j < len; ++j) scores[j] = 0;
    for (int d = 0; d < dh; ++d) {
      const float qd = qi[d] * scale;
      const float* kd = kt + static_cast<int64_t>(d) * len;
      for (int j = 0; j < len; ++j) scores[j] += qd * kd[j];
    }
    float mx = scores[0];
    for (int j = 1; j < len; ++j) mx = scores[j] > mx ? scores[j] : mx;
    const float inv = 1.0f / vec::exp_shifted_sum(scores, len, mx);
    float* oi = out + i * ldo;
    for (int d = 0; d < dh; ++d) oi[d] = 0;
    for (int j = 0; j < len; ++j) {
      const float p = scores[j] * inv;
      const float* vj = v + j * ld;
      for (int d = 0; d < dh; ++d) oi[d] += p * vj[d];
    }
  }
}

void add_into_impl(float* out, const float* x, int n) {
  for (int j = 0; j < n; ++j) out[j] += x[j];
}

OpsTable make_ops_table() { return {layer_norm_impl, attention_head_impl, add_into_impl}; }

}  // namespace
}  // namespace svc
