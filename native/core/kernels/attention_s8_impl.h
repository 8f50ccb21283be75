// Self-attention of one head with int8 products, for the int8 encoder: included by
// ops_impl.h. The scalar translation unit compiles the reference loop (what the vector kernel
// is tested against, detail::attention_head_s8_reference); the AVX2 and AVX-512 ones compile
// the 256-bit vector kernel. AVX2 runs it with vpmaddubsw, or with vpdpbusd where the CPU has
// AVX-VNNI; AVX-512 runs it only with VNNI (vpdpbusd on ymm), and keeps its fp32 kernel without.
//
// The arithmetic, one definition for both:
//   Q per query row (the head's dh values): 8 bits, s = amax / 127, stored as q + 128 (u8);
//   K per key row: 7 bits, s = amax / 63; V per column over the text's keys: 7 bits.
//   scores = float(sum_d q8 k8) * (s_q * (s_k * scale)), softmax numerators p = exp(x - max) in
//   (0, 1] quantized to u8 as round(255 p), and out = float(sum_j p8 v8) * (s_v / sum_j p8): the
//   weights are normalized by the sum of the quantized ones, so they add up to 1 exactly.
// The 7-bit operand is what vpmaddubsw needs (u8 x s8 pairs summed into int16 with
// saturation): 2 * 255 * 63 = 32130 < 32767, so its integer sums are exact. Rounding is half to
// even (nearbyint, cvtps2dq) in both.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/vec_math.h"

namespace svc {
namespace {

constexpr float kS8QMax = 127.0f;  // Q's largest magnitude
constexpr float kS8KvMax = 63.0f;  // K's and V's
constexpr float kS8PMax = 255.0f;  // a softmax numerator of 1

#if !defined(__AVX2__)
void attention_head_s8_reference_impl(const float* q, const float* k, const float* v, int64_t ld, int len, int dh,
                                      float scale, const float* position_bias, float* out, int64_t ldo,
                                      float* scratch) {
  // scratch: one row of scores, the scales of K (times scale) and V, K and V quantized ([len x dh] each).
  float* row = scratch;   // [len]
  float* ks = row + len;  // [len]
  float* vs = ks + len;   // [dh]
  auto* kq = reinterpret_cast<int8_t*>(vs + dh);
  int8_t* vq = kq + static_cast<int64_t>(len) * dh;
  for (int j = 0; j < len; ++j) {
    float amax = 0;
    for (int d = 0; d < dh; ++d) amax = std::fmax(amax, std::fabs(k[j * ld + d]));
    const float s = amax > 0 ? amax / kS8KvMax : 1.0f, inv = 1.0f / s;
    for (int d = 0; d < dh; ++d) kq[j * dh + d] = static_cast<int8_t>(std::nearbyint(k[j * ld + d] * inv));
    ks[j] = s * scale;
  }
  for (int d = 0; d < dh; ++d) {
    float amax = 0;
    for (int j = 0; j < len; ++j) amax = std::fmax(amax, std::fabs(v[j * ld + d]));
    const float s = amax > 0 ? amax / kS8KvMax : 1.0f, inv = 1.0f / s;
    for (int j = 0; j < len; ++j) vq[j * dh + d] = static_cast<int8_t>(std::nearbyint(v[j * ld + d] * inv));
    vs[d] = s;
  }
  int32_t qq[512];  // dh <= 512
  for (int i = 0; i < len; ++i) {
    const float* qi = q + i * ld;
    float amax = 0;
    for (int d = 0; d < dh; ++d) amax = std::fmax(amax, std::fabs(qi[d]));
    const float sq = amax > 0 ? amax / kS8QMax : 1.0f, inv = 1.0f / sq;
    for (int d = 0; d < dh; ++d) qq[d] = static_cast<int32_t>(std::nearbyint(qi[d] * inv));
    float mx = -INFINITY;
    for (int j = 0; j < len; ++j) {
      int32_t dot = 0;
      for (int d = 0; d < dh; ++d) dot += qq[d] * kq[j * dh + d];
      row[j] = static_cast<float>(dot) * (sq * ks[j]);
      if (position_bias) row[j] += position_bias[i - j + len - 1];
      mx = std::fmax(mx, row[j]);
    }
    int32_t total = 0;
    int32_t* pq = reinterpret_cast<int32_t*>(row);  // each p8 replaces its score
    for (int j = 0; j < len; ++j) {
      pq[j] = static_cast<int32_t>(std::nearbyint(vec::fast_exp(row[j] - mx) * kS8PMax));
      total += pq[j];
    }
    const float inv_total = 1.0f / static_cast<float>(total);
    for (int d = 0; d < dh; ++d) {
      int32_t acc = 0;
      for (int j = 0; j < len; ++j) acc += pq[j] * vq[j * dh + d];
      out[i * ldo + d] = static_cast<float>(acc) * (vs[d] * inv_total);
    }
  }
}
#endif

#if defined(__AVX2__)
// The 256-bit kernel for head size 32: queries in blocks of 8 (one lane each, as the fp32
// kernel: the softmax runs down the columns with no horizontal reduction). A block's Q sits in
// 8 registers as [4 dims][8 queries] u8 quads; each key's scores for the block are 8 vpmaddubsw
// against that key's 4-dim quads broadcast. P V takes 4 keys' p8 of one query broadcast against
// V packed as [4 keys][32 dims] quads (4 registers). Per 32 multiply-adds that is one
// vpmaddubsw and one vpmaddwd against four FMAs, or one vpdpbusd with VNNI. The 7-bit K and V
// keep vpmaddubsw exact, and VNNI takes the same bytes: both give the same integer sums.
namespace s8 {

template <bool kVnni>
inline __m256i dot4(__m256i acc, __m256i u8, __m256i s8, __m256i ones) {
  if constexpr (kVnni) return vec::dpbusd8(acc, u8, s8);
  const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), ones);
  return _mm256_add_epi32(acc, sums);
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

// 32 floats times inv (one value or one per column), rounded: four vectors of int32.
inline void round32(const float* x, const __m256 inv[4], __m256i out[4]) {
  for (int c = 0; c < 4; ++c) out[c] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * c), inv[c]));
}

