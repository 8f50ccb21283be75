#include "train/linalg.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tensor/aligned_buffer.h"
#include "tensor/half.h"
#include "train/vector_ops.h"

namespace svc::train {
namespace {

template <typename T>
inline T at(const T* x, int ld, bool trans, int row, int col) {
  return trans ? x[static_cast<int64_t>(col) * ld + row] : x[static_cast<int64_t>(row) * ld + col];
}

// Straight loops for the double-precision reference path and for the tiny
// per-head attention products, with the loop order that keeps the inner loop
// contiguous for each transpose case. Accumulates into C.
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

template <typename T>
void scale_c(int m, int n, T beta, T* c, int ldc) {
  if (beta == T(1)) return;
  for (int i = 0; i < m; ++i) {
    T* row = c + static_cast<int64_t>(i) * ldc;
    if (beta == T(0))
      std::fill(row, row + n, T(0));
    else
      for (int j = 0; j < n; ++j) row[j] *= beta;
  }
}

}  // namespace

// Fills the engine's weight panels with W' = op(B)ᵀ (n x k): panel p holds
// data[(p*k + kk)*nr + j] = op(B)(kk, p*nr + j), zero past column n.
void pack_b(bool tb, const float* b, int ldb, int k, int n, PackedF32& out, Workers* workers) {
  const int nr = gemm_f32_panel_width();
  const int panels = (n + nr - 1) / nr;
  out.n = n;
  out.k = k;
  out.nr = nr;
  out.data.resize(static_cast<size_t>(panels) * k * nr);
  if (out.bias.size() < static_cast<size_t>(panels) * nr) {
    out.bias.resize(static_cast<size_t>(panels) * nr);
    out.bias.zero();
  }
  float* data = out.data.data();
  parallel_for(workers, panels, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* dst = data + p * k * nr;
      const int col0 = static_cast<int>(p) * nr, cols = std::min(nr, n - col0);
      if (!tb) {  // op(B) row kk is contiguous: copy nr floats per kk
        for (int kk = 0; kk < k; ++kk) {
          const float* src = b + static_cast<int64_t>(kk) * ldb + col0;
          float* row = dst + static_cast<int64_t>(kk) * nr;
          std::memcpy(row, src, sizeof(float) * cols);
          std::fill(row + cols, row + nr, 0.f);
        }
      } else {  // column col of op(B) is row col of B
        for (int j = 0; j < nr; ++j) {
          if (j >= cols) {
            for (int kk = 0; kk < k; ++kk) dst[static_cast<int64_t>(kk) * nr + j] = 0.f;
            continue;
          }
          const float* src = b + static_cast<int64_t>(col0 + j) * ldb;
          for (int kk = 0; kk < k; ++kk) dst[static_cast<int64_t>(kk) * nr + j] = src[kk];
        }
      }
    }
  });
}

