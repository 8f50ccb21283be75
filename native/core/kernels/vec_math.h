// Element-wise math written as plain loops over float arrays so that each ISA's
// translation unit (compiled with its own -m flags) vectorizes them. exp and erf
// are polynomial approximations accurate to a few ulp / 1.5e-7 absolute, enough for
// fp32 parity with onnxruntime (1e-4 per embedding component).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace svc {
namespace vec {
// Internal linkage: every ISA translation unit keeps its own copy (the linker
// must not merge an AVX-512 body into the scalar path).
namespace {

inline float fast_exp(float x) {
  // exp(x) = 2^n * exp(r), r in [-ln2/2, ln2/2]; Cephes polynomial for exp(r).
  x = x < -87.3f ? -87.3f : (x > 88.3f ? 88.3f : x);
  float n = __builtin_floorf(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

// erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7).
inline float fast_erf(float x) {
  float ax = x < 0 ? -x : x;
  float t = 1.0f / (1.0f + 0.3275911f * ax);
  float y = 1.061405429f;
  y = y * t - 1.453152027f;
  y = y * t + 1.421413741f;
  y = y * t - 0.284496736f;
  y = y * t + 0.254829592f;
  y = 1.0f - y * t * fast_exp(-ax * ax);
  return x < 0 ? -y : y;
}

inline float gelu(float x) { return 0.5f * x * (1.0f + fast_erf(x * 0.70710678118654752f)); }

// GELU for int8 encoders, whose FFN activations are rounded to a step of max|row| / 127 next:
// erf by Abramowitz & Stegun 7.1.27, 1 - 1 / (1 + a1 z + a2 z^2 + a3 z^3 + a4 z^4)^4 (|error|
// <= 5e-4), no exp. |gelu_coarse(x) - gelu(x)| <= 3e-4 |x|, hundreds of times below that step.
constexpr float kCoarseErf[4] = {0.278393f, 0.230389f, 0.000972f, 0.078108f};
inline float gelu_coarse(float x) {
  const float az = (x < 0 ? -x : x) * 0.70710678118654752f;
  float p = kCoarseErf[3];
  for (int i = 2; i >= 0; --i) p = p * az + kCoarseErf[i];
  p = p * az + 1.0f;
  const float p2 = p * p;
  const float erf_abs = 1.0f - 1.0f / (p2 * p2);
  return 0.5f * x * (1.0f + (x < 0 ? -erf_abs : erf_abs));
}

#if defined(__AVX512F__)
// The same exp / erf / GELU as above, 16 lanes at a time.
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.3f)), _mm512_set1_ps(-87.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  const __m512 r2 = _mm512_mul_ps(r, r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}
inline __m512 gelu16(__m512 x) {
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
  const __m512 az = _mm512_abs_ps(z);
  // 1 / (1 + p|z|) by rcp14 and one Newton step (relative error ~1e-7), cheaper than a divide.
  const __m512 den = _mm512_fmadd_ps(az, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f));
  __m512 t = _mm512_rcp14_ps(den);
  t = _mm512_mul_ps(t, _mm512_fnmadd_ps(den, t, _mm512_set1_ps(2.0f)));
  __m512 y = _mm512_set1_ps(1.061405429f);
  y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(-1.453152027f));
  y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(1.421413741f));
  y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(-0.284496736f));
  y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(0.254829592f));
  const __m512 e = exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), az), az));
  __m512 erf_abs = _mm512_fnmadd_ps(_mm512_mul_ps(y, t), e, _mm512_set1_ps(1.0f));
  // erf is odd: copy the sign of z.
  const __m512 sign = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(INT32_MIN)));
  const __m512 erf = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(erf_abs), _mm512_castps_si512(sign)));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(_mm512_set1_ps(1.0f), erf));
}
// gelu_coarse, 16 lanes (rcp14's 2^-14 adds at most 6e-5 to erf's error).
inline __m512 gelu_coarse16(__m512 x) {
  const __m512 az = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kCoarseErf[3]), az, _mm512_set1_ps(kCoarseErf[2]));
  p = _mm512_fmadd_ps(p, az, _mm512_set1_ps(kCoarseErf[1]));
  p = _mm512_fmadd_ps(p, az, _mm512_set1_ps(kCoarseErf[0]));
  p = _mm512_fmadd_ps(p, az, _mm512_set1_ps(1.0f));
  const __m512 p2 = _mm512_mul_ps(p, p);
  const __m512 erf_abs = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_rcp14_ps(_mm512_mul_ps(p2, p2)));
  const __m512 sign = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
  const __m512 erf = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(erf_abs), _mm512_castps_si512(sign)));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(_mm512_set1_ps(1.0f), erf));
}
#endif
#if defined(__AVX2__)
// The same exp / erf / GELU, 8 lanes at a time: the loop over the scalar forms above does
// not vectorize (floor, the exponent bit trick), and GELU runs over every FFN activation.
// Intentionally a twin of exp16 / gelu16: other register width, and AVX2 has no scalef or rcp14.
// The AVX-512 build has them too, for the 256-bit int8 attention it shares with AVX2.

