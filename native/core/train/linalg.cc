#include "train/linalg.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu_features.h"
#include "train/workers.h"

namespace svc::train {
namespace {

constexpr int kMR = kGemmMR;
constexpr int kNR = kGemmNR;
constexpr int kKC = 256;
constexpr int kMC = 96;
constexpr int kNC = 512;

template <typename T>
inline T at(const T* x, int ld, bool trans, int row, int col) {
  return trans ? x[static_cast<int64_t>(col) * ld + row] : x[static_cast<int64_t>(row) * ld + col];
}

// Straight loops for the double-precision reference path and for the tiny
// per-head attention products, with the loop order that keeps the inner loop
// contiguous for each transpose case.
template <typename T>
void gemm_direct(bool ta, bool tb, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c, int ldc) {
  if (!tb) {
    // C row i += Σ_p A(i,p) · B row p: the inner loop runs along a row of B and C.
    for (int i = 0; i < m; ++i) {
      T* __restrict ci = c + static_cast<int64_t>(i) * ldc;
      for (int p = 0; p < k; ++p) {
        const T av = at(a, lda, ta, i, p);
        const T* __restrict bp = b + static_cast<int64_t>(p) * ldb;
        for (int j = 0; j < n; ++j) ci[j] += av * bp[j];
      }
    }
    return;
  }
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const T* bj = b + static_cast<int64_t>(j) * ldb;  // B(p, j) = b[j*ldb + p]
      T sum = 0;
      if (!ta) {
        const T* ai = a + static_cast<int64_t>(i) * lda;
        for (int p = 0; p < k; ++p) sum += ai[p] * bj[p];
      } else {
        for (int p = 0; p < k; ++p) sum += a[static_cast<int64_t>(p) * lda + i] * bj[p];
      }
      c[static_cast<int64_t>(i) * ldc + j] += sum;
    }
  }
}

void kernel_generic(int kc, const float* a, const float* b, float* c, int ldc) {
  float acc[kMR][kNR] = {};
  for (int p = 0; p < kc; ++p) {
    for (int r = 0; r < kMR; ++r) {
      const float av = a[r];
      for (int q = 0; q < kNR; ++q) acc[r][q] += av * b[q];
    }
    a += kMR;
    b += kNR;
  }
  for (int r = 0; r < kMR; ++r)
    for (int q = 0; q < kNR; ++q) c[r * ldc + q] += acc[r][q];
}

using Kernel = void (*)(int, const float*, const float*, float*, int);

Kernel pick_kernel() {
  return cpu_features().avx512 ? gemm_kernel_8x32_avx512 : kernel_generic;
}

