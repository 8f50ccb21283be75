// Standalone test of the int8 GEMM kernels, without Node:
//   cmake -S . -B build-native -DSVC_NATIVE_TESTS=ON && cmake --build build-native -j2 --target qgemm_test
//   build-native/qgemm_test
// Each vector level's int8 kernel (AVX2 without and with AVX-VNNI, AVX-512 without and with VNNI, AMX, as far as this
// CPU runs them) against the scalar kernel on the same float inputs. Quantizing is the same float steps and the
// products are summed in int32 without overflow or saturation, so the outputs must match bit for bit, whatever the tile
// shape, row count, column tail or depth. Then gemm_s8's fused finish (layer norm, quantized copy of C) against the
// separate steps, and the int8 encoder's coarse GELU against exact GELU.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu_features.h"
#include "test_check.h"
#include "kernels/ops.h"
#include "kernels/qgemm.h"
#include "thread_pool.h"

namespace {

using svc::test::failures;
int compared = 0;

struct Case {
  int m, n, k;
};

// Runs one kernel over A (m x k) and the packed W the way gemm_s8 does: quantize each block
// of mr rows with the kernel's own quantizer, then one tile per (block, panel).
std::vector<float> run(const svc::detail::QGemmKernel& kern, const std::vector<float>& a, const svc::PackedS8& w,
                       int m) {
  const int k = w.k, kp = w.kp, mr = kern.mr, nr = svc::PackedS8::kNr;
  const int panels = (w.n + nr - 1) / nr;
  std::vector<float> c(static_cast<std::size_t>(m) * w.n, -1.0f);
  svc::AlignedBuffer<uint8_t> block;
  block.resize(static_cast<std::size_t>(mr) * kp);
  std::vector<float> scale(mr);
  if (kern.begin) kern.begin();
  for (int r0 = 0; r0 < m; r0 += mr) {
    const int rows = m - r0 < mr ? m - r0 : mr;
    kern.quantize(a.data() + static_cast<std::size_t>(r0) * k, k, rows, k, kp, mr, block.data(), scale.data());
    for (int p = 0; p < panels; ++p) {
      const int col0 = p * nr, cols = w.n - col0 < nr ? w.n - col0 : nr;
      kern.tile(block.data(), scale.data(), rows, w.data.data() + static_cast<std::size_t>(p) * nr * kp,
                w.scale.data() + col0, w.offset.data() + col0, w.bias.data() + col0, kp,
                c.data() + static_cast<std::size_t>(r0) * w.n + col0, w.n, cols, nullptr, svc::Epilogue::kNone);
    }
  }
  if (kern.end) kern.end();
  return c;
}

void compare(const char* level, const svc::detail::QGemmKernel& kern) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Depths: multiples of 16 and 8 (vector quantizers), of 4 only, and ragged (padded k);
  // row counts that leave every partial block; column counts with a tail in each half-panel.
  const Case cases[] = {{1, 32, 384},   {3, 20, 16},    {5, 48, 12}, {7, 33, 40},     {13, 64, 7},  {14, 96, 384},
                        {15, 17, 1536}, {29, 384, 384}, {9, 8, 1},   {33, 1536, 384}, {20, 40, 100}};
  for (const Case& t : cases) {
    std::vector<float> a(static_cast<std::size_t>(t.m) * t.k), w(static_cast<std::size_t>(t.n) * t.k), bias(t.n);
    for (float& v : a) v = normal(rng);
    for (float& v : w) v = 0.05f * normal(rng);
    for (float& v : bias) v = normal(rng);
    // Outliers and exact ties: a row with one large value (as LayerNorm outputs have), a zero
    // row (scale 1), and values on the rounding midpoints of their row's scale.
    a[0] = 40.0f;
    if (t.m > 2)
      for (int kk = 0; kk < t.k; ++kk) a[static_cast<std::size_t>(t.k) + kk] = 0.0f;
    if (t.m > 3)
      for (int kk = 0; kk < t.k; ++kk)
        a[static_cast<std::size_t>(3) * t.k + kk] = (kk % 5 - 2) * 0.5f;  // 0.5 * 127 = 63.5
    // Weights at the extremes make |w| = w_max against u8 activations up to 255: the largest pair sum.
    for (int kk = 0; kk < t.k; kk += 2) w[kk] = -1.0f;
    // Row 1 all at its maximum (u8 255) against a column of -w_max and one of +w_max: every pair
    // at the limit of int16 in both signs (2 * 255 * 63 = 32130 on AVX2).
    if (t.m > 1)
      for (int kk = 0; kk < t.k; ++kk) a[static_cast<std::size_t>(t.k) + kk] = 3.0f;
    if (t.n > 2)
      for (int kk = 0; kk < t.k; ++kk) {
        w[static_cast<std::size_t>(t.k) + kk] = -1.0f;
        w[static_cast<std::size_t>(2) * t.k + kk] = 1.0f;
      }
    // Packed to the kernel's weight range (7 bits for AVX2), which the scalar kernel then runs too.
    const svc::PackedS8 packed = svc::pack_s8(w.data(), bias.data(), t.n, t.k, kern.w_max);
    const std::vector<float> want = run(svc::detail::qgemm_kernel_scalar(), a, packed, t.m);
    const std::vector<float> got = run(kern, a, packed, t.m);
    ++compared;
    if (std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) != 0) {
      std::size_t i = 0;
      while (std::memcmp(&want[i], &got[i], sizeof(float)) == 0) ++i;
      std::fprintf(stderr, "FAIL: %s m=%d n=%d k=%d: C[%zu][%zu] = %.9g, scalar %.9g\n", level, t.m, t.n, t.k, i / t.n,
                   i % t.n, got[i], want[i]);
      ++failures;
    }
  }
}

