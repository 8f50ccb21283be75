// Element-wise math written as plain loops over float arrays so that each ISA's
// translation unit (compiled with its own -m flags) vectorizes them. exp and erf
// are polynomial approximations accurate to a few ulp / 1.5e-7 absolute, enough for
// fp32 parity with onnxruntime (1e-4 per embedding component).
#pragma once

#include <cstdint>
#include <cstring>

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

inline void gelu_inplace(float* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = gelu(x[i]);
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
