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
// Keys in blocks of 16 lanes: scores of one query against 16 keys are 16-wide FMAs
// over the head dimension (K transposed and zero-padded once per head), so short
// texts need no horizontal reductions. Needs dh % 16 == 0 (64 for BERT heads).
void attention_head_avx512(const float* q, const float* k, const float* v, int64_t ld, int len, int dh, float scale,
                           float* out, int64_t ldo, float* scratch) {
  const int lp = (len + 15) / 16 * 16;
  float* kt = scratch;                                     // [dh x lp]
  float* scores = scratch + static_cast<int64_t>(dh) * lp;  // [lp]
  for (int d = 0; d < dh; ++d)
    for (int j = len; j < lp; ++j) kt[static_cast<int64_t>(d) * lp + j] = 0;
  for (int j = 0; j < len; ++j)
    for (int d = 0; d < dh; ++d) kt[static_cast<int64_t>(d) * lp + j] = k[j * ld + d];
  const int blocks = lp / 16;
  const __mmask16 tail = static_cast<__mmask16>(len % 16 == 0 ? 0xFFFF : (1u << (len % 16)) - 1);
  for (int i = 0; i < len; ++i) {
    const float* qi = q + i * ld;
    // Up to 4 key blocks per pass keep the partial scores in registers.
    for (int b0 = 0; b0 < blocks; b0 += 4) {
      const int nb = blocks - b0 < 4 ? blocks - b0 : 4;
      __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
      for (int d = 0; d < dh; ++d) {
        const __m512 qd = _mm512_set1_ps(qi[d] * scale);
        const float* kd = kt + static_cast<int64_t>(d) * lp + b0 * 16;
        for (int b = 0; b < nb; ++b) acc[b] = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kd + b * 16), acc[b]);
      }
      for (int b = 0; b < nb; ++b) _mm512_storeu_ps(scores + (b0 + b) * 16, acc[b]);
    }
    __m512 vmax = _mm512_set1_ps(-3.0e38f);
    for (int b = 0; b < blocks; ++b)
      vmax = _mm512_mask_max_ps(vmax, b == blocks - 1 ? tail : 0xFFFF, vmax, _mm512_loadu_ps(scores + b * 16));
    const float mx = _mm512_reduce_max_ps(vmax);
    const float inv = 1.0f / vec::exp_shifted_sum(scores, len, mx);
    float* oi = out + i * ldo;
    for (int d0 = 0; d0 < dh; d0 += 64) {
      const int nv = dh - d0 < 64 ? (dh - d0) / 16 : 4;
      __m512 o[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
      for (int j = 0; j < len; ++j) {
        const __m512 p = _mm512_set1_ps(scores[j] * inv);
        const float* vj = v + j * ld + d0;
        for (int c = 0; c < nv; ++c) o[c] = _mm512_fmadd_ps(p, _mm512_loadu_ps(vj + c * 16), o[c]);
      }
      for (int c = 0; c < nv; ++c) _mm512_storeu_ps(oi + d0 + c * 16, o[c]);
    }
  }
}
#endif

void attention_head_impl(const float* q, const float* k, const float* v, int64_t ld, int len, int dh, float scale,
                         float* out, int64_t ldo, float* scratch) {
#if defined(__AVX512F__)
  if (dh % 16 == 0) return attention_head_avx512(q, k, v, ld, len, dh, scale, out, ldo, scratch);
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
