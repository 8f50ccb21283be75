// AVX2 int8 GEMM tile for CPUs without AVX-512: 3 rows x 16 columns per pass, two
// passes per 32-column panel (6 int32 accumulators per pass; the rest of the 16 ymm hold
// the weights, their magnitudes, the broadcast activations and temporaries: with 4 rows
// the accumulators spill to the stack, measured 8% slower).
//
// vpmaddubsw multiplies u8 by s8 and adds adjacent pairs into int16 with saturation:
// with the +128-shifted activations of the VNNI path, 2 * 255 * 127 overflows. This
// level keeps the activations signed (s8, no shift) and moves the weight's sign onto
// them instead: |w| (u8, <= 127) times sign(w) * a (s8, |.| <= 127) is exactly w * a, and
// a pair is at most 2 * 127 * 127 = 32258 < 32767, so nothing saturates and the integer
// sums are those of the scalar kernel, bit for bit, at full 8-bit precision. vpmaddwd
// against ones then widens the pairs to the four-term int32 sums.
#include <immintrin.h>

#include <array>
#include <utility>

#include "kernels/gemm_tile.h"
#include "kernels/qgemm.h"

namespace svc {
namespace detail {
namespace {

constexpr int kNr = PackedS8::kNr;
constexpr int kMr = 3;

inline __m256i dot4(__m256i acc, __m256i w_abs, __m256i w, __m256i a, __m256i ones) {
  const __m256i pairs = _mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(a, w));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
}

template <int MR>
void tile_fixed(const uint8_t* a, const float* a_scale, const int8_t* panel, const float* w_scale,
                const float* bias, int kp, float* c, int64_t ldc, int cols) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int groups = kp / 4;
  for (int half = 0; half < 2 && half * 16 < cols; ++half) {
    __m256i acc0[MR], acc1[MR];
    #pragma GCC unroll 3
    for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = _mm256_setzero_si256();
    const int8_t* b = panel + half * 64;
    for (int g = 0; g < groups; ++g, b += kNr * 4) {
      const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
      const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32));
      const __m256i m0 = _mm256_sign_epi8(w0, w0), m1 = _mm256_sign_epi8(w1, w1);  // |w|: w >= -127
      #pragma GCC unroll 3
      for (int r = 0; r < MR; ++r) {
        int32_t quad;
        __builtin_memcpy(&quad, a + (g * kMr + r) * 4, 4);
        const __m256i av = _mm256_set1_epi32(quad);
        acc0[r] = dot4(acc0[r], m0, w0, av, ones);
        acc1[r] = dot4(acc1[r], m1, w1, av, ones);
      }
    }
    // Same float steps as the scalar tile: fma(float(sum), a_scale * w_scale, bias).
    const int col0 = half * 16;
    const __m256 ws0 = _mm256_loadu_ps(w_scale + col0), ws1 = _mm256_loadu_ps(w_scale + col0 + 8);
    const __m256 bias0 = _mm256_loadu_ps(bias + col0), bias1 = _mm256_loadu_ps(bias + col0 + 8);
    const int n = cols - col0 < 16 ? cols - col0 : 16;
    #pragma GCC unroll 3
    for (int r = 0; r < MR; ++r) {
      const __m256 as = _mm256_set1_ps(a_scale[r]);
      const __m256 v0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc0[r]), _mm256_mul_ps(as, ws0), bias0);
      const __m256 v1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc1[r]), _mm256_mul_ps(as, ws1), bias1);
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

using FixedFn = void (*)(const uint8_t*, const float*, const int8_t*, const float*, const float*, int, float*,
                         int64_t, int);
template <int... R>
constexpr auto make_table(std::integer_sequence<int, R...>) {
  return std::array<FixedFn, sizeof...(R)>{tile_fixed<R + 1>...};
}

// offset (128 * column sums) is unused: these activations carry no +128 shift.
void tile(const uint8_t* a, const float* a_scale, int rows, const int8_t* panel, const float* w_scale,
          const int32_t* /*offset*/, const float* bias, int kp, float* c, int64_t ldc, int cols,
          const float* residual, Epilogue epilogue) {
  static constexpr auto kTable = make_table(std::make_integer_sequence<int, kMr>{});
  kTable[rows - 1](a, a_scale, panel, w_scale, bias, kp, c, ldc, cols);
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}

// The portable quantizer's values (same scale, same round-half-to-even), stored as s8.
void quantize_block(const float* a, int64_t lda, int rows, int k, int kp, int mr, uint8_t* block, float* scale) {
  if (k % 8 != 0) {
    quantize_block_portable(a, lda, rows, k, kp, mr, block, scale);
    const std::size_t bytes = static_cast<std::size_t>(mr) * kp;
    for (std::size_t i = 0; i < bytes; ++i) block[i] ^= 0x80;  // u8 q + 128 -> s8 q
    return;
  }
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (int r = 0; r < mr; ++r) {
    if (r >= rows) {
      for (int g = 0; g < kp / 4; ++g) __builtin_memset(block + (g * mr + r) * 4, 0, 4);
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
      const __m256i q16 = _mm256_packs_epi32(q, q);        // per 128-bit lane: q0..3 | q4..7, as int16
      const __m256i q8 = _mm256_packs_epi16(q16, q16);     // |q| <= 127: no saturation
      const int32_t lo = _mm256_cvtsi256_si32(q8);
      const int32_t hi = _mm_cvtsi128_si32(_mm256_extracti128_si256(q8, 1));
      __builtin_memcpy(block + ((kk / 4) * mr + r) * 4, &lo, 4);
      __builtin_memcpy(block + ((kk / 4 + 1) * mr + r) * 4, &hi, 4);
    }
    scale[r] = s;
  }
}

}  // namespace

QGemmKernel qgemm_kernel_avx2() { return {kMr, tile, quantize_block}; }

}  // namespace detail
}  // namespace svc
