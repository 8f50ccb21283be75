// AVX2 int8 GEMM tiles for CPUs without AVX-512. Two kinds, chosen at run time:
//
// Plain AVX2: 4 rows x 16 columns per pass, two passes per 32-column panel (8 int32
// accumulators per pass; the rest of the 16 ymm hold the two weight vectors, the broadcast
// activations, the ones and a temporary). On the GEMMs of svc-small this runs at 2x the AVX2
// fp32 kernel: the two multiply instructions per 32 multiply-adds against one FMA per 8 are
// the bound. vpmaddubsw multiplies u8 by s8 and adds adjacent pairs into int16 with
// saturation. The activations are the +128-shifted u8 of the other kernels (up to 255); with
// weights packed to 7 bits (|w| <= 63, pack_s8 with w_max = 63, as onnxruntime's
// reduce_range) a pair is at most 2 * 255 * 63 = 32130 < 32767, so nothing saturates and the
// integer sums are those of the scalar kernel on the same packed weights, bit for bit. Per 32
// multiply-adds that is one vpmaddubsw, one vpmaddwd (against ones, widening the pairs to
// the four-term int32 sums) and one add: against moving the weight's sign onto signed
// activations (full 8-bit weights: a vpsignb per product and |w| registers) the GEMMs went
// from 1.3x to 2x fp32.
//
// AVX-VNNI (the VEX form of vpdpbusd: Intel cores since Alder Lake and Sapphire Rapids, the
// AVX2-only server cores since Sierra Forest, AMD since Zen 5): one instruction sums 4 u8 x s8
// products into each int32 lane, without the int16 step, so the weights keep all 8 bits and
// the products cost one instruction per 32 multiply-adds. Without the ones and the temporary,
// 6 rows fit: 12 accumulators, two weight vectors and the broadcast.
#include <immintrin.h>

#include "kernels/gemm_tile.h"
#include "kernels/qgemm.h"
#include "kernels/vec_math.h"

namespace svc {
namespace detail {
namespace {

constexpr int kNr = PackedS8::kNr;
constexpr int kMr = 4;
constexpr int kWMax = 63;
constexpr int kMrVnni = 6;

template <bool kVnni>
inline __m256i dot4(__m256i acc, __m256i a, __m256i w, __m256i ones) {
  if constexpr (kVnni) return vec::dpbusd8(acc, a, w);
  const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), ones);
  // Inline asm rather than _mm256_add_epi32: with the builtin, GCC 12 keeps all eight
  // products of a step live at once and spills an accumulator of the 4-row tile to the stack
  // (measured 25% slower; 3 rows fit either way but gain nothing).
  __asm__("vpaddd %1, %0, %0" : "+x"(acc) : "x"(sums));
  return acc;
}

template <int MR, bool kVnni, int kMrBlock = kVnni ? kMrVnni : kMr>
void tile_fixed(const uint8_t* a, const float* a_scale, const int8_t* panel, const float* w_scale,
                const int32_t* offset, const float* bias, int kp, float* c, int64_t ldc, int cols) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int groups = kp / 4;
  for (int half = 0; half < 2 && half * 16 < cols; ++half) {
    __m256i acc0[MR], acc1[MR];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = _mm256_setzero_si256();
    const int8_t* b = panel + half * 64;
    for (int g = 0; g < groups; ++g, b += kNr * 4) {
      const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
      const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32));
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        int32_t quad;
        __builtin_memcpy(&quad, a + (g * kMrBlock + r) * 4, 4);
        const __m256i av = _mm256_set1_epi32(quad);
        acc0[r] = dot4<kVnni>(acc0[r], av, w0, ones);
        acc1[r] = dot4<kVnni>(acc1[r], av, w1, ones);
      }
    }
    // Same integer and float steps as the scalar tile: fma(float(sum - offset), a_scale * w_scale, bias).
    const int col0 = half * 16;
    const __m256 ws0 = _mm256_loadu_ps(w_scale + col0), ws1 = _mm256_loadu_ps(w_scale + col0 + 8);
    const __m256 bias0 = _mm256_loadu_ps(bias + col0), bias1 = _mm256_loadu_ps(bias + col0 + 8);
    const __m256i off0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset + col0));
    const __m256i off1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset + col0 + 8));
    const int n = cols - col0 < 16 ? cols - col0 : 16;
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m256 as = _mm256_set1_ps(a_scale[r]);
      const __m256 v0 =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc0[r], off0)), _mm256_mul_ps(as, ws0), bias0);
      const __m256 v1 =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc1[r], off1)), _mm256_mul_ps(as, ws1), bias1);
      float* out = c + r * ldc + col0;
      if (n == 16) {
        _mm256_storeu_ps(out, v0);
        _mm256_storeu_ps(out + 8, v1);
      } else {
        alignas(32) float tmp[16];
        _mm256_store_ps(tmp, v0);
        _mm256_store_ps(tmp + 8, v1);
        for (int j = 0; j < n; ++j) out[j] = tmp[j];
      }
    }
  }
}

template <bool kVnni>
void tile(const uint8_t* a, const float* a_scale, int rows, const int8_t* panel, const float* w_scale,
          const int32_t* offset, const float* bias, int kp, float* c, int64_t ldc, int cols, const float* residual,
          Epilogue epilogue) {
  static constexpr auto kTable =
      row_tiles<(kVnni ? kMrVnni : kMr)>([](auto r) { return &tile_fixed<decltype(r)::value, kVnni>; });
  kTable[rows - 1](a, a_scale, panel, w_scale, offset, bias, kp, c, ldc, cols);
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}

// The portable quantizer's values (same scale, same round-half-to-even, q + 128 as u8).
void quantize_block(const float* a, int64_t lda, int rows, int k, int kp, int mr, uint8_t* block, float* scale) {
  if (k % 8 != 0) return quantize_block_portable(a, lda, rows, k, kp, mr, block, scale);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i shift = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int r = 0; r < mr; ++r) {
    if (r >= rows) {
      for (int g = 0; g < kp / 4; ++g) __builtin_memset(block + (g * mr + r) * 4, 128, 4);
      continue;
    }
    const float* src = a + r * lda;
    __m256 vmax = _mm256_setzero_ps();
    for (int kk = 0; kk < k; kk += 8) vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(src + kk), abs_mask));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    const float amax = _mm_cvtss_f32(m4);
    const float s = amax > 0 ? amax / 127.0f : 1.0f;
    const __m256 inv = _mm256_set1_ps(1.0f / s);
    for (int kk = 0; kk < k; kk += 8) {
      const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src + kk), inv));
      const __m256i q16 = _mm256_packs_epi32(q, q);  // per 128-bit lane: q0..3 | q4..7, as int16
      // |q| <= 127: no saturation; flipping the top bit turns s8 q into u8 q + 128.
      const __m256i q8 = _mm256_xor_si256(_mm256_packs_epi16(q16, q16), shift);
      const int32_t lo = _mm256_cvtsi256_si32(q8);
      const int32_t hi = _mm_cvtsi128_si32(_mm256_extracti128_si256(q8, 1));
      __builtin_memcpy(block + ((kk / 4) * mr + r) * 4, &lo, 4);
      __builtin_memcpy(block + ((kk / 4 + 1) * mr + r) * 4, &hi, 4);
    }
    scale[r] = s;
  }
}

}  // namespace

QGemmKernel qgemm_kernel_avx2(bool vnni) {
  return vnni ? QGemmKernel{kMrVnni, 127, tile<true>, quantize_block}
              : QGemmKernel{kMr, kWMax, tile<false>, quantize_block};
}

}  // namespace detail
}  // namespace svc