// The 32 int32 (each within int8) as bytes, 4-dim quads in the order D0 D2 D4 D6 D1 D3 D5 D7
// (packs work within 128-bit lanes); Q and K both use it, so their dot products do not care.
inline __m256i pack32(const __m256i x[4]) {
  return _mm256_packs_epi16(_mm256_packs_epi32(x[0], x[1]), _mm256_packs_epi32(x[2], x[3]));
}

inline float amax32(const float* x) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 m = _mm256_and_ps(_mm256_loadu_ps(x), abs_mask);
  for (int c = 1; c < 4; ++c) m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + 8 * c), abs_mask));
  return hmax(m);
}

// One row of 32 quantized to |x| <= max_q with one scale (returned), as the reference loop does.
inline float quantize_row(const float* row, float max_q, __m256i out[4]) {
  const float amax = amax32(row);
  const float s = amax > 0 ? amax / max_q : 1.0f;
  const __m256 inv = _mm256_set1_ps(1.0f / s);
  const __m256 invs[4] = {inv, inv, inv, inv};
  round32(row, invs, out);
  return s;
}

}  // namespace s8

// kBiased: position_bias is not null (MPNet); a template flag rather than a test, so that the key loop
// of BERT and XLM-RoBERTa carries nothing for it.
template <bool kVnni, bool kBiased>
void attention_head_s8_ymm(const float* q, const float* k, const float* v, int64_t ld, int len, float scale,
                           const float* position_bias, float* out, int64_t ldo, float* scratch) {
  constexpr int kDh = 32, kW = 8;
  const int lp = (len + 3) / 4 * 4;  // keys rounded up to whole quads, p8 = 0 and v8 = 0 past len
  // Scratch (fits attention_scratch_floats): K bytes [lp][32] with 128 * row sums and scales,
  // V quads [lp / 4][32][4], the block's scores [lp][8] and p8 quads [lp / 4][8].
  auto* kq = reinterpret_cast<int8_t*>(scratch);
  int32_t* koff = reinterpret_cast<int32_t*>(kq + static_cast<int64_t>(lp) * kDh);
  float* ks = reinterpret_cast<float*>(koff + lp);
  auto* vq = reinterpret_cast<int8_t*>(ks + lp);
  float* st = reinterpret_cast<float*>(vq + static_cast<int64_t>(lp) * kDh);
  int32_t* pquad = reinterpret_cast<int32_t*>(st + static_cast<int64_t>(lp) * kW);
  const __m256i ones = _mm256_set1_epi16(1);

  for (int j = 0; j < len; ++j) {
    __m256i x[4];
    const float s = s8::quantize_row(k + j * ld, kS8KvMax, x);
    __m256i sum = _mm256_add_epi32(_mm256_add_epi32(x[0], x[1]), _mm256_add_epi32(x[2], x[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(kq + j * kDh), s8::pack32(x));
    koff[j] = 128 * _mm_cvtsi128_si32(s4);  // undoes Q's +128
    ks[j] = s * scale;
  }

  // V: one scale per column, then 4 keys at a time interleaved into [32 dims][4 keys] quads.
  __m256 vmax[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (int j = 0; j < len; ++j)
    for (int c = 0; c < 4; ++c)
      vmax[c] = _mm256_max_ps(vmax[c], _mm256_and_ps(_mm256_loadu_ps(v + j * ld + 8 * c), abs_mask));
  __m256 vs[4], vinv[4];
  for (int c = 0; c < 4; ++c) {
    const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
    const __m256 has = _mm256_cmp_ps(vmax[c], zero, _CMP_GT_OQ);
    vs[c] = _mm256_blendv_ps(one, _mm256_div_ps(vmax[c], _mm256_set1_ps(kS8KvMax)), has);
    vinv[c] = _mm256_div_ps(one, vs[c]);
  }
  const __m256i natural = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // pack32's quads back in order
  for (int j0 = 0; j0 < lp; j0 += 4) {
    __m256i rows[4];
    for (int t = 0; t < 4; ++t) {
      if (j0 + t < len) {
        __m256i x[4];
        s8::round32(v + (j0 + t) * ld, vinv, x);
        rows[t] = _mm256_permutevar8x32_epi32(s8::pack32(x), natural);
      } else {
        rows[t] = _mm256_setzero_si256();
      }
    }
    const __m256i lo01 = _mm256_unpacklo_epi8(rows[0], rows[1]), hi01 = _mm256_unpackhi_epi8(rows[0], rows[1]);
    const __m256i lo23 = _mm256_unpacklo_epi8(rows[2], rows[3]), hi23 = _mm256_unpackhi_epi8(rows[2], rows[3]);
    // Each 128-bit lane holds dims 0-15 (low) or 16-31 (high): quads of dims 0-3|16-19, 4-7|20-23, ...
    const __m256i a = _mm256_unpacklo_epi16(lo01, lo23), b = _mm256_unpackhi_epi16(lo01, lo23);
    const __m256i c = _mm256_unpacklo_epi16(hi01, hi23), d = _mm256_unpackhi_epi16(hi01, hi23);
    __m256i* dst = reinterpret_cast<__m256i*>(vq + static_cast<int64_t>(j0) * kDh);
    _mm256_storeu_si256(dst + 0, _mm256_permute2x128_si256(a, b, 0x20));  // dims 0-7
    _mm256_storeu_si256(dst + 1, _mm256_permute2x128_si256(c, d, 0x20));  // dims 8-15
    _mm256_storeu_si256(dst + 2, _mm256_permute2x128_si256(a, b, 0x31));  // dims 16-23
    _mm256_storeu_si256(dst + 3, _mm256_permute2x128_si256(c, d, 0x31));  // dims 24-31
  }

  for (int i0 = 0; i0 < len; i0 += kW) {
    const int rows = len - i0 < kW ? len - i0 : kW;
    // The block's queries as [quad g][query] u8 (q + 128), 128 = zero past the text's end.
    alignas(32) int32_t qb[kDh / 4][kW];
    alignas(32) float qs[kW];
    for (int r = 0; r < kW; ++r) {
      if (r >= rows) {
        for (int g = 0; g < kDh / 4; ++g) qb[g][r] = static_cast<int32_t>(0x80808080u);
        qs[r] = 0.0f;
        continue;
      }
      __m256i x[4];
      const float s = s8::quantize_row(q + (i0 + r) * ld, kS8QMax, x);
      alignas(32) int32_t quads[kDh / 4];
      _mm256_store_si256(reinterpret_cast<__m256i*>(quads),
                         _mm256_xor_si256(s8::pack32(x), _mm256_set1_epi8(static_cast<char>(0x80))));
      for (int g = 0; g < kDh / 4; ++g) qb[g][r] = quads[g];
      qs[r] = s;
    }
    __m256i qv[kDh / 4];
    for (int g = 0; g < kDh / 4; ++g) qv[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(qb[g]));
    const __m256 vqs = _mm256_load_ps(qs);
    // Scores, one key a vector of the block's 8 queries, and their running max.
    __m256 mx = _mm256_set1_ps(-INFINITY);
    for (int j = 0; j < len; ++j) {
      const int8_t* kj = kq + j * kDh;
      __m256i acc = _mm256_setzero_si256();
      for (int g = 0; g < kDh / 4; ++g) {
        int32_t quad;
        std::memcpy(&quad, kj + 4 * g, 4);
        acc = s8::dot4<kVnni>(acc, qv[g], _mm256_set1_epi32(quad), ones);
      }
      __m256 sc = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc, _mm256_set1_epi32(koff[j]))),
                                _mm256_mul_ps(vqs, _mm256_set1_ps(ks[j])));
      if constexpr (kBiased) sc = _mm256_add_ps(sc, _mm256_loadu_ps(position_bias + i0 - j + len - 1));
      _mm256_storeu_ps(st + j * kW, sc);
      mx = _mm256_max_ps(mx, sc);
    }
    // p8 = round(255 exp(x - max)), 4 keys' p8 of a query packed into one int32 (key t in byte t).
    __m256i total = _mm256_setzero_si256();
    const __m256 p_max = _mm256_set1_ps(kS8PMax);
    for (int j0 = 0; j0 < lp; j0 += 4) {
      __m256i quad = _mm256_setzero_si256();
      for (int t = 0; t < 4 && j0 + t < len; ++t) {
        const __m256 e = vec::exp8(_mm256_sub_ps(_mm256_loadu_ps(st + (j0 + t) * kW), mx));
        const __m256i p8 = _mm256_cvtps_epi32(_mm256_mul_ps(e, p_max));
        total = _mm256_add_epi32(total, p8);
        quad = _mm256_or_si256(quad, _mm256_sll_epi32(p8, _mm_cvtsi32_si128(8 * t)));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(pquad + j0 / 4 * kW), quad);
    }
    alignas(32) float inv_total[kW];
    _mm256_store_ps(inv_total, _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_cvtepi32_ps(total)));
    // O = P V, two queries at a time: 8 accumulators, V's 4 vectors of a quad of keys.
    for (int r0 = 0; r0 < rows; r0 += 2) {
      __m256i acc[2][4];
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 4; ++c) acc[r][c] = _mm256_setzero_si256();
      for (int g = 0; g < lp / 4; ++g) {
        const __m256i* vg = reinterpret_cast<const __m256i*>(vq + static_cast<int64_t>(g) * 4 * kDh);
        __m256i vv[4];
        for (int c = 0; c < 4; ++c) vv[c] = _mm256_loadu_si256(vg + c);
        for (int r = 0; r < 2; ++r) {
          const __m256i p = _mm256_set1_epi32(pquad[g * kW + r0 + r]);
          for (int c = 0; c < 4; ++c) acc[r][c] = s8::dot4<kVnni>(acc[r][c], p, vv[c], ones);
        }
      }
      for (int r = 0; r < 2 && r0 + r < rows; ++r) {
        float* oi = out + (i0 + r0 + r) * ldo;
        const __m256 it = _mm256_set1_ps(inv_total[r0 + r]);
        for (int c = 0; c < 4; ++c)
          _mm256_storeu_ps(oi + 8 * c, _mm256_mul_ps(_mm256_cvtepi32_ps(acc[r][c]), _mm256_mul_ps(vs[c], it)));
      }
    }
  }
}
#endif

}  // namespace
}  // namespace svc
