// The row kernels of the LoRA path (lora_kernels.h), templated on the scalar: the fp32 ones are
// compiled once per ISA through vector_ops_impl.h (a VectorOps entry each), the double ones
// serve the gradient checks. In an unnamed namespace, so every translation unit, built with its
// own ISA flags, keeps its own copy (one shared inline copy would be whichever the linker kept).
//
// Rows come in blocks of kLoraBlock: A, B and the gradient accumulators (r x in, r x out, up to
// 48 KB at rank 8) are read and written once per block instead of once per row. The rank is a
// compile-time constant for 8 and 16 (the sums stay in registers), a run-time one otherwise.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace svc::train::detail {
namespace {

constexpr int kLoraBlock = 4;

// acc[k] = Σ_p v[p]·m[p·r + k], k < r: four running sums per k over p mod 4, combined in a
// fixed tree, so the r-wide updates vectorize and do not wait on one another. m is [n x r],
// r contiguous.
template <typename T, int R>
void lora_row_times(int n, int r, const T* v, const T* m, T* acc) {
  if constexpr (R > 0) r = R;
  std::vector<T> heap;
  T fixed[4 * (R > 0 ? R : 1)] = {};
  T* part = fixed;
  if constexpr (R == 0) {
    heap.assign(4 * static_cast<size_t>(r), T(0));
    part = heap.data();
  }
  T* s0 = part;
  T* s1 = part + r;
  T* s2 = part + 2 * r;
  T* s3 = part + 3 * r;
  int p = 0;
  for (; p + 4 <= n; p += 4) {
    const T* m0 = m + static_cast<int64_t>(p) * r;
    for (int k = 0; k < r; ++k) {
      s0[k] += v[p] * m0[k];
      s1[k] += v[p + 1] * m0[r + k];
      s2[k] += v[p + 2] * m0[2 * r + k];
      s3[k] += v[p + 3] * m0[3 * r + k];
    }
  }
  for (; p < n; ++p)
    for (int k = 0; k < r; ++k) s0[k] += v[p] * m[static_cast<int64_t>(p) * r + k];
  for (int k = 0; k < r; ++k) acc[k] = (s0[k] + s1[k]) + (s2[k] + s3[k]);
}

// out_b[j] += Σ_k c[b·r + k]·m[k·n + j] for the block's rows b < nb (row b at out + b·ldo):
// each column of m read once for the block.
template <typename T, int R>
void lora_combine(int nb, int n, int r, const T* c, const T* m, T* out, int64_t ldo) {
  if constexpr (R > 0) r = R;
  if (nb == kLoraBlock) {
    // kLane columns at a time, each row's sum split over even and odd k: 8 running sums of
    // kLane columns, independent of one another, where one sum per row would wait on each step.
    constexpr int kLane = 16;
    int j = 0;
    for (; j + kLane <= n; j += kLane) {
      T s[kLoraBlock][2][kLane] = {};
      for (int k = 0; k < r; ++k) {
        const T* mk = m + static_cast<int64_t>(k) * n + j;
        for (int b = 0; b < kLoraBlock; ++b) {
          const T cb = c[b * r + k];
          for (int l = 0; l < kLane; ++l) s[b][k & 1][l] += cb * mk[l];
        }
      }
      for (int b = 0; b < kLoraBlock; ++b)
        for (int l = 0; l < kLane; ++l) out[b * ldo + j + l] += s[b][0][l] + s[b][1][l];
    }
    for (; j < n; ++j)
      for (int b = 0; b < kLoraBlock; ++b) {
        T s0 = 0, s1 = 0;
        for (int k = 0; k < r; ++k) (k & 1 ? s1 : s0) += c[b * r + k] * m[static_cast<int64_t>(k) * n + j];
        out[b * ldo + j] += s0 + s1;
      }
    return;
  }
  for (int b = 0; b < nb; ++b) {
    const T* cb = c + static_cast<int64_t>(b) * r;
    T* ob = out + b * ldo;
    for (int j = 0; j < n; ++j) {
      T s0 = 0, s1 = 0;
      for (int k = 0; k < r; ++k) (k & 1 ? s1 : s0) += cb[k] * m[static_cast<int64_t>(k) * n + j];
      ob[j] += s0 + s1;
    }
  }
}

// acc[k·n + j] += Σ_b c[b·r + k]·v_b[j] over the block's rows b < nb (row b at v + b·ldv), summed
// in row order into one running value per element.
template <typename T, int R>
void lora_accumulate(int nb, int n, int r, const T* c, const T* v, int64_t ldv, T* acc) {
  if constexpr (R > 0) r = R;
  for (int k = 0; k < r; ++k) {
    T* row = acc + static_cast<int64_t>(k) * n;
    if (nb == kLoraBlock) {
      const T c0 = c[k], c1 = c[r + k], c2 = c[2 * r + k], c3 = c[3 * r + k];
      const T* v0 = v;
      const T* v1 = v + ldv;
      const T* v2 = v + 2 * ldv;
      const T* v3 = v + 3 * ldv;
      for (int j = 0; j < n; ++j) row[j] += ((c0 * v0[j] + c1 * v1[j]) + (c2 * v2[j] + c3 * v3[j]));
    } else {
      for (int b = 0; b < nb; ++b) {
        const T cb = c[static_cast<int64_t>(b) * r + k];
        const T* vb = v + b * ldv;
        for (int j = 0; j < n; ++j) row[j] += cb * vb[j];
      }
    }
  }
}

// u = scale·x·Aᵀ (rows x r, kept for backward), y += u·Bᵀ (row stride ldy). at is Aᵀ [in x r],
// bt is Bᵀ [r x out].
template <typename T, int R>
void lora_forward_rows_r(int rows, int in, int out, int r, T scale, const T* x, const T* at, const T* bt, T* u, T* y,
                         int64_t ldy) {
  for (int i0 = 0; i0 < rows; i0 += kLoraBlock) {
    const int nb = std::min(kLoraBlock, rows - i0);
    for (int b = 0; b < nb; ++b) {
      T* ui = u + static_cast<int64_t>(i0 + b) * r;
      lora_row_times<T, R>(in, r, x + static_cast<int64_t>(i0 + b) * in, at, ui);
      for (int k = 0; k < r; ++k) ui[k] *= scale;
    }
    lora_combine<T, R>(nb, out, r, u + static_cast<int64_t>(i0) * r, bt, y + i0 * ldy, ldy);
  }
}

// g = scale·dy·B (rows x r, scratch), dx += g·A (dx may be null), da += gᵀ·x [r x in],
// dbt += uᵀ·dy [r x out] (dB transposed). a is A [r x in], b is B [out x r].
template <typename T, int R>
void lora_backward_rows_r(int rows, int in, int out, int r, T scale, const T* x, const T* a, const T* b, const T* u,
                          const T* dy, int64_t ldy, T* dx, T* g, T* da, T* dbt) {
  for (int i0 = 0; i0 < rows; i0 += kLoraBlock) {
    const int nb = std::min(kLoraBlock, rows - i0);
    T* gb = g + static_cast<int64_t>(i0) * r;
    for (int i = 0; i < nb; ++i) {
      T* gi = gb + static_cast<int64_t>(i) * r;
      lora_row_times<T, R>(out, r, dy + (i0 + i) * ldy, b, gi);
      for (int k = 0; k < r; ++k) gi[k] *= scale;
    }
    if (dx) lora_combine<T, R>(nb, in, r, gb, a, dx + static_cast<int64_t>(i0) * in, in);
    lora_accumulate<T, R>(nb, out, r, u + static_cast<int64_t>(i0) * r, dy + i0 * ldy, ldy, dbt);
    lora_accumulate<T, R>(nb, in, r, gb, x + static_cast<int64_t>(i0) * in, in, da);
  }
}

template <typename T>
void lora_forward_rows(int rows, int in, int out, int r, T scale, const T* x, const T* at, const T* bt, T* u, T* y,
                       int64_t ldy) {
  if (r == 8) return lora_forward_rows_r<T, 8>(rows, in, out, r, scale, x, at, bt, u, y, ldy);
  if (r == 16) return lora_forward_rows_r<T, 16>(rows, in, out, r, scale, x, at, bt, u, y, ldy);
  lora_forward_rows_r<T, 0>(rows, in, out, r, scale, x, at, bt, u, y, ldy);
}

template <typename T>
void lora_backward_rows(int rows, int in, int out, int r, T scale, const T* x, const T* a, const T* b, const T* u,
                        const T* dy, int64_t ldy, T* dx, T* g, T* da, T* dbt) {
  if (r == 8) return lora_backward_rows_r<T, 8>(rows, in, out, r, scale, x, a, b, u, dy, ldy, dx, g, da, dbt);
  if (r == 16) return lora_backward_rows_r<T, 16>(rows, in, out, r, scale, x, a, b, u, dy, ldy, dx, g, da, dbt);
  lora_backward_rows_r<T, 0>(rows, in, out, r, scale, x, a, b, u, dy, ldy, dx, g, da, dbt);
}

}  // namespace
}  // namespace svc::train::detail
