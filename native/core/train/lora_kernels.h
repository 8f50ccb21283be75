// The low-rank path LoRA adds to a frozen linear layer W [out x in]: y += s·(x·Aᵀ)·Bᵀ with
// A [r x in], B [out x r] and s = alpha / r, and its backward. At rank 8 every product here is a
// row of r dot products or r row updates of length in or out. Through the engine's packed GEMM
// they were narrow products (n = r) that packed A and B on every call, transposed dy for dB and
// copied y and dx to add into them: 13-15% of an adapter step for some 6% of its multiply-adds.
// Here they run a block of rows at a time (lora_rows_impl.h), each token's x, y, dy and dx read
// once, A, B and the gradients' sums kept in cache; the fp32 kernels are compiled per ISA
// (VectorOps), the double ones serve the gradient checks. Every sum runs in a fixed order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "train/lora_rows_impl.h"
#include "train/vector_ops.h"
#include "workers.h"

namespace svc::train {

namespace lora_detail {
template <typename T>
void transpose(int rows, int cols, const T* src, T* dst) {
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) dst[static_cast<int64_t>(j) * rows + i] = src[static_cast<int64_t>(i) * cols + j];
}
}  // namespace lora_detail

// Forward: u = s·x·Aᵀ [rows x r] (kept, scaled, for backward), y += u·Bᵀ; y has row stride
// ldy (a column slice of the fused query-key-value output). Rows are independent, so the
// workers split them (in whole blocks: the same bits on any number of threads).
template <typename T>
void lora_forward(int rows, int in, int out, int rank, T scale, const T* x, const T* a, const T* b, T* u, T* y, int ldy,
                  Workers* workers) {
  // Aᵀ [in x r] and Bᵀ [r x out]: the layouts the row kernels read contiguously.
  thread_local std::vector<T> at, bt;
  at.resize(static_cast<size_t>(in) * rank);
  bt.resize(static_cast<size_t>(out) * rank);
  lora_detail::transpose(rank, in, a, at.data());
  lora_detail::transpose(out, rank, b, bt.data());
  const T* atp = at.data();
  const T* btp = bt.data();
  parallel_for_grain(workers, rows, 64, [=](int64_t i0, int64_t i1) {
    const int n = static_cast<int>(i1 - i0);
    const T* xs = x + i0 * in;
    T* us = u + i0 * rank;
    T* ys = y + i0 * ldy;
    if constexpr (std::is_same_v<T, float>)
      vector_ops().lora_forward_rows(n, in, out, rank, scale, xs, atp, btp, us, ys, ldy);
    else
      detail::lora_forward_rows<T>(n, in, out, rank, scale, xs, atp, btp, us, ys, ldy);
  });
}

// Backward, with g = s·dy·B [rows x r] (into scratch g): dB = dyᵀ·u, dA = gᵀ·x (both
// overwritten), dx += g·A (skipped when dx is null), which adds to the frozen layer's dx,
// already written. dA and dB sum over rows in row order on the calling thread (a training
// step runs one text group per thread), so `workers` is not used.
template <typename T>
void lora_backward(int rows, int in, int out, int rank, T scale, const T* x, const T* a, const T* b, const T* u,
                   const T* dy, int ldy, T* dx, T* da, T* db, T* g, Workers* /*workers*/) {
  thread_local std::vector<T> dbt;  // dBᵀ [r x out], transposed into db at the end
  dbt.assign(static_cast<size_t>(out) * rank, T(0));
  std::fill(da, da + static_cast<int64_t>(rank) * in, T(0));
  if constexpr (std::is_same_v<T, float>)
    vector_ops().lora_backward_rows(rows, in, out, rank, scale, x, a, b, u, dy, ldy, dx, g, da, dbt.data());
  else
    detail::lora_backward_rows<T>(rows, in, out, rank, scale, x, a, b, u, dy, ldy, dx, g, da, dbt.data());
  lora_detail::transpose(rank, out, dbt.data(), db);
}

}  // namespace svc::train
