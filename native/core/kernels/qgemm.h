// Int8 GEMM for linear layers: weights quantized symmetrically per output channel
// at load time (s8, |w| <= the kernel's w_max), activations quantized per row at run time (s8 shifted to u8 by
// +128, the operand order of VNNI's vpdpbusd). The +128 shift is undone with a
// precomputed 128 * column-sum of the weights:
//   C[r][j] = (sum_k u8[r][k] * w8[j][k] - 128 * colsum[j]) * a_scale[r] * w_scale[j] + bias[j].
#pragma once

#include <cstdint>

#include "kernels/gemm.h"
#include "tensor/aligned_buffer.h"

namespace svc {

struct PackedS8 {
  static constexpr int kNr = 32;  // columns per panel
  int n = 0;
  int k = 0;
  int kp = 0;                     // k rounded up to a multiple of 4
  AlignedBuffer<int8_t> data;     // panel p, group g: data[((p * kp / 4 + g) * kNr + j) * 4 + t] = W8[p*kNr+j][4g+t]
  AlignedBuffer<float> scale;     // per column, padded to kNr
  AlignedBuffer<int32_t> offset;  // 128 * sum_k W8[j][k], padded
  AlignedBuffer<float> bias;      // padded
  std::size_t bytes() const { return data.size() + (scale.size() + offset.size() + bias.size()) * 4; }
};

// w_max: the largest weight magnitude, 127 (8 bits) or 63 (7 bits) for kernels whose
// 16-bit pair sums would saturate at 8; qgemm_weight_max() is the dispatched kernel's.
PackedS8 pack_s8(const float* w, const float* bias, int n, int k, int w_max);
int qgemm_weight_max();

// Activations of one GEMM, quantized and packed in blocks of the kernel's mr rows:
// block b, group g, row r: data[b * mr * kp + (g * mr + r) * 4 + t] = u8(A[b*mr + r][4g + t]).
// The values are q + 128 (u8) for every kernel; each kernel quantizes with its own
// `quantize` (same float steps as the portable one).
struct QuantizedRows {
  AlignedBuffer<uint8_t> data;
  AlignedBuffer<float> scale;
  int64_t m = 0;
  int kp = 0;
  int mr = 0;
};

// Quantizes A (m x k, stride lda) into q, parallel over rows. Then C as in GemmArgs (its
// layer norm included). With c_quantized, C's finished rows are also quantized into it by
// the task that wrote them, as quantize_rows(C) would (the same values): the next GEMM's
// input without another pass over C.
void quantize_rows(const float* a, int64_t lda, int64_t m, int k, QuantizedRows& q, ThreadPool* pool);
void gemm_s8(const QuantizedRows& a, const GemmArgs& args, const PackedS8& w, ThreadPool* pool,
             QuantizedRows* c_quantized = nullptr);

namespace detail {
// One packed block of quantized A (rows <= mr valid) against one panel; writes cols (<= 32) columns of C.
using QTileFn = void (*)(const uint8_t* a, const float* a_scale, int rows, const int8_t* panel, const float* w_scale,
                         const int32_t* offset, const float* bias, int kp, float* c, int64_t ldc, int cols,
                         const float* residual, Epilogue epilogue);
// Quantizes rows (<= mr) of A into one packed block (padding rows and k past the end hold 128 = zero).
using QuantizeFn = void (*)(const float* a, int64_t lda, int rows, int k, int kp, int mr, uint8_t* block, float* scale);
void quantize_block_portable(const float* a, int64_t lda, int rows, int k, int kp, int mr, uint8_t* block,
                             float* scale);
struct QGemmKernel {
  int mr;
  int w_max;  // weights must be packed with |w| <= w_max (pack_s8) for this kernel's sums to be exact
  QTileFn tile;
  QuantizeFn quantize;
  // Run by each thread before its first tile and after its last one, where the kernel needs it
  // (AMX: the tile configuration, loaded and released per task).
  void (*begin)() = nullptr;
  void (*end)() = nullptr;
};
QGemmKernel qgemm_kernel_scalar();
QGemmKernel qgemm_kernel_avx2(bool vnni);
QGemmKernel qgemm_kernel_avx512(bool vnni);
QGemmKernel qgemm_kernel_amx();
QGemmKernel qgemm_kernel_neon();
QGemmKernel qgemm_kernel_neon_dotprod();
}  // namespace detail

}  // namespace svc
