// The one matrix-multiply entry point the training core uses. Every product of
// the training pass (linear layers forward, dX = dY·W, dW = dYᵀ·X, attention's
// products) goes through gemm(), and gemm<float> runs on the engine's SGEMM
// (kernels/gemm.h): op(B) is packed into its weight panels (per call, or once a
// step with pack_b, since training changes the weights every step). Products
// under 64³ multiply-adds (attention per head) run as vectorized row loops.
// Row-major; op(A) is m x k, op(B) is k x n; C = beta*C + op(A)·op(B).
// Each element of C is summed over k in one fixed order whatever the thread
// count, so a product is bitwise the same on any number of threads.
#pragma once

#include "kernels/gemm.h"
#include "workers.h"

namespace svc::train {

template <typename T>
void gemm(bool trans_a, bool trans_b, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T beta, T* c,
          int ldc, Workers* workers = nullptr);

// op(B) packed once into the engine's panels, for products that reuse it (a
// weight matrix used by every text group of a step).
void pack_b(bool trans_b, const float* b, int ldb, int k, int n, PackedF32& out, Workers* workers);
// op(B) = Wᵀ for W [n x k] (y = x·Wᵀ) packed once, for weights that never change (an adapter's
// frozen base): fp16 panels whenever every value is an fp16 value, on every CPU. Where the
// kernel has no fp16 tile, gemm_prepacked widens such panels per product into a per-thread
// fp32 copy (vectorized, a few percent of the product): the frozen base takes half the memory.
PackedF32 pack_frozen_f32(const float* w, int n, int k);
// C = beta*C + op(A)·op(B) with op(B) already packed by pack_b (or pack_frozen_f32).
void gemm_prepacked(bool trans_a, int m, const float* a, int lda, const PackedF32& b, float beta, float* c, int ldc,
                    Workers* workers);

}  // namespace svc::train
