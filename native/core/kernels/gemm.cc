#include "kernels/gemm.h"

#include <algorithm>

#include "cpu_features.h"
#include "kernels/gemm_tile.h"
#include "thread_pool.h"

namespace svc {

namespace detail {
namespace {
// Portable tile: 4 x 16, plain loops (the compiler may use SSE).
void tile_scalar(const float* a, int rows, const float* panel, const float* bias, int k, float* c,
                 int64_t ldc, int cols, const float* residual, Epilogue epilogue) {
  constexpr int kNr = 16;
  float acc[4][kNr];
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < kNr; ++j) acc[r][j] = bias[j];
  for (int kk = 0; kk < k; ++kk) {
    const float* b = panel + static_cast<int64_t>(kk) * kNr;
    for (int r = 0; r < rows; ++r) {
      const float av = a[kk * 4 + r];
      for (int j = 0; j < kNr; ++j) acc[r][j] += av * b[j];
    }
  }
  for (int r = 0; r < rows; ++r) {
    float* out = c + r * ldc;
    for (int j = 0; j < cols; ++j) out[j] = acc[r][j];
  }
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}
}  // namespace

GemmKernel gemm_kernel_scalar() { return {4, 16, tile_scalar}; }
}  // namespace detail

namespace {
const detail::GemmKernel& kernel() {
  static const detail::GemmKernel k = [] {
    const CpuFeatures& f = cpu_features();
    if (f.avx512) return detail::gemm_kernel_avx512();
    if (f.avx2) return detail::gemm_kernel_avx2();
    return detail::gemm_kernel_scalar();
  }();
  return k;
}
}  // namespace

int gemm_f32_panel_width() { return kernel().nr; }

PackedF32 pack_f32(const float* w, const float* bias, int n, int k) {
  PackedF32 p;
  p.n = n;
  p.k = k;
  p.nr = gemm_f32_panel_width();
  const int panels = (n + p.nr - 1) / p.nr;
  p.data.resize(static_cast<std::size_t>(panels) * k * p.nr);
  p.data.zero();
  p.bias.resize(static_cast<std::size_t>(panels) * p.nr);
  p.bias.zero();
  for (int col = 0; col < n; ++col) {
    const int panel = col / p.nr, j = col % p.nr;
    float* dst = p.data.data() + static_cast<int64_t>(panel) * k * p.nr + j;
    const float* src = w + static_cast<int64_t>(col) * k;
    for (int kk = 0; kk < k; ++kk) dst[static_cast<int64_t>(kk) * p.nr] = src[kk];
    if (bias) p.bias[col] = bias[col];
  }
  return p;
}

void gemm_f32(const GemmArgs& args, const PackedF32& w, AlignedBuffer<float>& scratch, ThreadPool* pool) {
  if (!worth_parallel(args.m, w.n, w.k)) pool = nullptr;
  const detail::GemmKernel& kern = kernel();
  const int mr = kern.mr;
  const int64_t tiles = (args.m + mr - 1) / mr;
  scratch.resize(static_cast<std::size_t>(tiles) * mr * w.k);
  const int k = w.k;
  auto pack = [&](int64_t t, int) {
    float* dst = scratch.data() + t * mr * k;
    const int64_t r0 = t * mr;
    const int rows = static_cast<int>(std::min<int64_t>(mr, args.m - r0));
    for (int r = 0; r < mr; ++r) {
      if (r >= rows) {
        for (int kk = 0; kk < k; ++kk) dst[kk * mr + r] = 0;
        continue;
      }
      const float* src = args.a + (r0 + r) * args.lda;
      for (int kk = 0; kk < k; ++kk) dst[kk * mr + r] = src[kk];
    }
  };
  if (pool) pool->run(tiles, pack);
  else for (int64_t t = 0; t < tiles; ++t) pack(t, 0);

  const int panels = (w.n + w.nr - 1) / w.nr;
  // Tasks are (row block, panel group): big enough to amortize, many enough to balance.
  const int64_t row_block = static_cast<int64_t>(kern.mr) * 4;
  const int64_t row_blocks = (args.m + row_block - 1) / row_block;
  const int threads = pool ? pool->size() : 1;
  const int panels_per_task = row_blocks * panels >= 16LL * threads ? 2 : 1;
  const int64_t panel_groups = (panels + panels_per_task - 1) / panels_per_task;
  auto task = [&](int64_t t, int) {
    const int64_t rb = t / panel_groups, pg = t % panel_groups;
    const int64_t row0 = rb * row_block, row1 = std::min(args.m, row0 + row_block);
    const int p0 = static_cast<int>(pg * panels_per_task), p1 = std::min(panels, p0 + panels_per_task);
    for (int p = p0; p < p1; ++p) {
      const float* panel = w.data.data() + static_cast<int64_t>(p) * w.k * w.nr;
      const float* bias = w.bias.data() + static_cast<int64_t>(p) * w.nr;
      const int col0 = p * w.nr;
      const int cols = std::min(w.nr, w.n - col0);
      for (int64_t r = row0; r < row1; r += kern.mr) {
        const int rows = static_cast<int>(std::min<int64_t>(kern.mr, row1 - r));
        kern.tile(scratch.data() + r * k, rows, panel, bias, w.k, args.c + r * args.ldc + col0, args.ldc, cols,
                  args.residual ? args.residual + r * args.ldc + col0 : nullptr, args.epilogue);
      }
    }
  };
  const int64_t tasks = row_blocks * panel_groups;
  if (pool) pool->run(tasks, task);
  else for (int64_t t = 0; t < tasks; ++t) task(t, 0);
}

}  // namespace svc