// acc += the sums of 4 u8 x s8 products per int32 lane (vpdpbusd on ymm). The AVX-512 build emits the
// EVEX form (AVX512_VNNI with VL), the AVX2 build the VEX form (AVX-VNNI); each build is only
// dispatched to on a CPU that has its form. Inline asm needs no compiler flag for the instruction,
// so the AVX2 files keep flags every AVX2 CPU runs; `%{vex%}` is `{vex}` in an asm template.
inline __m256i dpbusd8(__m256i acc, __m256i u8, __m256i s8) {
#if defined(__AVX512F__)
  __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
#else
  __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u8), "x"(s8));
#endif
  return acc;
}
inline __m256 exp8(__m256 x) {
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.3f)), _mm256_set1_ps(-87.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  const __m256 r2 = _mm256_mul_ps(r, r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
  // 2^n built in the exponent field (n is within [-126, 127] after the clamp).
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}
// erf(z), 8 lanes: the GELU here and the training core's Φ (train/vector_ops_impl.h) share it.
inline __m256 erf8(__m256 z) {
  const __m256 sign = _mm256_and_ps(z, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN)));
  const __m256 az = _mm256_xor_ps(z, sign);
  const __m256 t =
      _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(az, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
  __m256 y = _mm256_set1_ps(1.061405429f);
  y = _mm256_fmadd_ps(y, t, _mm256_set1_ps(-1.453152027f));
  y = _mm256_fmadd_ps(y, t, _mm256_set1_ps(1.421413741f));
  y = _mm256_fmadd_ps(y, t, _mm256_set1_ps(-0.284496736f));
  y = _mm256_fmadd_ps(y, t, _mm256_set1_ps(0.254829592f));
  const __m256 e = exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), az), az));
  return _mm256_or_ps(_mm256_fnmadd_ps(_mm256_mul_ps(y, t), e, _mm256_set1_ps(1.0f)), sign);
}
inline __m256 gelu8(__m256 x) {
  const __m256 erf = erf8(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), erf));
}
// gelu_coarse, 8 lanes (a divide: AVX2's 12-bit reciprocal would double erf's error).
inline __m256 gelu_coarse8(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN)));
  const __m256 az = _mm256_mul_ps(_mm256_xor_ps(x, sign), _mm256_set1_ps(0.70710678118654752f));
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kCoarseErf[3]), az, _mm256_set1_ps(kCoarseErf[2]));
  p = _mm256_fmadd_ps(p, az, _mm256_set1_ps(kCoarseErf[1]));
  p = _mm256_fmadd_ps(p, az, _mm256_set1_ps(kCoarseErf[0]));
  p = _mm256_fmadd_ps(p, az, _mm256_set1_ps(1.0f));
  const __m256 p2 = _mm256_mul_ps(p, p);
  const __m256 erf_abs =
      _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_mul_ps(p2, p2)));
  const __m256 erf = _mm256_or_ps(erf_abs, sign);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), erf));
}
#endif

inline void gelu_inplace(float* x, int n) {
  int i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, gelu16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, gelu16(_mm512_maskz_loadu_ps(m, x + i)));
    return;
  }
#elif defined(__AVX2__)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu8(_mm256_loadu_ps(x + i)));
#endif
  for (; i < n; ++i) x[i] = gelu(x[i]);
}

inline void gelu_coarse_inplace(float* x, int n) {
  int i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, gelu_coarse16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, gelu_coarse16(_mm512_maskz_loadu_ps(m, x + i)));
    return;
  }
#elif defined(__AVX2__)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu_coarse8(_mm256_loadu_ps(x + i)));
#endif
  for (; i < n; ++i) x[i] = gelu_coarse(x[i]);
}

// exp(x[i] - shift) in place; returns the sum (softmax's denominator).
inline float exp_shifted_sum(float* x, int n, float shift) {
  int i = 0;
  float total = 0;
#if defined(__AVX512F__)
  __m512 acc = _mm512_setzero_ps();
  const __m512 s = _mm512_set1_ps(shift);
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), s));
    _mm512_storeu_ps(x + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  total = _mm512_reduce_add_ps(acc);
#endif
  for (; i < n; ++i) {
    x[i] = fast_exp(x[i] - shift);
    total += x[i];
  }
  return total;
}

// Sum with 16 independent partial sums: vectorizes without -ffast-math.
inline float sum(const float* x, int n) {
  float acc[16] = {0};
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += x[i + j];
  float s = 0;
  for (; i < n; ++i) s += x[i];
  for (int j = 0; j < 16; ++j) s += acc[j];
  return s;
}

inline float dot(const float* a, const float* b, int n) {
  float acc[16] = {0};
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int j = 0; j < 16; ++j) s += acc[j];
  return s;
}

}  // namespace
}  // namespace vec
}  // namespace svc
