// The bf16 products of a training step on AMX tiles (see gemm_bf16.h): tdpbf16ps multiplies a
// 16 x 32 bf16 tile of A by a 32 x 16 tile of B (both as pairs along k) into a 16 x 16 fp32
// tile, 16 times the multiply-adds of vdpbf16ps an instruction. Same inputs as the vector
// kernel (both operands rounded to bf16 as they are packed, B in the same panels), fp32 sums.
// Built with the AVX-512 flags; the tile and AVX512_BF16 instructions are enabled here only,
// since gemm_bf16() calls in after the run-time check (cpu_features().amx) alone.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512bf16,amx-tile,amx-bf16"))), apply_to = function)
#else
#pragma GCC target("avx512bf16,amx-tile,amx-bf16")
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/amx_tiles.h"
#include "kernels/bf16_pack_avx512.h"
#include "kernels/gemm_bf16.h"

namespace svc::train::detail {
namespace {

constexpr int kNr = kBf16PanelWidth;  // a panel's 32 columns: two 16-column tiles
constexpr int kTileRows = 16;
constexpr int kBlockRows = 2 * kTileRows;  // rows of C a block computes: two tiles of A
// Rows of A packed together: each task runs its group across panels of B, so a packed group
// (up to 128 x 3072 bf16, 768 KiB) and a panel (at most 192 KiB) stay in L2.
constexpr int kGroupRows = 4 * kBlockRows;

// Tiles (kernels/amx_tiles.h): 0-3 accumulate a 32 x 32 block of C (0: rows 0-15, columns
// 0-15; 1: rows 0-15, columns 16-31; 2 and 3 the same for rows 16-31), 4 and 5 hold A's two
// 16-row halves (16 pairs each), 6 and 7 B's two 16-column halves.

// op(A)'s rows [i0, i0 + rows) as bf16 pairs along k, row-major: dst[r * kpp + q] holds
// op(A)(i0+r, 2q) in its low half and op(A)(i0+r, 2q+1) in its high half; zero past k, past
// the last row and up to `padded_rows`, so every tile runs whole.
void pack_a_rows(bool ta, const float* a, int lda, int i0, int rows, int padded_rows, int k, int kpp, uint32_t* dst) {
  if (!ta) {
    for (int r = 0; r < padded_rows; ++r) {
      uint32_t* out = dst + static_cast<int64_t>(r) * kpp;
      if (r >= rows) {
        std::memset(out, 0, sizeof(uint32_t) * kpp);
        continue;
      }
      const float* row = a + static_cast<int64_t>(i0 + r) * lda;
      for (int q0 = 0; q0 < kpp; q0 += 16) {
        const int p0 = 2 * q0;
        const __m512 lo = _mm512_maskz_loadu_ps(first(k - p0), row + p0);
        const __m512 hi = _mm512_maskz_loadu_ps(first(k - p0 - 16), row + p0 + 16);
        _mm512_store_si512(out + q0, to_bf16(lo, hi));
      }
    }
    return;
  }
  // op(A) rows are columns of the stored A: 16 pairs of stored rows give 16 pairs of 16 rows
  // of op(A) at once, transposed in registers.
  for (int r0 = 0; r0 < padded_rows; r0 += 16) {
    const __mmask16 lanes = first(rows - r0);
    for (int q0 = 0; q0 < kpp; q0 += 16) {
      __m512i v[16];
      for (int j = 0; j < 16; ++j) {
        const int p = 2 * (q0 + j);
        const float* src = a + static_cast<int64_t>(p) * lda + i0 + r0;
        const __m512 even = p < k ? _mm512_maskz_loadu_ps(lanes, src) : _mm512_setzero_ps();
        const __m512 odd = p + 1 < k ? _mm512_maskz_loadu_ps(lanes, src + lda) : _mm512_setzero_ps();
        v[j] = pair_rows(even, odd);  // lane i: pair q0 + j of row r0 + i
      }
      transpose16(v);  // v[i] lane j: pair q0 + j of row r0 + i
      for (int i = 0; i < 16; ++i) _mm512_store_si512(dst + static_cast<int64_t>(r0 + i) * kpp + q0, v[i]);
    }
  }
}

// One 32 x 32 block of C (TWO: both 16-row halves, else only the first) from packed A rows
// (row stride kpp pairs) and one panel of B, over all kpp pairs. A whole block (and beta 1)
// starts from C in the tiles and stores back to it; an edge block goes through `scratch`.
template <bool TWO>
void block(const uint32_t* a, const uint32_t* panel, int kpp, float beta, float* c, int64_t ldc, int rows, int cols,
           float* scratch) {
  const bool whole = rows == (TWO ? kBlockRows : kTileRows) && cols == kNr;
  const int64_t c_stride = ldc * static_cast<int64_t>(sizeof(float));
  if (whole && beta != 0.f) {
    _tile_loadd(0, c, c_stride);
    _tile_loadd(1, c + 16, c_stride);
    if (TWO) {
      _tile_loadd(2, c + kTileRows * ldc, c_stride);
      _tile_loadd(3, c + kTileRows * ldc + 16, c_stride);
    }
  } else {
    _tile_zero(0);
    _tile_zero(1);
    if (TWO) {
      _tile_zero(2);
      _tile_zero(3);
    }
  }
  const int64_t a_stride = static_cast<int64_t>(kpp) * sizeof(uint32_t), b_stride = kNr * sizeof(uint32_t);
  // The int8 kernel (kernels/qgemm_amx_avx512.cc) runs the same loop with tdpbusd.
  for (int q = 0; q < kpp; q += 16) {
    const uint32_t* bq = panel + static_cast<int64_t>(q) * kNr;
    _tile_loadd(4, a + q, a_stride);
    _tile_loadd(6, bq, b_stride);
    _tile_loadd(7, bq + 16, b_stride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if (TWO) {
      _tile_loadd(5, a + static_cast<int64_t>(kTileRows) * kpp + q, a_stride);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  if (whole) {
    _tile_stored(0, c, c_stride);
    _tile_stored(1, c + 16, c_stride);
    if (TWO) {
      _tile_stored(2, c + kTileRows * ldc, c_stride);
      _tile_stored(3, c + kTileRows * ldc + 16, c_stride);
    }
    return;
  }
  constexpr int64_t s_stride = kNr * sizeof(float);
  _tile_stored(0, scratch, s_stride);
  _tile_stored(1, scratch + 16, s_stride);
  if (TWO) {
    _tile_stored(2, scratch + kTileRows * kNr, s_stride);
    _tile_stored(3, scratch + kTileRows * kNr + 16, s_stride);
  }
  const __mmask16 m0 = first(cols), m1 = first(cols - 16);
  for (int r = 0; r < rows; ++r) {
    float* cr = c + r * ldc;
    __m512 v0 = _mm512_load_ps(scratch + r * kNr), v1 = _mm512_load_ps(scratch + r * kNr + 16);
    if (beta != 0.f) {  // beta is 1 (gemm_bf16 checks)
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    _mm512_mask_storeu_ps(cr, m0, v0);
    _mm512_mask_storeu_ps(cr + 16, m1, v1);
  }
}

}  // namespace

void gemm_bf16_amx(bool ta, int m, const float* a, int lda, const PackedBf16& b, float beta, float* c, int ldc,
                   Workers* workers) {
  const int kpp = b.padded_pairs(), n = b.n, panels = (n + kNr - 1) / kNr;
  const int groups = (m + kGroupRows - 1) / kGroupRows;
  const uint32_t* b_data = reinterpret_cast<const uint32_t*>(b.data.data());
  // Task t runs row group t / panels against panel t % panels; a thread packs a group once for
  // its consecutive tasks on it. Every element of C is summed in the same order whichever
  // thread computes it.
  parallel_for(workers, static_cast<int64_t>(groups) * panels, [&](int64_t t0, int64_t t1) {
    thread_local AlignedBuffer<uint32_t> a_pack;
    alignas(64) float scratch[kBlockRows * kNr];
    load_amx_tiles();
    int packed_group = -1;
    for (int64_t t = t0; t < t1; ++t) {
      const int g = static_cast<int>(t / panels), p = static_cast<int>(t % panels);
      const int g0 = g * kGroupRows, g_rows = std::min(kGroupRows, m - g0);
      const int padded = (g_rows + kBlockRows - 1) / kBlockRows * kBlockRows;
      if (g != packed_group) {
        a_pack.resize(static_cast<size_t>(padded) * kpp);
        pack_a_rows(ta, a, lda, g0, g_rows, padded, b.k, kpp, a_pack.data());
        packed_group = g;
      }
      const uint32_t* panel = b_data + static_cast<int64_t>(p) * kpp * kNr;
      const int cols = std::min(kNr, n - p * kNr);
      for (int r = 0; r < g_rows; r += kBlockRows) {
        const int rows = std::min(kBlockRows, g_rows - r);
        float* cb = c + static_cast<int64_t>(g0 + r) * ldc + p * kNr;
        const uint32_t* ab = a_pack.data() + static_cast<int64_t>(r) * kpp;
        if (rows > kTileRows)
          block<true>(ab, panel, kpp, beta, cb, ldc, rows, cols, scratch);
        else
          block<false>(ab, panel, kpp, beta, cb, ldc, rows, cols, scratch);
      }
    }
    release_amx_tiles();
  });
}

}  // namespace svc::train::detail

#if defined(__clang__)
#pragma clang attribute pop
#endif
