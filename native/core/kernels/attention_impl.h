// Fused self-attention of one head of one text for the vector levels (AVX-512 and AVX2),
// included by ops_impl.h, so each ISA translation unit compiles its own copy.
//
// Queries go in blocks of one vector (16 for AVX-512, 8 for AVX2). For a block, S^T = K Q^T
// is computed into a [len x lanes] buffer (at most 512 x 16 floats, so it stays in L1/L2 while
// it is used), softmaxed and multiplied by V at once: the [len x len] score matrix of the head
// never exists. With len <= 512 a block holds whole rows of scores, so it needs no online
// (running-max) softmax. Keeping a key's scores for the block's queries in one vector makes
// the softmax vertical (each query's max, exponentials and sum in its own lane: no horizontal
// reduction, no key tail) and puts the probabilities that P V broadcasts side by side. The
// 1 / sum of each row scales the output row, one multiply per output instead of one per score.
//
// Register blocking, as in the GEMM tiles: K is packed once per head into tiles of kKeys keys
// ([d][key], zero past len) so that S^T takes one Q load and kKeys broadcasts from one cache
// line per step into kKeys accumulators (24 of 32 zmm, 12 of 16 ymm); P V holds kPvRows queries
// x dh / lanes vectors of O. Queries past the text's end are zeros and their rows are not stored.
#pragma once

#include <cstdint>

#include "kernels/vec_math.h"

namespace svc {
namespace {

#if defined(__AVX512F__) || defined(__AVX2__)
// The few vector operations the kernel uses, at this translation unit's register width, so that one
// kernel body below serves AVX-512 and AVX2.
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
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V exp(V x) { return vec::exp16(x); }
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
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V exp(V x) { return vec::exp8(x); }
};
#endif

// O rows [q0, q0 + kR) of a query block: O = P V with P read from the transposed scores.
template <int kDh, int kR>
void attention_pv(const float* pt, const float* v, int64_t ld, int len, const float* inv, int q0, int rows, float* out,
                  int64_t ldo) {
  using S = Simd;
  constexpr int kW = S::kLanes;
  constexpr int kVecs = kDh / kW;
  typename S::V o[kR][kVecs];
#pragma GCC unroll 12
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < kVecs; ++c) o[r][c] = S::zero();
  for (int j = 0; j < len; ++j) {
    const float* vj = v + j * ld;
    const float* pj = pt + j * kW + q0;  // the probabilities of key j for these queries, side by side
    typename S::V vv[kVecs];
#pragma GCC unroll 8
    for (int c = 0; c < kVecs; ++c) vv[c] = S::load(vj + c * kW);
#pragma GCC unroll 12
    for (int r = 0; r < kR; ++r) {
      const typename S::V p = S::set1(pj[r]);
#pragma GCC unroll 8
      for (int c = 0; c < kVecs; ++c) o[r][c] = S::fmadd(p, vv[c], o[r][c]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kR; ++r) {
    if (q0 + r >= rows) break;
    float* oi = out + (q0 + r) * ldo;
    const typename S::V vinv = S::set1(inv[q0 + r]);
#pragma GCC unroll 8
    for (int c = 0; c < kVecs; ++c) S::store(oi + c * kW, S::mul(o[r][c], vinv));
  }
}

template <int kDh>
void attention_head_fused(const float* q, const float* k, const float* v, int64_t ld, int len, float scale,
                          const float* position_bias, float* out, int64_t ldo, float* scratch) {
  using S = Simd;
  using V = typename S::V;
  constexpr int kW = S::kLanes;                      // queries per block: one vector
  constexpr int kKeys = S::kAccumulators;            // keys per S^T tile, one accumulator each
  constexpr int kVecs = kDh / kW;                    // vectors per row of V and O
  constexpr int kPvRows = S::kAccumulators / kVecs;  // queries per P V tile
  const int lk = (len + kKeys - 1) / kKeys * kKeys;  // keys rounded up to whole tiles
  float* kp = scratch;                               // [lk / kKeys][kDh][kKeys]: K packed, zero past len
  float* st = kp + static_cast<int64_t>(kDh) * lk;   // [lk][kW]: S^T of one block, then P^T
  float* qt = st + static_cast<int64_t>(lk) * kW;    // [kDh][kW]: the block's queries, scaled, transposed
  for (int j = 0; j < len; ++j) {
    float* dst = kp + static_cast<int64_t>(j / kKeys) * kKeys * kDh + j % kKeys;
#pragma GCC unroll 8
    for (int d = 0; d < kDh; ++d) dst[d * kKeys] = k[j * ld + d];
  }
  for (int j = len; j < lk; ++j) {
    float* dst = kp + static_cast<int64_t>(j / kKeys) * kKeys * kDh + j % kKeys;
    for (int d = 0; d < kDh; ++d) dst[d * kKeys] = 0.0f;
  }

  for (int i0 = 0; i0 < len; i0 += kW) {
    const int rows = len - i0 < kW ? len - i0 : kW;
    for (int r = 0; r < rows; ++r)
#pragma GCC unroll 8
      for (int d = 0; d < kDh; ++d) qt[d * kW + r] = q[(i0 + r) * ld + d] * scale;
    for (int r = rows; r < kW; ++r)
      for (int d = 0; d < kDh; ++d) qt[d * kW + r] = 0.0f;
    // S^T = K Q^T: one vector holds one key's scores for every query of the block.
    for (int j0 = 0; j0 < lk; j0 += kKeys) {
      const float* kt = kp + static_cast<int64_t>(j0) * kDh;
      V acc[kKeys];
#pragma GCC unroll 24
      for (int jj = 0; jj < kKeys; ++jj) acc[jj] = S::zero();
      for (int d = 0; d < kDh; ++d) {
        const V qd = S::load(qt + d * kW);
#pragma GCC unroll 24
        for (int jj = 0; jj < kKeys; ++jj) acc[jj] = S::fmadd(S::set1(kt[d * kKeys + jj]), qd, acc[jj]);
      }
#pragma GCC unroll 24
      for (int jj = 0; jj < kKeys; ++jj) S::store(st + (j0 + jj) * kW, acc[jj]);
    }
    // MPNet's position bias: key j's bias for the block's queries i0.. is consecutive in the table.
    if (position_bias)
      for (int j = 0; j < len; ++j)
        S::store(st + j * kW, S::add(S::load(st + j * kW), S::load(position_bias + i0 - j + len - 1)));
    // Softmax down the columns: every query's max, exponentials and sum at once, no
    // horizontal reductions and no key tail. The 1 / sum scales the output rows.
    V vmax = S::load(st);
    for (int j = 1; j < len; ++j) vmax = S::max(vmax, S::load(st + j * kW));
    V vsum = S::zero();
    for (int j = 0; j < len; ++j) {
      const V e = S::exp(S::sub(S::load(st + j * kW), vmax));
      S::store(st + j * kW, e);
      vsum = S::add(vsum, e);
    }
    alignas(64) float inv[kW];
    S::store(inv, S::div(S::set1(1.0f), vsum));
    // O = P V in tiles of kPvRows queries, then the remainder of the block.
    int r0 = 0;
    for (; r0 + kPvRows <= kW; r0 += kPvRows)
      attention_pv<kDh, kPvRows>(st, v, ld, len, inv, r0, rows, out + i0 * ldo, ldo);
    if constexpr (kW % kPvRows != 0)
      attention_pv<kDh, kW % kPvRows>(st, v, ld, len, inv, r0, rows, out + i0 * ldo, ldo);
  }
}
#endif

}  // namespace
}  // namespace svc
