// Bodies of VectorOps, included by one translation unit per ISA.
#pragma once

#include <cmath>

#include "kernels/vec_math.h"
#include "train/rng.h"
#include "train/vector_ops.h"

namespace svc::train::detail {
namespace {  // every ISA's translation unit keeps its own copy

void gelu_forward_impl(int64_t n, const float* __restrict x, float* __restrict y, float* __restrict cdf) {
  for (int64_t i = 0; i < n; ++i) {
    const float phi = 0.5f * (1.0f + svc::vec::fast_erf(x[i] * 0.70710678118654752f));
    cdf[i] = phi;
    y[i] = x[i] * phi;
  }
}

void gelu_backward_impl(int64_t n, const float* __restrict x, const float* __restrict cdf, const float* dy,
                        float* dx) {
  for (int64_t i = 0; i < n; ++i) {
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

inline VectorOps make_vector_ops() {
  return {gelu_forward_impl, gelu_backward_impl, dropout_impl, adamw_impl};
}

}  // namespace
}  // namespace svc::train::detail
