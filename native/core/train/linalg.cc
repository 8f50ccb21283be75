#include "train/linalg.h"

#include <algorithm>
#include <cstdint>
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

// Straight loops: the double-precision reference path and tiny products.
template <typename T>
void gemm_direct(bool ta, bool tb, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c, int ldc,
                 int i0, int i1, int j0, int j1) {
  for (int i = i0; i < i1; ++i) {
    for (int j = j0; j < j1; ++j) {
      T sum = 0;
      for (int p = 0; p < k; ++p) sum += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
      c[static_cast<int64_t>(i) * ldc + j] += sum;
    }
  }
  (void)m;
  (void)n;
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
        for (int p = 0; p < kc; ++p)
          for (int q = 0; q < kNR; ++q) *out++ = q < cols ? at(b, ldb, tb, pc + p, jc + s * kNR + q) : 0.f;
      }
      for (int ic = i0; ic < i1; ic += kMC) {
        const int mc = std::min(kMC, i1 - ic);
        const int m_strips = (mc + kMR - 1) / kMR;
        a_pack.resize(static_cast<size_t>(m_strips) * kc * kMR);
        for (int s = 0; s < m_strips; ++s) {
          float* out = a_pack.data() + static_cast<size_t>(s) * kc * kMR;
          const int rows = std::min(kMR, mc - s * kMR);
          for (int p = 0; p < kc; ++p)
            for (int r = 0; r < kMR; ++r) *out++ = r < rows ? at(a, lda, ta, ic + s * kMR + r, pc + p) : 0.f;
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
  gemm_direct(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, 0, m, 0, n);
}

template <>
void gemm<float>(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                 float beta, float* c, int ldc, Workers* workers) {
  if (m <= 0 || n <= 0) return;
  scale_c(m, n, beta, c, ldc);
  if (k <= 0) return;
  const int64_t work = static_cast<int64_t>(m) * n * k;
  if (work < 64 * 64 * 64) {
    gemm_direct(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, 0, m, 0, n);
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
