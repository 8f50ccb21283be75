// The one matrix-multiply entry point the training core uses. Every backward
// GEMM (dX = dY·W, dW += dYᵀ·X, attention's four products) goes through gemm(),
// so pointing it at the engine's SGEMM is a change in linalg.cc alone.
// Row-major; op(A) is m x k, op(B) is k x n; C = beta*C + op(A)·op(B).
// Each element of C is summed over k in the same order whatever the thread
// count, so results are bitwise reproducible across thread counts.
#pragma once

namespace svc::train {

class Workers;

template <typename T>
void gemm(bool trans_a, bool trans_b, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T beta,
          T* c, int ldc, Workers* workers = nullptr);

// The packed fp32 micro-kernel: c[MR x NR] (+)= a_panel[kc x MR]ᵀ-interleaved · b_panel[kc x NR].
constexpr int kGemmMR = 8;
constexpr int kGemmNR = 32;
void gemm_kernel_8x32_avx512(int kc, const float* a_panel, const float* b_panel, float* c, int ldc);

}  // namespace svc::train