// Goto-style blocked product on the block C[i0:i1, j0:j1] (accumulating).
void gemm_packed(bool ta, bool tb, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc,
                 int i0, int i1, int j0, int j1) {
  static const Kernel kernel = pick_kernel();
  thread_local std::vector<float> a_pack, b_pack;
  float tile[kMR * kNR];
  for (int jc = j0; jc < j1; jc += kNC) {
    const int nc = std::min(kNC, j1 - jc);
    const int n_strips = (nc + kNR - 1) / kNR;
    for (int pc = 0; pc < k; pc += kKC) {
      const int kc = std::min(kKC, k - pc);
      b_pack.resize(static_cast<size_t>(n_strips) * kc * kNR);
      for (int s = 0; s < n_strips; ++s) {
        float* out = b_pack.data() + static_cast<size_t>(s) * kc * kNR;
        const int cols = std::min(kNR, nc - s * kNR);
        if (tb) {  // B(p, j) runs along p in memory: copy column by column
          for (int q = 0; q < kNR; ++q) {
            if (q >= cols) {
              for (int p = 0; p < kc; ++p) out[p * kNR + q] = 0.f;
              continue;
            }
            const float* src = b + static_cast<int64_t>(jc + s * kNR + q) * ldb + pc;
            for (int p = 0; p < kc; ++p) out[p * kNR + q] = src[p];
          }
        } else {
          for (int p = 0; p < kc; ++p) {
            const float* src = b + static_cast<int64_t>(pc + p) * ldb + jc + s * kNR;
            if (cols == kNR) {
              std::memcpy(out + p * kNR, src, sizeof(float) * kNR);
            } else {
              for (int q = 0; q < kNR; ++q) out[p * kNR + q] = q < cols ? src[q] : 0.f;
            }
          }
        }
      }
      for (int ic = i0; ic < i1; ic += kMC) {
        const int mc = std::min(kMC, i1 - ic);
        const int m_strips = (mc + kMR - 1) / kMR;
        a_pack.resize(static_cast<size_t>(m_strips) * kc * kMR);
        for (int s = 0; s < m_strips; ++s) {
          float* out = a_pack.data() + static_cast<size_t>(s) * kc * kMR;
          const int rows = std::min(kMR, mc - s * kMR);
          if (!ta) {  // A(i, p) runs along p in memory: copy row by row
            for (int r = 0; r < kMR; ++r) {
              if (r >= rows) {
                for (int p = 0; p < kc; ++p) out[p * kMR + r] = 0.f;
                continue;
              }
              const float* src = a + static_cast<int64_t>(ic + s * kMR + r) * lda + pc;
              for (int p = 0; p < kc; ++p) out[p * kMR + r] = src[p];
            }
          } else {
            for (int p = 0; p < kc; ++p) {
              const float* src = a + static_cast<int64_t>(pc + p) * lda + ic + s * kMR;
              if (rows == kMR) {
                std::memcpy(out + p * kMR, src, sizeof(float) * kMR);
              } else {
                for (int r = 0; r < kMR; ++r) out[p * kMR + r] = r < rows ? src[r] : 0.f;
              }
            }
          }
        }
        for (int sn = 0; sn < n_strips; ++sn) {
          const int cols = std::min(kNR, nc - sn * kNR);
          const float* bp = b_pack.data() + static_cast<size_t>(sn) * kc * kNR;
          for (int sm = 0; sm < m_strips; ++sm) {
            const int rows = std::min(kMR, mc - sm * kMR);
            const float* ap = a_pack.data() + static_cast<size_t>(sm) * kc * kMR;
            float* cp = c + static_cast<int64_t>(ic + sm * kMR) * ldc + jc + sn * kNR;
            if (rows == kMR && cols == kNR) {
              kernel(kc, ap, bp, cp, ldc);
            } else {
              std::fill(tile, tile + kMR * kNR, 0.f);
              kernel(kc, ap, bp, tile, kNR);
              for (int r = 0; r < rows; ++r)
                for (int q = 0; q < cols; ++q) cp[static_cast<int64_t>(r) * ldc + q] += tile[r * kNR + q];
            }
          }
        }
      }
    }
  }
}

template <typename T>
void scale_c(int m, int n, T beta, T* c, int ldc) {
  if (beta == T(1)) return;
  for (int i = 0; i < m; ++i) {
    T* row = c + static_cast<int64_t>(i) * ldc;
    if (beta == T(0)) std::fill(row, row + n, T(0));
    else for (int j = 0; j < n; ++j) row[j] *= beta;
  }
}

}  // namespace

template <>
void gemm<double>(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb,
                  double beta, double* c, int ldc, Workers*) {
  scale_c(m, n, beta, c, ldc);
  gemm_direct(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

template <>
void gemm<float>(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                 float beta, float* c, int ldc, Workers* workers) {
  if (m <= 0 || n <= 0) return;
  scale_c(m, n, beta, c, ldc);
  if (k <= 0) return;
  const int64_t work = static_cast<int64_t>(m) * n * k;
  if (work < 64 * 64 * 64) {
    gemm_direct(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  // Split the larger output side into NR/MR-aligned slabs, one per thread; every
  // element keeps the same k order, so the thread count never changes a bit.
  const bool split_cols = n >= m;
  const int align = split_cols ? kNR : kMR;
  const int extent = split_cols ? n : m;
  const int64_t units = (extent + align - 1) / align;
  parallel_for(work < 2'000'000 ? nullptr : workers, units, [&](int64_t u0, int64_t u1) {
    const int lo = static_cast<int>(u0) * align;
    const int hi = std::min(extent, static_cast<int>(u1) * align);
    if (split_cols) gemm_packed(ta, tb, k, a, lda, b, ldb, c, ldc, 0, m, lo, hi);
    else gemm_packed(ta, tb, k, a, lda, b, ldb, c, ldc, lo, hi, 0, n);
  });
}

}  // namespace svc::train