// gemm_s8 with its layer norm and the quantized copy of C fused in (each task finishing the
// rows it wrote) against the unfused steps: the GEMM, then layer_norm, then quantize_rows
// of C. Both row paths: tasks owning whole rows (many rows) and rows split by panel (few).
void check_fused(int m, int n, int k) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(static_cast<std::size_t>(m) * k), w(static_cast<std::size_t>(n) * k), bias(n), gamma(n), beta(n),
      residual(static_cast<std::size_t>(m) * n);
  for (auto* v : {&a, &bias, &gamma, &beta, &residual})
    for (float& x : *v) x = normal(rng);
  for (float& x : w) x = 0.05f * normal(rng);
  const svc::PackedS8 packed = svc::pack_s8(w.data(), bias.data(), n, k, svc::qgemm_weight_max());
  svc::ThreadPool pool(2);
  svc::QuantizedRows qa, fused_q, plain_q;
  svc::quantize_rows(a.data(), k, m, k, qa, &pool);
  std::vector<float> fused(residual.size()), plain(residual.size());
  svc::GemmArgs args;
  args.m = m;
  args.ldc = n;
  args.residual = residual.data();
  args.ln_gamma = gamma.data();
  args.ln_beta = beta.data();
  args.ln_eps = 1e-12f;
  args.c = fused.data();
  svc::gemm_s8(qa, args, packed, &pool, &fused_q);
  args.c = plain.data();
  args.ln_gamma = args.ln_beta = nullptr;
  svc::gemm_s8(qa, args, packed, &pool);
  svc::ops().layer_norm(plain.data(), n, m, n, gamma.data(), beta.data(), 1e-12f);
  svc::quantize_rows(plain.data(), n, m, n, plain_q, &pool);
  ++compared;
  const bool same = std::memcmp(fused.data(), plain.data(), plain.size() * sizeof(float)) == 0 &&
                    fused_q.data.size() == plain_q.data.size() &&
                    std::memcmp(fused_q.data.data(), plain_q.data.data(), plain_q.data.size()) == 0 &&
                    std::memcmp(fused_q.scale.data(), plain_q.scale.data(), m * sizeof(float)) == 0;
  if (!same) {
    std::fprintf(stderr, "FAIL: fused layer norm and quantized C differ from the separate steps, m=%d n=%d k=%d\n", m,
                 n, k);
    ++failures;
  }
}

