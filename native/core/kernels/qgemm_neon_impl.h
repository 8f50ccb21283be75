// Body of the aarch64 int8 GEMM tile, included by qgemm_neon.cc (plain Advanced
// SIMD) and qgemm_dotprod.cc (built with +dotprod for SDOT); internal linkage
// keeps the two copies apart.
//
// Activations arrive as u8 = s8 + 128 (the layout VNNI wants). XOR 0x80 turns
// them back into s8, so both paths multiply s8 by s8 and need no +128 correction:
// the sum is already sum_k a8 * w8 and the precomputed offset goes unused.
// 4 rows (one 16-byte load holds one k-group of all four rows) by 32 columns,
// done as two halves of 16 columns so 16 accumulators stay in registers.
#pragma once

#include <arm_neon.h>

#include "kernels/gemm_tile.h"
#include "kernels/qgemm.h"

namespace svc {
namespace detail {
namespace {

constexpr int kNeonQMr = 4;

// acc[c] += sum_t b[4c + t] * a[t] for the 4 columns c of b, without SDOT: the
// products of two s8 in [-127, 127] and the sum of two of them fit in s16.
inline int32x4_t dot4_widen(int32x4_t acc, int8x16_t b, int8x16_t a_quad) {
  const int16x8_t lo = vmull_s8(vget_low_s8(b), vget_low_s8(a_quad));
  const int16x8_t hi = vmull_high_s8(b, a_quad);
  return vpadalq_s16(acc, vpaddq_s16(lo, hi));
}

template <bool kDotprod>
inline void accumulate_group(int32x4_t acc[kNeonQMr][4], const int8x16_t b[4], int8x16_t a4) {
  if constexpr (kDotprod) {
    for (int q = 0; q < 4; ++q) {
      acc[0][q] = vdotq_laneq_s32(acc[0][q], b[q], a4, 0);
      acc[1][q] = vdotq_laneq_s32(acc[1][q], b[q], a4, 1);
      acc[2][q] = vdotq_laneq_s32(acc[2][q], b[q], a4, 2);
      acc[3][q] = vdotq_laneq_s32(acc[3][q], b[q], a4, 3);
    }
  } else {
    const int32x4_t quads = vreinterpretq_s32_s8(a4);
    const int8x16_t a_row[kNeonQMr] = {
        vreinterpretq_s8_s32(vdupq_laneq_s32(quads, 0)), vreinterpretq_s8_s32(vdupq_laneq_s32(quads, 1)),
        vreinterpretq_s8_s32(vdupq_laneq_s32(quads, 2)), vreinterpretq_s8_s32(vdupq_laneq_s32(quads, 3))};
    for (int r = 0; r < kNeonQMr; ++r)
      for (int q = 0; q < 4; ++q) acc[r][q] = dot4_widen(acc[r][q], b[q], a_row[r]);
  }
}

template <bool kDotprod>
void qtile_neon(const uint8_t* a, const float* a_scale, int rows, const int8_t* panel, const float* w_scale,
                const int32_t* /*offset: see the top of this file*/, const float* bias, int kp, float* c, int64_t ldc,
                int cols, const float* residual, Epilogue epilogue) {
  constexpr int kNr = PackedS8::kNr;
  const uint8x16_t flip = vdupq_n_u8(0x80);
  for (int half = 0; half < 2; ++half) {
    const int col0 = half * 16;
    if (col0 >= cols) break;
    int32x4_t acc[kNeonQMr][4];
    for (int r = 0; r < kNeonQMr; ++r)
      for (int q = 0; q < 4; ++q) acc[r][q] = vdupq_n_s32(0);
    for (int g = 0; g < kp / 4; ++g) {
      // Padding rows hold 128, which flips to 0 and adds nothing.
      const int8x16_t a4 = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(a + g * kNeonQMr * 4), flip));
      const int8_t* bg = panel + static_cast<int64_t>(g) * kNr * 4 + col0 * 4;
      const int8x16_t b[4] = {vld1q_s8(bg), vld1q_s8(bg + 16), vld1q_s8(bg + 32), vld1q_s8(bg + 48)};
      accumulate_group<kDotprod>(acc, b, a4);
    }
    const int n = cols - col0 < 16 ? cols - col0 : 16;
    for (int r = 0; r < rows; ++r) {
      const float32x4_t as = vdupq_n_f32(a_scale[r]);
      float tmp[16];
      for (int q = 0; q < 4; ++q) {
        const float32x4_t scale = vmulq_f32(as, vld1q_f32(w_scale + col0 + 4 * q));
        vst1q_f32(tmp + 4 * q, vfmaq_f32(vld1q_f32(bias + col0 + 4 * q), vcvtq_f32_s32(acc[r][q]), scale));
      }
      for (int j = 0; j < n; ++j) c[r * ldc + col0 + j] = tmp[j];
    }
  }
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}

}  // namespace
}  // namespace detail
}  // namespace svc
