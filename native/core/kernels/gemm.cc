#include "kernels/gemm.h"

#include <algorithm>
#include <cstring>

#include "cpu_features.h"
#include "kernels/gemm_tile.h"
#include "kernels/ops.h"
#include "tensor/half.h"
#include "thread_pool.h"

namespace svc {

namespace detail {
namespace {
// Portable tile: 4 x 16, plain loops (the compiler may use SSE).
void tile_scalar(const float* a, int rows, const void* panel_bytes, const float* bias, int k, float* c, int64_t ldc,
                 int cols, const float* residual, Epilogue epilogue) {
  constexpr int kNr = 16;
  const float* panel = static_cast<const float*>(panel_bytes);
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

GemmKernel gemm_kernel_scalar() { return {4, 16, tile_scalar, nullptr}; }
}  // namespace detail

namespace {
const detail::GemmKernel& kernel() {
  static const detail::GemmKernel k = [] {
    [[maybe_unused]] const CpuLevel level = cpu_level();
#if SVC_ARCH_X86
    if (level >= CpuLevel::kAvx512) return detail::gemm_kernel_avx512();
    if (level >= CpuLevel::kAvx2) return detail::gemm_kernel_avx2();
#elif SVC_ARCH_ARM64
    if (level >= CpuLevel::kNeon) return detail::gemm_kernel_neon();
#endif
    return detail::gemm_kernel_scalar();
  }();
  return k;
}
}  // namespace

int gemm_f32_panel_width() { return kernel().nr; }

namespace {
// fp16 bits of f when f is exactly an fp16 value (normal, subnormal or zero); false otherwise.
bool exact_half(float f, uint16_t& out) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xFFu, mant = x & 0x7FFFFFu;
  uint32_t h;
  if (exp == 0 && mant == 0)
    h = sign;
  else if (exp >= 113 && exp <= 142)
    h = sign | (exp - 112) << 10 | mant >> 13;
  else if (exp >= 103 && exp < 113)
    h = sign | (mant | 0x800000u) >> (126 - exp);
  else
    return false;
  out = static_cast<uint16_t>(h);
  const float back = half_to_float(out);
  return std::memcmp(&back, &f, 4) == 0;
}
}  // namespace

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
  if (kernel().tile_half) {
    AlignedBuffer<uint16_t> half(p.data.size());
    bool exact = true;
    for (std::size_t i = 0; i < p.data.size() && exact; ++i) exact = exact_half(p.data[i], half[i]);
    if (exact) {
      p.half = std::move(half);
      p.data = AlignedBuffer<float>();
    }
  }
  return p;
}

namespace {
// Copies rows [r0, r0 + mr) of A (zeros past m) k-major into dst: dst[kk * mr + r].
void pack_tile(const GemmArgs& args, int mr, int k, int64_t r0, float* dst) {
  const int rows = static_cast<int>(std::min<int64_t>(mr, args.m - r0));
  for (int r = 0; r < mr; ++r) {
    if (r >= rows) {
      for (int kk = 0; kk < k; ++kk) dst[kk * mr + r] = 0;
      continue;
    }
    const float* src = args.a + (r0 + r) * args.lda;
    for (int kk = 0; kk < k; ++kk) dst[kk * mr + r] = src[kk];
  }
}
}  // namespace

void gemm_f32(const GemmArgs& args, const PackedF32& w, AlignedBuffer<float>& scratch, ThreadPool* pool) {
  if (!worth_parallel(args.m, w.n, w.k)) pool = nullptr;
  const detail::GemmKernel& kern = kernel();
  const detail::TileFn tile = w.is_half() ? kern.tile_half : kern.tile;
  const std::size_t elem = w.is_half() ? sizeof(uint16_t) : sizeof(float);
  const char* panels_base = static_cast<const char*>(w.panels());
  const int mr = kern.mr;
  const int k = w.k;
  const int panels = (w.n + w.nr - 1) / w.nr;
  const int threads = pool ? pool->size() : 1;
  const int64_t row_block = static_cast<int64_t>(mr) * 4;
  const int64_t row_blocks = (args.m + row_block - 1) / row_block;

  // With enough rows, a task owns whole rows: it packs its block of A once into its thread's
  // scratch, runs every panel, and layer-normalizes the finished rows. One pass, one barrier.
  if (row_blocks >= 4LL * threads) {
    scratch.resize(static_cast<std::size_t>(threads) * row_block * k);
    auto task = [&](int64_t rb, int thread) {
      float* packed = scratch.data() + static_cast<int64_t>(thread) * row_block * k;
      const int64_t row0 = rb * row_block, row1 = std::min(args.m, row0 + row_block);
      for (int64_t r = row0; r < row1; r += mr) pack_tile(args, mr, k, r, packed + (r - row0) * k);
      for (int p = 0; p < panels; ++p) {
        const void* panel = panels_base + static_cast<int64_t>(p) * k * w.nr * elem;
        const int col0 = p * w.nr;
        const int cols = std::min(w.nr, w.n - col0);
        for (int64_t r = row0; r < row1; r += mr) {
          const int rows = static_cast<int>(std::min<int64_t>(mr, row1 - r));
          tile(packed + (r - row0) * k, rows, panel, w.bias.data() + col0, k, args.c + r * args.ldc + col0, args.ldc,
               cols, args.residual ? args.residual + r * args.ldc + col0 : nullptr, args.epilogue);
        }
      }
      if (args.ln_gamma)
        ops().layer_norm(args.c + row0 * args.ldc, args.ldc, row1 - row0, w.n, args.ln_gamma, args.ln_beta,
                         args.ln_eps);
    };
    if (pool)
      pool->run(row_blocks, task);
    else
      for (int64_t rb = 0; rb < row_blocks; ++rb) task(rb, 0);
    return;
  }

  // Few rows: pack all of A first, then split the columns too, so both threads get work
  // (and layer-normalize once every column is done).
  const int64_t tiles = (args.m + mr - 1) / mr;
  scratch.resize(static_cast<std::size_t>(tiles) * mr * k);
  auto pack = [&](int64_t t, int) { pack_tile(args, mr, k, t * mr, scratch.data() + t * mr * k); };
  if (pool)
    pool->run(tiles, pack);
  else
    for (int64_t t = 0; t < tiles; ++t) pack(t, 0);

  // Tasks are (row block, panel group): big enough to amortize, many enough to balance.
  const int panels_per_task = row_blocks * panels >= 16LL * threads ? 2 : 1;
  const int64_t panel_groups = (panels + panels_per_task - 1) / panels_per_task;
  auto task = [&](int64_t t, int) {
    const int64_t rb = t / panel_groups, pg = t % panel_groups;
    const int64_t row0 = rb * row_block, row1 = std::min(args.m, row0 + row_block);
    const int p0 = static_cast<int>(pg * panels_per_task), p1 = std::min(panels, p0 + panels_per_task);
    for (int p = p0; p < p1; ++p) {
      const void* panel = panels_base + static_cast<int64_t>(p) * w.k * w.nr * elem;
      const float* bias = w.bias.data() + static_cast<int64_t>(p) * w.nr;
      const int col0 = p * w.nr;
      const int cols = std::min(w.nr, w.n - col0);
      for (int64_t r = row0; r < row1; r += kern.mr) {
        const int rows = static_cast<int>(std::min<int64_t>(kern.mr, row1 - r));
        tile(scratch.data() + r * k, rows, panel, bias, w.k, args.c + r * args.ldc + col0, args.ldc, cols,
             args.residual ? args.residual + r * args.ldc + col0 : nullptr, args.epilogue);
      }
    }
  };
  const int64_t tasks = row_blocks * panel_groups;
  if (pool)
    pool->run(tasks, task);
  else
    for (int64_t t = 0; t < tasks; ++t) task(t, 0);
  if (args.ln_gamma) {
    constexpr int64_t kRowsPerTask = 32;
    auto norm = [&](int64_t t, int) {
      const int64_t r0 = t * kRowsPerTask, rows = std::min(kRowsPerTask, args.m - r0);
      ops().layer_norm(args.c + r0 * args.ldc, args.ldc, rows, w.n, args.ln_gamma, args.ln_beta, args.ln_eps);
    };
    const int64_t chunks = (args.m + kRowsPerTask - 1) / kRowsPerTask;
    if (pool)
      pool->run(chunks, norm);
    else
      for (int64_t t = 0; t < chunks; ++t) norm(t, 0);
  }
}

}  // namespace svc
