// Single-precision GEMM for linear layers: C[m x n] = A[m x k] * W^T + bias (+ residual),
// optionally followed by GELU, where W is [n x k] as PyTorch stores nn.Linear weights.
// W is packed once at load time into column panels sized for the kernel this CPU
// runs (32 columns for AVX-512, 16 for AVX2 and scalar), so the micro-kernel streams
// each panel contiguously and keeps an MR x NR block of C in registers.
#pragma once

#include <cstdint>

#include "tensor/aligned_buffer.h"

namespace svc {

class ThreadPool;

enum class Epilogue { kNone, kGelu };

struct PackedF32 {
  int n = 0;
  int k = 0;
  int nr = 0;                 // panel width
  AlignedBuffer<float> data;  // panel p: data[(p * k + kk) * nr + j] = W[p * nr + j][kk], zero-padded
  AlignedBuffer<float> bias;  // n entries rounded up to nr, zero-padded
  std::size_t bytes() const { return (data.size() + bias.size()) * sizeof(float); }
};

// bias may be null (zeros).
PackedF32 pack_f32(const float* w, const float* bias, int n, int k);

struct GemmArgs {
  const float* a = nullptr;
  int64_t lda = 0;
  int64_t m = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  const float* residual = nullptr;  // added after bias, same leading dimension as c; may be null
  Epilogue epilogue = Epilogue::kNone;
};

void gemm_f32(const GemmArgs& args, const PackedF32& w, ThreadPool* pool);

// Panel width the dispatched kernel expects.
int gemm_f32_panel_width();

namespace detail {
// One register tile: rows [0, rows) of A (rows <= kernel MR), one panel of W,
// full depth k, writing cols (<= nr) columns of C with bias/residual/epilogue applied.
using TileFn = void (*)(const float* a, int64_t lda, int rows, const float* panel, const float* bias, int k,
                        float* c, int64_t ldc, int cols, const float* residual, Epilogue epilogue);
struct GemmKernel {
  int mr;
  int nr;
  TileFn tile;
};
GemmKernel gemm_kernel_scalar();
GemmKernel gemm_kernel_avx2();
GemmKernel gemm_kernel_avx512();
}  // namespace detail

}  // namespace svc
