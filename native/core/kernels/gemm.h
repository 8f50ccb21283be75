// Single-precision GEMM for linear layers: C[m x n] = A[m x k] * W^T + bias (+ residual),
// optionally followed by GELU, where W is [n x k] as PyTorch stores nn.Linear weights.
// W is packed once at load time into column panels sized for the kernel this CPU
// runs (32 columns for AVX-512, 16 for AVX2, NEON and scalar), so the micro-kernel streams
// each panel contiguously and keeps an MR x NR block of C in registers.
#pragma once

#include <cstdint>

#include "tensor/aligned_buffer.h"

namespace svc {

class ThreadPool;

// kGeluCoarse: GELU with erf to 5e-4 and no exp (vec::gelu_coarse), for int8 encoders, whose
// next GEMM rounds the activations to far coarser steps.
enum class Epilogue { kNone, kGelu, kGeluCoarse };

struct PackedF32 {
  int n = 0;
  int k = 0;
  int nr = 0;                 // panel width
  AlignedBuffer<float> data;  // panel p: data[(p * k + kk) * nr + j] = W[p * nr + j][kk], zero-padded
  // The same panels as fp16 bits, used instead of `data` when every weight is exactly an fp16
  // value (an fp16 checkpoint) and the kernel widens fp16 in registers: the arithmetic is the
  // same fp32, the weights take half the memory and half the bandwidth (svc-small's fit in L3).
  AlignedBuffer<uint16_t> half;
  AlignedBuffer<float> bias;  // n entries rounded up to nr, zero-padded
  bool is_half() const { return half.size() != 0; }
  const void* panels() const { return is_half() ? static_cast<const void*>(half.data()) : data.data(); }
  std::size_t bytes() const { return (data.size() + bias.size()) * sizeof(float) + half.size() * sizeof(uint16_t); }
};

// bias may be null (zeros). Stores fp16 panels when the kernel can use them and every value
// of w converts to fp16 and back exactly.
PackedF32 pack_f32(const float* w, const float* bias, int n, int k);

struct GemmArgs {
  const float* a = nullptr;
  int64_t lda = 0;
  int64_t m = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  const float* residual = nullptr;  // added after bias, same leading dimension as c; may be null
  Epilogue epilogue = Epilogue::kNone;
  // When set, each finished row of C is layer-normalized in place (gamma, beta: n entries),
  // by the task that computed it, while the row is still in cache.
  const float* ln_gamma = nullptr;
  const float* ln_beta = nullptr;
  float ln_eps = 0;
};

// scratch holds the packed copy of A between calls (grown as needed).
void gemm_f32(const GemmArgs& args, const PackedF32& w, AlignedBuffer<float>& scratch, ThreadPool* pool);

// Waking a helper thread costs a few microseconds; a GEMM below about 1M multiply-adds
// (some 10 us on one core) runs on the caller alone. Above that even one text's GEMMs gain
// from a second core, since they stream the weights from memory.
inline bool worth_parallel(int64_t m, int64_t n, int64_t k) { return m * n * k >= (1LL << 20); }

// Panel width the dispatched kernel expects.
int gemm_f32_panel_width();

namespace detail {
// One register tile: a row block of A packed k-major (a[kk * mr + r], zero rows past the
// end), one panel of W, full depth k; writes rows x cols (<= mr x nr) of C with
// bias/residual/epilogue applied. Packing A puts the mr values each step broadcasts
// on one cache line and frees the registers row pointers would take.
using TileFn = void (*)(const float* a, int rows, const void* panel, const float* bias, int k, float* c, int64_t ldc,
                        int cols, const float* residual, Epilogue epilogue);
struct GemmKernel {
  int mr;
  int nr;
  TileFn tile;       // fp32 panels
  TileFn tile_half;  // fp16 panels, or null when this level has none
};
GemmKernel gemm_kernel_scalar();
GemmKernel gemm_kernel_avx2();
GemmKernel gemm_kernel_avx512();
GemmKernel gemm_kernel_neon();
}  // namespace detail

}  // namespace svc
