// NEON GEMM tile for aarch64: 6 rows x 16 columns of C in 24 q-register
// accumulators; per step of k, four panel loads (or two fp16 loads widened in
// registers) and 6 broadcasts feed 24 FMAs. Advanced SIMD is part of the aarch64
// base architecture, so this file needs no extra flags; it is built for aarch64 only.
#include <arm_neon.h>

#include "kernels/gemm_tile.h"

namespace svc {
namespace detail {
namespace {

constexpr int kMr = 6;
constexpr int kNr = 16;

template <bool kHalf>
inline void load_panel_row(const void* panel, int kk, float32x4_t b[4]) {
  if constexpr (kHalf) {
    const float16_t* p = static_cast<const float16_t*>(panel) + static_cast<int64_t>(kk) * kNr;
    const float16x8_t h0 = vld1q_f16(p), h1 = vld1q_f16(p + 8);
    b[0] = vcvt_f32_f16(vget_low_f16(h0));
    b[1] = vcvt_high_f32_f16(h0);
    b[2] = vcvt_f32_f16(vget_low_f16(h1));
    b[3] = vcvt_high_f32_f16(h1);
  } else {
    const float* p = static_cast<const float*>(panel) + static_cast<int64_t>(kk) * kNr;
    for (int q = 0; q < 4; ++q) b[q] = vld1q_f32(p + 4 * q);
  }
}

template <int MR, bool kHalf>
void tile_fixed(const float* a, const void* panel, const float* bias, int k, float* c, int64_t ldc, int cols) {
  float32x4_t acc[MR][4];
  float32x4_t bias_q[4];
  for (int q = 0; q < 4; ++q) bias_q[q] = vld1q_f32(bias + 4 * q);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
    for (int q = 0; q < 4; ++q) acc[r][q] = bias_q[q];
  for (int kk = 0; kk < k; ++kk) {
    float32x4_t b[4];
    load_panel_row<kHalf>(panel, kk, b);
    const float* ak = a + kk * kMr;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float av = ak[r];
      for (int q = 0; q < 4; ++q) acc[r][q] = vfmaq_n_f32(acc[r][q], b[q], av);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    if (cols == kNr) {
      for (int q = 0; q < 4; ++q) vst1q_f32(c + r * ldc + 4 * q, acc[r][q]);
    } else {
      float tmp[kNr];
      for (int q = 0; q < 4; ++q) vst1q_f32(tmp + 4 * q, acc[r][q]);
      for (int j = 0; j < cols; ++j) c[r * ldc + j] = tmp[j];
    }
  }
}

template <bool kHalf>
void tile(const float* a, int rows, const void* panel, const float* bias, int k, float* c, int64_t ldc, int cols,
          const float* residual, Epilogue epilogue) {
  static constexpr auto kTable = row_tiles<kMr>([](auto r) { return &tile_fixed<decltype(r)::value, kHalf>; });
  kTable[rows - 1](a, panel, bias, k, c, ldc, cols);
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}

}  // namespace

GemmKernel gemm_kernel_neon() { return {kMr, kNr, tile<false>, tile<true>}; }

}  // namespace detail
}  // namespace svc
