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

// scratch holds the packed copy of A between calls (grown as needed).
void gemm_f32(const GemmArgs& args, const PackedF32& w, AlignedBuffer<float>& scratch, ThreadPool* pool);

// Waking helper threads costs microseconds (far more on a busy machine); a GEMM
// smaller than about 8M multiply-adds (some 40 us on one core) runs on the caller alone.
inline bool worth_parallel(int64_t m, int64_t n, int64_t k) { return m * n * k >= (8LL << 20); }

// Panel width the dispatched kernel expects.
int gemm_f32_panel_width();

namespace detail {
// One register tile: a row block of A packed k-major (a[kk * mr + r], zero rows past the
// end), one panel of W, full depth k; writes rows x cols (<= mr x nr) of C with
// bias/residual/epilogue applied. Packing A puts the mr values each step broadcasts
// on one cache line and frees the registers row pointers would take.
using TileFn = void (*)(const float* a, int rows, const float* panel, const float* bias, int k,
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
