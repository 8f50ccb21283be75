// The non-GEMM kernels of a BERT layer, dispatched once per process to the best
// ISA build (the same plain-loop code compiled with scalar, AVX2 or AVX-512 flags).
#pragma once

#include <cstdint>

#include "kernels/gemm.h"

namespace svc {

struct OpsTable {
  // In place over `rows` rows of `n` floats (stride ld): y = (x - mean) / sqrt(var + eps) * gamma + beta.
  void (*layer_norm)(float* x, int64_t ld, int64_t rows, int n, const float* gamma, const float* beta, float eps);
  // Self-attention of one head of one text. q, k, v point at the head's first column in a
  // [len x ld] matrix; out is [len x ldo]; scratch holds attention_scratch_floats(len, dh) floats.
  // position_bias: null, or MPNet's relative position bias of this head (encoder/relative_position.h):
  // position_bias[i - j + len - 1] is added to the scaled score of query i and key j.
  void (*attention_head)(const float* q, const float* k, const float* v, int64_t ld, int len, int dh, float scale,
                         const float* position_bias, float* out, int64_t ldo, float* scratch);
  // The same with int8 products where this level has a kernel that pays (attention_s8_impl.h);
  // the int8 encoder calls it. Same scratch.
  void (*attention_head_s8)(const float* q, const float* k, const float* v, int64_t ld, int len, int dh, float scale,
                            const float* position_bias, float* out, int64_t ldo, float* scratch);
  // out[j] += x[j] for n entries (mean pooling accumulates rows).
  void (*add_into)(float* out, const float* x, int n);
  // In place over `rows` rows of `n` floats (stride ld): x += bias (+ residual, same stride), then
  // GELU with kGelu. The epilogue of a product that cannot apply it in its tiles (bf16).
  void (*bias_epilogue)(float* x, int64_t ld, int64_t rows, int n, const float* bias, const float* residual,
                        Epilogue epilogue);
};

const OpsTable& ops();

// Scratch of one attention_head call, enough for every level: the fused kernels keep K packed
// ([dh x len rounded up to 24 keys]), one block of at most 16 queries' scores and queries; the
// plain loop, K transposed and one row; the int8 kernels, K and V as bytes, one block's scores.
inline int64_t attention_scratch_floats(int len, int dh) {
  return (static_cast<int64_t>(dh) + 16) * (static_cast<int64_t>(len) + dh + 16);
}

namespace detail {
OpsTable ops_scalar();
// vnni: the CPU has the level's vpdpbusd (AVX-VNNI for AVX2, AVX512_VNNI for AVX-512), which the int8
// attention uses.
OpsTable ops_avx2(bool vnni);
OpsTable ops_avx512(bool vnni);
// The int8 attention's arithmetic as a plain loop (attention_s8_impl.h): what every int8
// attention kernel is tested against. Same arguments and scratch as attention_head.
void attention_head_s8_reference(const float* q, const float* k, const float* v, int64_t ld, int len, int dh,
                                 float scale, const float* position_bias, float* out, int64_t ldo, float* scratch);
}  // namespace detail

}  // namespace svc
