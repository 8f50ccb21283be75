// The element-wise fp32 loops of a training step (GELU forward and backward,
// dropout masks, attention's softmax, the AdamW update, LoRA's row kernels), compiled once per ISA from the same plain
// code (vector_ops_impl.h) and picked at run time like the engine's kernels.
// They use the engine's polynomial exp/erf (kernels/vec_math.h), so they
// vectorize; the double-precision path of the gradient checks uses libm.
#pragma once

#include <cstdint>

namespace svc::train {

struct AdamWStep {
  float beta1, beta2, step_size, inv_sqrt_bc2, eps, decay;
};

struct VectorOps {
  // y = x·Φ(x) and cdf = Φ(x).
  void (*gelu_forward)(int64_t n, const float* x, float* y, float* cdf);
  // dx = dy·(Φ(x) + x·φ(x)); dx may alias dy.
  void (*gelu_backward)(int64_t n, const float* x, const float* cdf, const float* dy, float* dx);
  // x[i] *= keep(index0 + i) ? scale : 0, with keep() as DropoutStream::keep.
  void (*dropout)(uint64_t key, uint32_t threshold, float scale, uint64_t index0, int64_t n, float* x);
  // c[m x n] += op(a)[m x k] · b[k x n], for the small per-head attention products.
  void (*small_gemm)(int m, int n, int k, const float* a, int64_t lda, bool trans_a, const float* b, int64_t ldb,
                     float* c, int64_t ldc);
  // Attention's dropout mask kept as bits, each of `rows` rows of n cells in (n + 7) / 8 bytes (bit
  // j % 8 of byte j / 8): mask_bits sets the bits where x != 0; apply_mask_bits writes
  // y = bit ? x·scale : 0 (y may be x).
  void (*mask_bits)(int64_t rows, int64_t n, const float* x, uint8_t* bits);
  void (*apply_mask_bits)(int64_t rows, int64_t n, const uint8_t* bits, float scale, const float* x, float* y);
  // Attention's softmax, each of `rows` rows of n in place: x = softmax(x·scale) (scale > 0).
  void (*softmax_rows)(int64_t rows, int64_t n, float scale, float* x);
  // Its backward, each row: d = p ⊙ (d - Σ p⊙d) · scale.
  void (*softmax_backward_rows)(int64_t rows, int64_t n, float scale, const float* p, float* d);
  // One AdamW update of n parameters (torch.optim.AdamW arithmetic).
  void (*adamw)(int64_t n, float* p, const float* g, float* m, float* v, const uint8_t* decay_mask, const AdamWStep& s);
  // out[i] = fp16 bits h[i] as fp32, exactly (F16C where the build has it).
  void (*widen_f16)(int64_t n, const uint16_t* h, float* out);
  // LoRA's row kernels (lora_rows_impl.h): u = s·x·Aᵀ, y += u·Bᵀ from Aᵀ [in x r] and Bᵀ [r x out];
  // and g = s·dy·B, dx += g·A (dx may be null), da += gᵀ·x, dbt += uᵀ·dy.
  void (*lora_forward_rows)(int rows, int in, int out, int r, float s, const float* x, const float* at, const float* bt,
                            float* u, float* y, int64_t ldy);
  void (*lora_backward_rows)(int rows, int in, int out, int r, float s, const float* x, const float* a, const float* b,
                             const float* u, const float* dy, int64_t ldy, float* dx, float* g, float* da, float* dbt);
};

const VectorOps& vector_ops();

namespace detail {
VectorOps vector_ops_scalar();
VectorOps vector_ops_avx2();
VectorOps vector_ops_avx512();
}  // namespace detail

}  // namespace svc::train