// The int8 encoder's GELU epilogue (Epilogue::kGeluCoarse, vec::gelu_coarse) against exact GELU,
// in double, of the same GEMM's outputs without it: within 3e-4 |x| + 1e-6 (erf to 5e-4, plus
// the reciprocal's error where the level uses rcp14).
void check_coarse_gelu(int m, int n, int k) {
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(static_cast<std::size_t>(m) * k), w(static_cast<std::size_t>(n) * k), bias(n);
  for (auto* v : {&a, &bias})
    for (float& x : *v) x = normal(rng);
  for (float& x : w) x = 0.08f * normal(rng);
  const svc::PackedS8 packed = svc::pack_s8(w.data(), bias.data(), n, k, svc::qgemm_weight_max());
  svc::ThreadPool pool(2);
  svc::QuantizedRows qa;
  svc::quantize_rows(a.data(), k, m, k, qa, &pool);
  std::vector<float> plain(static_cast<std::size_t>(m) * n), coarse(plain.size());
  svc::GemmArgs args;
  args.m = m;
  args.ldc = n;
  args.c = plain.data();
  svc::gemm_s8(qa, args, packed, &pool);
  args.c = coarse.data();
  args.epilogue = svc::Epilogue::kGeluCoarse;
  svc::gemm_s8(qa, args, packed, &pool);
  ++compared;
  double worst = 0, widest = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const double x = plain[i], exact = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    worst = std::max(worst, std::fabs(coarse[i] - exact) / (3e-4 * std::fabs(x) + 1e-6));
    widest = std::max(widest, std::fabs(x));
  }
  std::printf("coarse GELU: largest error %.3f of its bound over outputs up to |x| = %.1f\n", worst, widest);
  if (!(worst <= 1.0) || widest < 4.0) {
    std::fprintf(stderr, "FAIL: coarse GELU error %.3f times its bound (outputs up to %.1f)\n", worst, widest);
    ++failures;
  }
}

}  // namespace

int main() {
  // cpu_features() honours SVC_ISA: a capped run tests only the levels below the cap.
  const svc::CpuFeatures& f = svc::cpu_features();
  std::vector<std::string> ran;
#if SVC_ARCH_X86
  if (f.avx2) {
    compare("avx2", svc::detail::qgemm_kernel_avx2(false));
    ran.push_back("avx2");
  }
  if (f.avx2 && f.avxvnni) {
    compare("avx2-vnni", svc::detail::qgemm_kernel_avx2(true));
    ran.push_back("avx2-vnni");
  }
  if (f.avx512) {
    compare("avx512", svc::detail::qgemm_kernel_avx512(false));
    ran.push_back("avx512");
  }
  if (f.avx512vnni) {
    compare("avx512-vnni", svc::detail::qgemm_kernel_avx512(true));
    ran.push_back("avx512-vnni");
  }
  if (f.amx) {
    compare("avx512-amx", svc::detail::qgemm_kernel_amx());
    ran.push_back("avx512-amx");
  }
#elif SVC_ARCH_ARM64
  if (f.neon) {
    compare("neon", svc::detail::qgemm_kernel_neon());
    ran.push_back("neon");
  }
  if (f.neon_dotprod) {
    compare("neon-dotprod", svc::detail::qgemm_kernel_neon_dotprod());
    ran.push_back("neon-dotprod");
  }
#endif
  // The dispatched kernel (the best level SVC_ISA allows).
  check_fused(581, 384, 1536);
  check_fused(37, 1536, 384);
  check_coarse_gelu(581, 1536, 384);
  std::string levels;
  for (const std::string& l : ran) levels += (levels.empty() ? "" : ", ") + l;
  std::printf("qgemm_test: %d comparisons (against scalar: %s; fused finish), %d failures\n", compared,
              levels.empty() ? "no vector level on this CPU" : levels.c_str(), failures);
  return failures == 0 ? 0 : 1;
}
