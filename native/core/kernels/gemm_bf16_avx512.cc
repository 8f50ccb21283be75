// The bf16 product kernel (see gemm_bf16.h). The file is built with the AVX-512 flags;
// vdpbf16ps needs AVX512_BF16 on top, enabled here only, since gemm_bf16() calls in
// after the run-time check alone.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512bf16"))), apply_to = function)
#else
#pragma GCC target("avx512bf16")
#endif

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "kernels/bf16_pack_avx512.h"
#include "kernels/gemm_bf16.h"

namespace svc::train::detail {
namespace {

// Rows of C per register tile: 14 x 2 accumulators, two B registers and one broadcast
// fill 31 of the 32 registers (the engine's fp32 tile has the same shape).
constexpr int kRows = 14;
constexpr int kNr = kBf16PanelWidth;

// A's rows [i0, i0 + rows) as bf16 pairs along k, pair-major: dst[q * kRows + r] holds
// op(A)(i0+r, 2q) in its low half and op(A)(i0+r, 2q+1) in its high half; zero past the
// last row and past k, so the tile always runs whole.
void pack_a(bool ta, const float* a, int lda, int i0, int rows, int k, uint32_t* dst) {
  const int kp = (k + 1) / 2;
  if (ta) {  // op(A) rows are columns of the stored A: two stored rows give 14 pairs at once
    const __mmask16 m = first(rows);
    for (int q = 0; q < kp; ++q) {
      const float* r0 = a + static_cast<int64_t>(2 * q) * lda + i0;
      const __m512 v0 = _mm512_maskz_loadu_ps(m, r0);
      const __m512 v1 = 2 * q + 1 < k ? _mm512_maskz_loadu_ps(m, r0 + lda) : _mm512_setzero_ps();
      _mm512_mask_storeu_epi32(dst + static_cast<int64_t>(q) * kRows, first(kRows), pair_rows(v0, v1));
    }
    return;
  }
  pairs_transposed(a + static_cast<int64_t>(i0) * lda, lda, rows, k, dst, kRows, first(kRows));
}

// One tile: ROWS rows of C (ROWS <= kRows) by one panel of up to 32 columns.
template <int ROWS>
void tile(const uint32_t* a, const uint16_t* panel, int kp, float beta, float* c, int64_t ldc, int cols) {
  __m512 acc[ROWS][2];
#pragma GCC unroll 14
  for (int r = 0; r < ROWS; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int q = 0; q < kp; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(panel + static_cast<int64_t>(q) * kNr * 2);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(panel + static_cast<int64_t>(q) * kNr * 2 + 32);
    const uint32_t* aq = a + static_cast<int64_t>(q) * kRows;
#pragma GCC unroll 14
    for (int r = 0; r < ROWS; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(aq[r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
  }
  const __mmask16 m0 = cols >= 16 ? 0xffff : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? 0xffff : cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
#pragma GCC unroll 14
  for (int r = 0; r < ROWS; ++r) {
    float* cr = c + r * ldc;
    __m512 v0 = acc[r][0], v1 = acc[r][1];
    if (beta != 0.f) {  // beta is 1 (gemm_bf16 checks)
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    _mm512_mask_storeu_ps(cr, m0, v0);
    _mm512_mask_storeu_ps(cr + 16, m1, v1);
  }
}

using TileFn = void (*)(const uint32_t*, const uint16_t*, int, float, float*, int64_t, int);

template <int... R>
constexpr auto tile_table(std::integer_sequence<int, R...>) {
  return std::array<TileFn, sizeof...(R)>{&tile<R + 1>...};
}

}  // namespace

void pack_b_bf16_avx512(bool tb, const float* b, int ldb, int k, int n, PackedBf16& out, Workers* workers) {
  const int panels = (n + kNr - 1) / kNr, kp = (k + 1) / 2, kpp = out.padded_pairs();
  uint32_t* data = reinterpret_cast<uint32_t*>(out.data.data());
  parallel_for(workers, panels, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      uint32_t* dst = data + p * kpp * kNr;
      std::fill(dst + static_cast<int64_t>(kp) * kNr, dst + static_cast<int64_t>(kpp) * kNr, 0u);
      const int col0 = static_cast<int>(p) * kNr, cols = std::min(kNr, n - col0);
      if (tb) {  // column j of op(B) is row j of B, its pairs already adjacent: 16 columns at a time
        for (int half = 0; half < kNr; half += 16)
          pairs_transposed(b + static_cast<int64_t>(col0 + half) * ldb, ldb, cols - half, k, dst + half, kNr,
                           first(16));
        continue;
      }
      const __mmask16 m0 = first(cols), m1 = first(cols - 16);
      for (int q = 0; q < kp; ++q) {  // rows 2q and 2q+1 of B, 32 columns each
        const float* r0 = b + static_cast<int64_t>(2 * q) * ldb + col0;
        const bool odd_end = 2 * q + 1 >= k;
        const __m512 a0 = _mm512_maskz_loadu_ps(m0, r0), a1 = _mm512_maskz_loadu_ps(m1, r0 + 16);
        const __m512 b0 = odd_end ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m0, r0 + ldb);
        const __m512 b1 = odd_end ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m1, r0 + ldb + 16);
        _mm512_store_si512(dst + static_cast<int64_t>(q) * kNr, pair_rows(a0, b0));
        _mm512_store_si512(dst + static_cast<int64_t>(q) * kNr + 16, pair_rows(a1, b1));
      }
    }
  });
}

void gemm_bf16_avx512(bool ta, int m, const float* a, int lda, const PackedBf16& b, float beta, float* c, int ldc,
                      Workers* workers) {
  static constexpr auto tiles = tile_table(std::make_integer_sequence<int, kRows>{});
  const int kp = b.pairs(), kpp = b.padded_pairs(), n = b.n, panels = (n + kNr - 1) / kNr;
  const int blocks = (m + kRows - 1) / kRows;
  // Each task packs its row blocks of A once and runs them across every panel of B.
  parallel_for(workers, blocks, [&](int64_t blk0, int64_t blk1) {
    thread_local AlignedBuffer<uint32_t> a_pack;
    a_pack.resize(static_cast<size_t>(kp) * kRows);
    for (int64_t blk = blk0; blk < blk1; ++blk) {
      const int i0 = static_cast<int>(blk) * kRows, rows = std::min(kRows, m - i0);
      pack_a(ta, a, lda, i0, rows, b.k, a_pack.data());
      for (int p = 0; p < panels; ++p)
        tiles[rows - 1](a_pack.data(), b.data.data() + static_cast<int64_t>(p) * kpp * kNr * 2, kp, beta,
                        c + static_cast<int64_t>(i0) * ldc + p * kNr, ldc, std::min(kNr, n - p * kNr));
    }
  });
}

}  // namespace svc::train::detail

#if defined(__clang__)
#pragma clang attribute pop
#endif
