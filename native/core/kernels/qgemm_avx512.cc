// AVX-512 int8 GEMM tiles. With VNNI, vpdpbusd multiplies 4 u8 activations by 4
// s8 weights and adds them into each int32 lane in one instruction: 14 rows x 32
// columns in 28 zmm accumulators. Without VNNI (AVX-512BW only) the same sum is
// built from two vpmaddwd on bytes widened to 16 bits, which cannot saturate
// (unlike vpmaddubsw), on 8 rows.
// GCC 12 reports _mm512_undefined_*() inside its own intrinsic headers as uninitialized use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "kernels/gemm_tile.h"
#include "kernels/qgemm.h"

namespace svc {
namespace detail {
namespace {

constexpr int kNr = PackedS8::kNr;

template <bool kVnni>
inline __m512i dot4(__m512i acc, __m512i a, __m512i b) {
  if constexpr (kVnni) {
    // Inline asm rather than _mm512_dpbusd_epi32: with the builtin, GCC 12 keeps the
    // accumulator array in memory and reloads it every step.
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
  } else {
    const __m512i lo_mask = _mm512_set1_epi16(0x00FF);
    const __m512i a_even = _mm512_and_si512(a, lo_mask);
    const __m512i a_odd = _mm512_srli_epi16(a, 8);
    const __m512i b_even = _mm512_srai_epi16(_mm512_slli_epi16(b, 8), 8);
    const __m512i b_odd = _mm512_srai_epi16(b, 8);
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(a_even, b_even));
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a_odd, b_odd));
  }
}

template <int MR, bool kVnni, int kMrBlock = kVnni ? 14 : 8>
void tile_fixed(const uint8_t* a, const float* a_scale, const int8_t* panel, const float* w_scale,
                const int32_t* offset, const float* bias, int kp, float* c, int64_t ldc, int cols) {
  __m512i acc0[MR], acc1[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = _mm512_setzero_si512();
  const int groups = kp / 4;
  for (int g = 0; g < groups; ++g) {
    const __m512i b0 = _mm512_load_si512(panel + g * kNr * 4);
    const __m512i b1 = _mm512_load_si512(panel + g * kNr * 4 + 64);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      int32_t quad;
      __builtin_memcpy(&quad, a + (g * kMrBlock + r) * 4, 4);
      const __m512i av = _mm512_set1_epi32(quad);
      acc0[r] = dot4<kVnni>(acc0[r], av, b0);
      acc1[r] = dot4<kVnni>(acc1[r], av, b1);
    }
  }
  const __m512 ws0 = _mm512_loadu_ps(w_scale), ws1 = _mm512_loadu_ps(w_scale + 16);
  const __m512i off0 = _mm512_loadu_si512(offset), off1 = _mm512_loadu_si512(offset + 16);
  const __m512 bias0 = _mm512_loadu_ps(bias), bias1 = _mm512_loadu_ps(bias + 16);
  const __mmask16 m0 = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    const __m512 as = _mm512_set1_ps(a_scale[r]);
    const __m512 v0 =
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc0[r], off0)), _mm512_mul_ps(as, ws0), bias0);
    const __m512 v1 =
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc1[r], off1)), _mm512_mul_ps(as, ws1), bias1);
    _mm512_mask_storeu_ps(c + r * ldc, m0, v0);
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, v1);
  }
}

constexpr int kMrVnni = 14;
constexpr int kMrBw = 8;

void quantize_block(const float* a, int64_t lda, int rows, int k, int kp, int mr, uint8_t* block, float* scale) {
  if (k % 16 != 0) return quantize_block_portable(a, lda, rows, k, kp, mr, block, scale);
  for (int r = 0; r < mr; ++r) {
    if (r >= rows) {
      for (int g = 0; g < kp / 4; ++g) __builtin_memset(block + (g * mr + r) * 4, 128, 4);
      continue;
    }
    const float* src = a + r * lda;
    __m512 vmax = _mm512_setzero_ps();
    for (int kk = 0; kk < k; kk += 16) vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(src + kk)));
    const float amax = _mm512_reduce_max_ps(vmax);
    const float s = amax > 0 ? amax / 127.0f : 1.0f;
    const __m512 inv = _mm512_set1_ps(1.0f / s);
    const __m512i shift = _mm512_set1_epi32(128);
    for (int kk = 0; kk < k; kk += 16) {
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(src + kk), inv)), shift);
      alignas(16) uint32_t quads[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(quads), _mm512_cvtepi32_epi8(q));
      for (int t = 0; t < 4; ++t) __builtin_memcpy(block + ((kk / 4 + t) * mr + r) * 4, &quads[t], 4);
    }
    scale[r] = s;
  }
}

template <bool kVnni>
void tile(const uint8_t* a, const float* a_scale, int rows, const int8_t* panel, const float* w_scale,
          const int32_t* offset, const float* bias, int kp, float* c, int64_t ldc, int cols, const float* residual,
          Epilogue epilogue) {
  static constexpr auto kTable =
      row_tiles<(kVnni ? kMrVnni : kMrBw)>([](auto r) { return &tile_fixed<decltype(r)::value, kVnni>; });
  kTable[rows - 1](a, a_scale, panel, w_scale, offset, bias, kp, c, ldc, cols);
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}

}  // namespace

QGemmKernel qgemm_kernel_avx512(bool vnni) {
  return vnni ? QGemmKernel{kMrVnni, 127, tile<true>, quantize_block}
              : QGemmKernel{kMrBw, 127, tile<false>, quantize_block};
}

}  // namespace detail
}  // namespace svc
