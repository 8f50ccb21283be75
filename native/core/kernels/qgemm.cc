#include "kernels/qgemm.h"

#include <algorithm>
#include <cmath>

#include "cpu_features.h"
#include "kernels/gemm_tile.h"
#include "kernels/ops.h"
#include "thread_pool.h"

namespace svc {

namespace detail {
namespace {
constexpr int kScalarMr = 4;
void qtile_scalar(const uint8_t* a, const float* a_scale, int rows, const int8_t* panel, const float* w_scale,
                  const int32_t* offset, const float* bias, int kp, float* c, int64_t ldc, int cols,
                  const float* residual, Epilogue epilogue) {
  constexpr int kNr = PackedS8::kNr;
  for (int r = 0; r < rows; ++r) {
    int32_t acc[kNr] = {0};
    for (int g = 0; g < kp / 4; ++g) {
      const uint8_t* ar = a + (g * kScalarMr + r) * 4;
      const int8_t* b = panel + static_cast<int64_t>(g) * kNr * 4;
      for (int j = 0; j < kNr; ++j)
        for (int t = 0; t < 4; ++t) acc[j] += static_cast<int32_t>(ar[t]) * b[j * 4 + t];
    }
    float* out = c + r * ldc;
    for (int j = 0; j < cols; ++j)
      out[j] = std::fma(static_cast<float>(acc[j] - offset[j]), a_scale[r] * w_scale[j], bias[j]);
  }
  finish_tile(c, ldc, rows, cols, residual, epilogue);
}
}  // namespace
QGemmKernel qgemm_kernel_scalar() { return {kScalarMr, 127, qtile_scalar, quantize_block_portable}; }

void quantize_block_portable(const float* a, int64_t lda, int rows, int k, int kp, int mr, uint8_t* block,
                             float* scale) {
  for (int r = 0; r < mr; ++r) {
    if (r >= rows) {
      for (int g = 0; g < kp / 4; ++g)
        for (int t = 0; t < 4; ++t) block[(g * mr + r) * 4 + t] = 128;
      continue;
    }
    const float* src = a + r * lda;
    float amax = 0;
    for (int kk = 0; kk < k; ++kk) amax = std::max(amax, std::fabs(src[kk]));
    const float s = amax > 0 ? amax / 127.0f : 1.0f;
    const float inv = 1.0f / s;
    for (int kk = 0; kk < kp; ++kk) {
      // Round half to even, as the vector paths' cvtps2dq does.
      const int q = kk < k ? static_cast<int>(std::nearbyint(src[kk] * inv)) : 0;
      block[((kk / 4) * mr + r) * 4 + kk % 4] = static_cast<uint8_t>(q + 128);
    }
    scale[r] = s;
  }
}
}  // namespace detail

namespace {
const detail::QGemmKernel& kernel() {
  static const detail::QGemmKernel k = [] {
    [[maybe_unused]] const CpuLevel level = cpu_level();
#if SVC_ARCH_X86
    if (level >= CpuLevel::kAvx512Amx) return detail::qgemm_kernel_amx();
    if (level >= CpuLevel::kAvx512) return detail::qgemm_kernel_avx512(level >= CpuLevel::kAvx512Vnni);
    if (level >= CpuLevel::kAvx2) return detail::qgemm_kernel_avx2(level == CpuLevel::kAvx2Vnni);
#elif SVC_ARCH_ARM64
    if (level >= CpuLevel::kNeonDotprod) return detail::qgemm_kernel_neon_dotprod();
    if (level >= CpuLevel::kNeon) return detail::qgemm_kernel_neon();
#endif
    return detail::qgemm_kernel_scalar();
  }();
  return k;
}
}  // namespace

int qgemm_weight_max() { return kernel().w_max; }

PackedS8 pack_s8(const float* w, const float* bias, int n, int k, int w_max) {
  constexpr int kNr = PackedS8::kNr;
  PackedS8 p;
  p.n = n;
  p.k = k;
  p.kp = (k + 3) / 4 * 4;
  const int panels = (n + kNr - 1) / kNr;
  p.data.resize(static_cast<std::size_t>(panels) * kNr * p.kp);
  p.data.zero();
  for (auto* buf : {&p.scale, &p.bias}) {
    buf->resize(static_cast<std::size_t>(panels) * kNr);
    buf->zero();
  }
  p.offset.resize(static_cast<std::size_t>(panels) * kNr);
  p.offset.zero();
  for (int col = 0; col < n; ++col) {
    const float* src = w + static_cast<int64_t>(col) * k;
    float amax = 0;
    for (int kk = 0; kk < k; ++kk) amax = std::max(amax, std::fabs(src[kk]));
    const float scale = amax > 0 ? amax / static_cast<float>(w_max) : 1.0f;
    const int panel = col / kNr, j = col % kNr;
    int8_t* dst = p.data.data() + static_cast<int64_t>(panel) * kNr * p.kp;
    int32_t colsum = 0;
    for (int kk = 0; kk < k; ++kk) {
      const int q = static_cast<int>(std::lrint(src[kk] / scale));
      const int8_t v = static_cast<int8_t>(std::clamp(q, -w_max, w_max));
      dst[(static_cast<int64_t>(kk / 4) * kNr + j) * 4 + kk % 4] = v;
      colsum += v;
    }
    p.scale[col] = scale;
    p.offset[col] = 128 * colsum;
    p.bias[col] = bias ? bias[col] : 0.0f;
  }
  return p;
}

namespace {
// Sizes q for m rows of depth k in the dispatched kernel's blocks.
void shape_rows(int64_t m, int k, QuantizedRows& q) {
  const detail::QGemmKernel& kern = kernel();
  q.m = m;
  q.kp = (k + 3) / 4 * 4;
  q.mr = kern.mr;
  const int64_t blocks = (m + kern.mr - 1) / kern.mr;
  q.data.resize(static_cast<std::size_t>(blocks) * kern.mr * q.kp);
  q.scale.resize(static_cast<std::size_t>(blocks) * kern.mr);
}

// Quantizes rows [r0, r1) of A, r0 a multiple of the block height, into their blocks of q.
void quantize_range(const float* a, int64_t lda, int64_t r0, int64_t r1, int k, QuantizedRows& q) {
  const detail::QGemmKernel& kern = kernel();
  for (int64_t r = r0; r < r1; r += kern.mr) {
    const int rows = static_cast<int>(std::min<int64_t>(kern.mr, r1 - r));
    kern.quantize(a + r * lda, lda, rows, k, q.kp, kern.mr, q.data.data() + r * q.kp, q.scale.data() + r);
  }
}
}  // namespace

void quantize_rows(const float* a, int64_t lda, int64_t m, int k, QuantizedRows& q, ThreadPool* pool) {
  if (m < 64) pool = nullptr;
  shape_rows(m, k, q);
  const int mr = kernel().mr;
  const int64_t blocks = (m + mr - 1) / mr;
  auto task = [&](int64_t b, int) { quantize_range(a, lda, b * mr, std::min(m, (b + 1) * mr), k, q); };
  if (pool)
    pool->run(blocks, task);
  else
    for (int64_t b = 0; b < blocks; ++b) task(b, 0);
}

void gemm_s8(const QuantizedRows& a, const GemmArgs& args, const PackedS8& w, ThreadPool* pool,
             QuantizedRows* c_quantized) {
  // int8 work is about 4x cheaper per multiply-add than fp32.
  if (!worth_parallel(a.m, w.n, w.k / 4)) pool = nullptr;
  constexpr int kNr = PackedS8::kNr;
  const detail::QGemmKernel& kern = kernel();
  const int panels = (w.n + kNr - 1) / kNr;
  const int threads = pool ? pool->size() : 1;
  const int64_t row_block = static_cast<int64_t>(kern.mr) * 4;
  const int64_t row_blocks = (a.m + row_block - 1) / row_block;
  if (c_quantized) shape_rows(a.m, w.n, *c_quantized);
  // Wraps a task's tiles in the kernel's per-thread set-up.
  struct TileScope {
    const detail::QGemmKernel& kern;
    explicit TileScope(const detail::QGemmKernel& k) : kern(k) {
      if (kern.begin) kern.begin();
    }
    ~TileScope() {
      if (kern.end) kern.end();
    }
  };
  auto run_panel = [&](int64_t row0, int64_t row1, int p) {
    const int col0 = p * kNr, cols = std::min(kNr, w.n - col0);
    const int8_t* panel = w.data.data() + static_cast<int64_t>(p) * kNr * w.kp;
    for (int64_t r = row0; r < row1; r += kern.mr) {
      const int rows = static_cast<int>(std::min<int64_t>(kern.mr, row1 - r));
      kern.tile(a.data.data() + r * a.kp, a.scale.data() + r, rows, panel, w.scale.data() + col0,
                w.offset.data() + col0, w.bias.data() + col0, w.kp, args.c + r * args.ldc + col0, args.ldc, cols,
                args.residual ? args.residual + r * args.ldc + col0 : nullptr, args.epilogue);
    }
  };
  // Rows of C once every column is done: layer norm, then the next GEMM's quantized copy.
  auto finish_rows = [&](int64_t row0, int64_t row1) {
    if (args.ln_gamma)
      ops().layer_norm(args.c + row0 * args.ldc, args.ldc, row1 - row0, w.n, args.ln_gamma, args.ln_beta, args.ln_eps);
    if (c_quantized) quantize_range(args.c, args.ldc, row0, row1, w.n, *c_quantized);
  };

  // With enough rows, a task owns whole rows (every panel) and finishes them while they are
  // still in cache: one pass over C, one barrier (as gemm_f32).
  if (row_blocks >= 4LL * threads) {
    auto task = [&](int64_t rb, int) {
      const int64_t row0 = rb * row_block, row1 = std::min(a.m, row0 + row_block);
      {
        const TileScope tiles(kern);
        for (int p = 0; p < panels; ++p) run_panel(row0, row1, p);
      }
      finish_rows(row0, row1);
    };
    if (pool)
      pool->run(row_blocks, task);
    else
      for (int64_t rb = 0; rb < row_blocks; ++rb) task(rb, 0);
    return;
  }
  // Few rows: split the columns too so every thread gets work, then finish the rows.
  auto task = [&](int64_t t, int) {
    const int64_t rb = t / panels, row0 = rb * row_block;
    const TileScope tiles(kern);
    run_panel(row0, std::min(a.m, row0 + row_block), static_cast<int>(t % panels));
  };
  const int64_t tasks = row_blocks * panels;
  if (pool)
    pool->run(tasks, task);
  else
    for (int64_t t = 0; t < tasks; ++t) task(t, 0);
  if (args.ln_gamma || c_quantized) {
    auto finish = [&](int64_t rb, int) { finish_rows(rb * row_block, std::min(a.m, (rb + 1) * row_block)); };
    if (pool)
      pool->run(row_blocks, finish);
    else
      for (int64_t rb = 0; rb < row_blocks; ++rb) finish(rb, 0);
  }
}

}  // namespace svc
