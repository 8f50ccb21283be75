// Fused self-attention of one head of one text for the vector levels (AVX-512 and AVX2),
// included by ops_impl.h, so each ISA translation unit compiles its own copy.
//
// Queries go in blocks of kRows. For one block the scores S = Q K^T * scale of every key are
// computed into a [kRows x lp] buffer (at most 12 x 512 floats, so it stays in L1 while it is
// used), softmaxed row by row, and multiplied by V at once. The [len x len] score matrix of the
// head never exists, so long texts keep the scores in cache: with len <= 512 a block holds whole
// rows and needs no online (running-max) softmax. The 1 / sum of each row is applied to the
// output row, one multiply per output instead of one per score.
//
// Register blocking: V and O rows are kVecs = dh / lanes vectors wide; kRows * kVecs
// accumulators (24 of 32 zmm, 12 of 16 ymm) hold a block of O, and the same count holds a
// block of S (kRows queries x kVecs vectors of keys), K transposed and zero-padded to a
// multiple of kVecs * lanes keys. Row tails reuse the last query (valid memory, results not
// stored), so every inner loop has fixed trip counts.
#pragma once

#include <cstdint>

#include "kernels/vec_math.h"

namespace svc {
namespace {

#if defined(__AVX512F__) || defined(__AVX2__)
#if defined(__AVX512F__)
struct Simd {
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kAccumulators = 24;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static float reduce_max(V v) { return _mm512_reduce_max_ps(v); }
};
#else
struct Simd {
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kAccumulators = 12;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static float reduce_max(V v) {
    const __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 m2 = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
  }
};
#endif

template <int kDh>
void attention_head_fused(const float* q, const float* k, const float* v, int64_t ld, int len, float scale,
                          float* out, int64_t ldo, float* scratch) {
  using S = Simd;
  constexpr int kW = S::kLanes;
  constexpr int kVecs = kDh / kW;                  // vectors per row of V and O, and keys per S tile / kW
  constexpr int kRows = S::kAccumulators / kVecs;  // queries per block
  static_assert(kRows <= 16, "attention_scratch_floats (ops.h) allows 16 rows of scores");
  const int lp = (len + kDh - 1) / kDh * kDh;      // keys rounded up to whole S tiles (kVecs * kW = kDh)
  float* kt = scratch;                             // [kDh x lp], K transposed, zero past len
  float* s = scratch + static_cast<int64_t>(kDh) * lp;  // [kRows x lp], one block of scores
  for (int j = 0; j < len; ++j)
    for (int d = 0; d < kDh; ++d) kt[d * lp + j] = k[j * ld + d];
  for (int d = 0; d < kDh; ++d)
    for (int j = len; j < lp; ++j) kt[d * lp + j] = 0;
  const typename S::V vscale = S::set1(scale);
  const int full = len / kW * kW;  // keys in whole vectors; the rest of a row is done lane by lane

  for (int i0 = 0; i0 < len; i0 += kRows) {
    const float* qrow[kRows];
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) qrow[r] = q + (i0 + r < len ? i0 + r : len - 1) * ld;
    // S block = Q block K^T * scale, kVecs vectors of keys per step.
    for (int j0 = 0; j0 < lp; j0 += kDh) {
      typename S::V acc[kRows][kVecs];
#pragma GCC unroll 12
      for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < kVecs; ++c) acc[r][c] = S::zero();
      for (int d = 0; d < kDh; ++d) {
        typename S::V kv[kVecs];
#pragma GCC unroll 8
        for (int c = 0; c < kVecs; ++c) kv[c] = S::load(kt + d * lp + j0 + c * kW);
#pragma GCC unroll 12
        for (int r = 0; r < kRows; ++r) {
          const typename S::V qd = S::set1(qrow[r][d]);
#pragma GCC unroll 8
          for (int c = 0; c < kVecs; ++c) acc[r][c] = S::fmadd(qd, kv[c], acc[r][c]);
        }
      }
#pragma GCC unroll 12
      for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < kVecs; ++c) S::store(s + r * lp + j0 + c * kW, S::mul(acc[r][c], vscale));
    }
    // Softmax numerators in place; the denominators wait for the output.
    float inv[kRows];
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      float* row = s + r * lp;
      typename S::V vmax = S::set1(-3.0e38f);
      for (int j = 0; j < full; j += kW) vmax = S::max(vmax, S::load(row + j));
      float mx = S::reduce_max(vmax);
      for (int j = full; j < len; ++j) mx = row[j] > mx ? row[j] : mx;
      inv[r] = 1.0f / vec::exp_shifted_sum(row, len, mx);
    }
    // O block = P V.
    typename S::V o[kRows][kVecs];
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < kVecs; ++c) o[r][c] = S::zero();
    for (int j = 0; j < len; ++j) {
      const float* vj = v + j * ld;
      typename S::V vv[kVecs];
#pragma GCC unroll 8
      for (int c = 0; c < kVecs; ++c) vv[c] = S::load(vj + c * kW);
#pragma GCC unroll 12
      for (int r = 0; r < kRows; ++r) {
        const typename S::V p = S::set1(s[r * lp + j]);
#pragma GCC unroll 8
        for (int c = 0; c < kVecs; ++c) o[r][c] = S::fmadd(p, vv[c], o[r][c]);
      }
    }
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      if (i0 + r >= len) break;
      float* oi = out + (i0 + r) * ldo;
      const typename S::V vinv = S::set1(inv[r]);
#pragma GCC unroll 8
      for (int c = 0; c < kVecs; ++c) S::store(oi + c * kW, S::mul(o[r][c], vinv));
    }
  }
}
#endif

}  // namespace
}  // namespace svc
