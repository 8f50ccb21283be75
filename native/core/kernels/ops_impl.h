// Bodies of the OpsTable kernels. Included by ops.cc, ops_avx2.cc and
// ops_avx512.cc, each compiled with its own ISA flags; internal linkage keeps the
// copies apart.
#pragma once

#include <cmath>

#include "kernels/attention_impl.h"
#include "kernels/attention_s8_impl.h"
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

void attention_head_impl(const float* q, const float* k, const float* v, int64_t ld, int len, int dh, float scale,
                         const float* position_bias, float* out, int64_t ldo, float* scratch) {
#if defined(__AVX512F__) || defined(__AVX2__)
  if (dh == 32) return attention_head_fused<32>(q, k, v, ld, len, scale, position_bias, out, ldo, scratch);
  if (dh == 64) return attention_head_fused<64>(q, k, v, ld, len, scale, position_bias, out, ldo, scratch);
#endif
  // The reference every vector level is tested against (attention_test), and the scalar level.
  float* kt = scratch;                                       // [dh x len]: K transposed, so scores are axpys over keys
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
    if (position_bias)
      for (int j = 0; j < len; ++j) scores[j] += position_bias[i - j + len - 1];
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

// The int8 encoder's attention: int8 products where they pay (head size 32 at AVX2, and at AVX-512
// with VNNI; kVnni: the CPU has this level's vpdpbusd), else the fp32 kernel of this level.
template <bool kVnni>
void attention_head_s8_impl(const float* q, const float* k, const float* v, int64_t ld, int len, int dh, float scale,
                            const float* position_bias, float* out, int64_t ldo, float* scratch) {
#if defined(__AVX512F__)
  if (kVnni && dh == 32)
    return position_bias ? attention_head_s8_ymm<true, true>(q, k, v, ld, len, scale, position_bias, out, ldo, scratch)
                         : attention_head_s8_ymm<true, false>(q, k, v, ld, len, scale, nullptr, out, ldo, scratch);
#elif defined(__AVX2__)
  if (dh == 32)
    return position_bias ? attention_head_s8_ymm<kVnni, true>(q, k, v, ld, len, scale, position_bias, out, ldo, scratch)
                         : attention_head_s8_ymm<kVnni, false>(q, k, v, ld, len, scale, nullptr, out, ldo, scratch);
#endif
  attention_head_impl(q, k, v, ld, len, dh, scale, position_bias, out, ldo, scratch);
}

void add_into_impl(float* out, const float* x, int n) {
  for (int j = 0; j < n; ++j) out[j] += x[j];
}

void bias_epilogue_impl(float* x, int64_t ld, int64_t rows, int n, const float* bias, const float* residual,
                        Epilogue epilogue) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * ld;
    if (residual) {
      const float* res = residual + r * ld;
      for (int j = 0; j < n; ++j) row[j] += bias[j] + res[j];
    } else {
      for (int j = 0; j < n; ++j) row[j] += bias[j];
    }
    if (epilogue == Epilogue::kGelu) vec::gelu_inplace(row, n);
  }
}

OpsTable make_ops_table(bool vnni) {
  return {layer_norm_impl, attention_head_impl, vnni ? attention_head_s8_impl<true> : attention_head_s8_impl<false>,
          add_into_impl, bias_epilogue_impl};
}

}  // namespace
}  // namespace svc
