// The int8 GEMM on AMX tiles: tdpbusd multiplies a 16 x 64 tile of u8 activations by a 64 x 16
// tile of s8 weights (as groups of 4 along k) into 16 x 16 int32 sums, 16 times the multiply-adds
// of vpdpbusd an instruction. The weights stay in PackedS8's panels (a tile is 16 of a panel's
// 32 columns, its 16 groups 128 bytes apart); activations are packed row-major, 32 rows a block,
// so a block is two A tiles. The sums are exact int32 as in every other kernel, so the output is
// bit for bit the scalar kernel's (qgemm_test). Built with the AVX-512 flags; the tile
// instructions are enabled here only, since the dispatch calls in after cpu_features().amx.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("amx-tile,amx-int8"))), apply_to = function)
#else
#pragma GCC target("amx-tile,amx-int8")
#endif

#include <immintrin.h>

#include <cstring>

#include "kernels/amx_tiles.h"
#include "kernels/gemm_tile.h"
#include "kernels/qgemm.h"

namespace svc {
namespace detail {
namespace {

constexpr int kNr = PackedS8::kNr;
constexpr int kTileRows = 16;
constexpr int kMr = 2 * kTileRows;
constexpr int kDepth = 64;  // k per tile step: 16 groups of 4

inline __mmask16 first(int count) {
  return count >= 16 ? static_cast<__mmask16>(0xffff) : count <= 0 ? 0 : static_cast<__mmask16>((1u << count) - 1);
}

// Rows of A into one block, row-major: block[r * kp + kk] = q + 128, with the same float steps
// as every other quantizer (amax / 127, round half to even); rows past `rows` and k past the
// end hold 128 (zero).
void quantize_rows_major(const float* a, int64_t lda, int rows, int k, int kp, int mr, uint8_t* block, float* scale) {
  for (int r = 0; r < mr; ++r) {
    uint8_t* dst = block + static_cast<int64_t>(r) * kp;
    if (r >= rows) {
      std::memset(dst, 128, kp);
      continue;
    }
    const float* src = a + r * lda;
    __m512 vmax = _mm512_setzero_ps();
    for (int kk = 0; kk < k; kk += 16)
      vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_maskz_loadu_ps(first(k - kk), src + kk)));
    const float amax = _mm512_reduce_max_ps(vmax);
    const float s = amax > 0 ? amax / 127.0f : 1.0f;
    const __m512 inv = _mm512_set1_ps(1.0f / s);
    const __m512i shift = _mm512_set1_epi32(128);
    for (int kk = 0; kk < k; kk += 16) {
      const __mmask16 m = first(k - kk);
      const __m512i q =
          _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, src + kk), inv)), shift);
      _mm512_mask_cvtepi32_storeu_epi8(dst + kk, m, q);
    }
    if (kp > k) std::memset(dst + k, 128, kp - k);
    scale[r] = s;
  }
}

// One block (rows <= 32, TWO when more than 16) against one panel. Tiles: 0-3 the int32 sums
// (0: rows 0-15, columns 0-15; 1: rows 0-15, columns 16-31; 2 and 3 the same for rows 16-31),
// 4 and 5 the two halves of A, 6 and 7 the two halves of the panel. Depth past the last whole
// 64 (kp is a multiple of 4 only) is added with vpdpbusd after the tiles are stored.
template <bool TWO>
void sums(const uint8_t* a, int rows, const int8_t* panel, int kp, int32_t* acc) {
  _tile_zero(0);
  _tile_zero(1);
  if (TWO) {
    _tile_zero(2);
    _tile_zero(3);
  }
  const int whole = kp / kDepth * kDepth;
  constexpr int64_t b_stride = kNr * 4;
  // Intentionally the loop of gemm_bf16_amx_avx512.cc with tdpbusd for tdpbf16ps: tile
  // instructions take their tile numbers as immediates, so one body cannot take either.
  for (int kk = 0; kk < whole; kk += kDepth) {
    const int8_t* b = panel + static_cast<int64_t>(kk / 4) * kNr * 4;
    _tile_loadd(4, a + kk, kp);
    _tile_loadd(6, b, b_stride);
    _tile_loadd(7, b + 64, b_stride);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    if (TWO) {
      _tile_loadd(5, a + static_cast<int64_t>(kTileRows) * kp + kk, kp);
      _tile_dpbusd(2, 5, 6);
      _tile_dpbusd(3, 5, 7);
    }
  }
  constexpr int64_t acc_stride = kNr * 4;
  _tile_stored(0, acc, acc_stride);
  _tile_stored(1, acc + 16, acc_stride);
  if (TWO) {
    _tile_stored(2, acc + kTileRows * kNr, acc_stride);
    _tile_stored(3, acc + kTileRows * kNr + 16, acc_stride);
  }
  if (whole == kp) return;
  for (int r = 0; r < rows; ++r) {
    __m512i s0 = _mm512_load_si512(acc + r * kNr), s1 = _mm512_load_si512(acc + r * kNr + 16);
    for (int kk = whole; kk < kp; kk += 4) {
      int32_t quad;
      std::memcpy(&quad, a + static_cast<int64_t>(r) * kp + kk, 4);
      const __m512i av = _mm512_set1_epi32(quad);
      const int8_t* b = panel + static_cast<int64_t>(kk / 4) * kNr * 4;
      s0 = _mm512_dpbusd_epi32(s0, av, _mm512_load_si512(b));
      s1 = _mm512_dpbusd_epi32(s1, av, _mm512_load_si512(b + 64));
    }
    _mm512_store_si512(acc + r * kNr, s0);
    _mm512_store_si512(acc + r * kNr + 16, s1);
  }
}

void tile(const uint8_t* a, const float* a_scale, int rows, const int8_t* panel, const float* w_scale,
          const int32_t* offset, const float* bias, int kp, float* c, int64_t ldc, int cols, const float* residual,
          Epilogue epilogue) {
  alignas(64) int32_t acc[kMr * kNr];
  if (rows > kTileRows)
    sums<true>(a, rows, panel, kp, acc);
  else
    sums<false>(a, rows, panel, kp, acc);
  const __m512 ws0 = _mm512_loadu_ps(w_scale), ws1 = _mm512_loadu_ps(w_scale + 16);
  const __m512i off0 = _mm512_loadu_si512(offset), off1 = _mm512_loadu_si512(offset + 16);
  const __m512 bias0 = _mm512_loadu_ps(bias), bias1 = _mm512_loadu_ps(bias + 16);
  const __mmask16 m0 = first(cols), m1 = first(cols - 16);
  for (int r = 0; r < rows; ++r) {
    const __m512 as = _mm512_set1_ps(a_scale[r]);
    const __m512i s0 = _mm512_load_si512(acc + r * kNr), s1 = _mm512_load_si512(acc + r * kNr + 16);
    const __m512 v0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(s0, off0)), _mm512_mul_ps(as, ws0), bias0);
    const __m512 v1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(s1, off1)), _mm512_mul_ps(as, ws1), bias1);
    _mm512_mask_storeu_ps(c + r * ldc, m0, v0);
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, v1);
  }
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}

}  // namespace

QGemmKernel qgemm_kernel_amx() { return {kMr, 127, tile, quantize_rows_major, load_amx_tiles, release_amx_tiles}; }

}  // namespace detail
}  // namespace svc

#if defined(__clang__)
#pragma clang attribute pop
#endif