template <>
void gemm<double>(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb,
                  double beta, double* c, int ldc, Workers*) {
  scale_c(m, n, beta, c, ldc);
  gemm_direct(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

template <>
void gemm<float>(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta,
                 float* c, int ldc, Workers* workers) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  if (static_cast<int64_t>(m) * n * k < 64 * 64 * 64) {
    // Small products (attention per head): rows of C accumulate rows of B, a
    // loop each ISA's build vectorizes; a transposed B is laid out as rows first.
    scale_c(m, n, beta, c, ldc);
    thread_local std::vector<float> b_rows;
    const float* rows = b;
    int64_t ld_rows = ldb;
    if (tb) {
      b_rows.resize(static_cast<size_t>(k) * n);
      for (int j = 0; j < n; ++j)
        for (int p = 0; p < k; ++p) b_rows[static_cast<size_t>(p) * n + j] = b[static_cast<int64_t>(j) * ldb + p];
      rows = b_rows.data();
      ld_rows = n;
    }
    vector_ops().small_gemm(m, n, k, a, lda, ta, rows, ld_rows, c, ldc);
    return;
  }
  // Packed B per calling thread: the attention of long texts calls in from pool tasks.
  thread_local PackedF32 panels;
  pack_b(tb, b, ldb, k, n, panels, workers);
  gemm_prepacked(ta, m, a, lda, panels, beta, c, ldc, workers);
}

namespace {
// Whether the dispatched kernel reads fp16 panels itself: pack_f32 stores them only then.
bool kernel_reads_half() {
  static const bool reads = [] {
    const float one = 1.f;
    return pack_f32(&one, nullptr, 1, 1).is_half();
  }();
  return reads;
}
}  // namespace

PackedF32 pack_frozen_f32(const float* w, int n, int k) {
  PackedF32 p = pack_f32(w, nullptr, n, k);
  if (p.is_half()) return p;
  AlignedBuffer<uint16_t> half(p.data.size());
  for (std::size_t i = 0; i < p.data.size(); ++i) {
    half[i] = float_to_half(p.data[i]);
    if (half_to_float(half[i]) != p.data[i]) return p;  // not an fp16 checkpoint: fp32 panels
  }
  p.half = std::move(half);
  p.data = AlignedBuffer<float>();
  return p;
}

void gemm_prepacked(bool ta, int m, const float* a, int lda, const PackedF32& packed, float beta, float* c, int ldc,
                    Workers* workers) {
  if (m <= 0) return;
  const PackedF32* panels = &packed;
  if (packed.is_half() && !kernel_reads_half()) {
    thread_local PackedF32 wide;
    wide.n = packed.n;
    wide.k = packed.k;
    wide.nr = packed.nr;
    wide.data.resize(packed.half.size());
    if (wide.bias.size() < packed.bias.size()) {
      wide.bias.resize(packed.bias.size());
      wide.bias.zero();
    }
    const int64_t n = static_cast<int64_t>(packed.half.size());
    const uint16_t* src = packed.half.data();
    float* dst = wide.data.data();
    parallel_for_grain(workers, n, 1 << 16,
                       [=](int64_t i0, int64_t i1) { vector_ops().widen_f16(i1 - i0, src + i0, dst + i0); });
    panels = &wide;
  }
  const PackedF32& b = *panels;
  const int k = b.k, n = b.n;
  thread_local AlignedBuffer<float> a_rows, residual, scratch;
  GemmArgs args;
  args.a = a;
  args.lda = lda;
  if (ta) {  // the engine reads A by rows: transpose the stored [k x m] once
    a_rows.resize(static_cast<size_t>(m) * k);
    float* dst = a_rows.data();
    // In 16 x 16 blocks: a row at a time read A down a column, a cache line per element, and
    // with k in the thousands (dW = dYᵀ·X over a step's tokens) nothing stayed cached between rows.
    constexpr int kBlock = 16;
    parallel_for(workers, (m + kBlock - 1) / kBlock, [&](int64_t b0, int64_t b1) {
      for (int64_t i0 = b0 * kBlock; i0 < std::min<int64_t>(m, b1 * kBlock); i0 += kBlock) {
        const int64_t i1 = std::min<int64_t>(m, i0 + kBlock);
        for (int p0 = 0; p0 < k; p0 += kBlock) {
          const int p1 = std::min(k, p0 + kBlock);
          for (int64_t i = i0; i < i1; ++i)
            for (int p = p0; p < p1; ++p) dst[i * k + p] = a[static_cast<int64_t>(p) * lda + i];
        }
      }
    });
    args.a = dst;
    args.lda = k;
  }
  args.m = m;
  args.c = c;
  args.ldc = ldc;
  if (beta != 0.f) {  // the engine adds a residual after the product; it must not alias C
    residual.resize(static_cast<size_t>(m) * ldc);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j)
        residual[static_cast<size_t>(i) * ldc + j] = beta * c[static_cast<int64_t>(i) * ldc + j];
    args.residual = residual.data();
  }
  gemm_f32(args, b, scratch, workers);
}

}  // namespace svc::train
