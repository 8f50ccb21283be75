// The kernel measurement (autotune.h): every candidate this CPU allows is timed and checked against fp32, and the
// bf16 kernel switch reaches gemm_bf16. SVC_ISA caps the candidates like every kernel: capped at avx512 or lower,
// fp32 is the only one. Emulated bf16 (SVC_KERNEL=bf16-emulated) runs on every CPU with bf16's rounding.
#include "kernels/autotune.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cpu_features.h"
#include "kernels/gemm_bf16.h"
#include "test_check.h"

int main() {
  const svc::CpuFeatures& f = svc::cpu_features();
  // A small shape keeps the sanitizer build quick; the rounds rule is the same.
  const std::vector<svc::KernelMeasurement> rows = svc::measure_linear_kernels(2, 5.0, {45, 131, 77});
  std::vector<std::string> expected{"fp32"};
  if (f.avx512bf16) expected.push_back("bf16-vector");
  if (f.amx) expected.push_back("bf16-amx");
  CHECK(rows.size() == expected.size(), "%zu candidates at %s, expected %zu", rows.size(), svc::cpu_level_name(),
        expected.size());
  for (std::size_t i = 0; i < rows.size() && i < expected.size(); ++i) {
    const svc::KernelMeasurement& r = rows[i];
    std::printf("%s: %.2f GFLOP/s, relative error %.2e, %d rounds\n", r.name.c_str(), r.gflops, r.rel_error, r.rounds);
    CHECK(r.name == expected[i], "candidate %zu is %s, expected %s", i, r.name.c_str(), expected[i].c_str());
    CHECK(std::isfinite(r.gflops) && r.gflops > 0, "%s rate %f", r.name.c_str(), r.gflops);
    CHECK(r.rounds >= 2 && r.rounds <= 12, "%s ran %d rounds", r.name.c_str(), r.rounds);
    // fp32 is the reference; a bf16 kernel rounds each operand once (2⁻⁸ each), far inside 2⁻⁷ over the whole C.
    CHECK(i == 0 ? r.rel_error == 0 : r.rel_error > 0 && r.rel_error < 1.0 / 128, "%s error %g", r.name.c_str(),
          r.rel_error);
  }

  // The switch: AMX by default; set to vector, gemm_bf16 runs vdpbf16ps, whose sums may differ from the tiles' in
  // order but not beyond bf16's rounding.
  CHECK(svc::bf16_kernel() == svc::Bf16Kernel::kAmx, "AMX is the default bf16 kernel");
  if (svc::train::bf16_products()) {
    const int m = 33, k = 70, n = 40;
    std::vector<float> a(m * k), b(n * k), amx(m * n), vec(m * n);
    for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 37) % 17) / 8.f - 1.f;
    for (int i = 0; i < n * k; ++i) b[i] = static_cast<float>((i * 11) % 13) / 8.f - 0.75f;
    svc::train::PackedBf16 packed;
    svc::train::pack_b_bf16(true, b.data(), k, k, n, packed, nullptr);
    svc::train::gemm_bf16(false, m, a.data(), k, packed, 0.f, amx.data(), n, nullptr);
    svc::set_bf16_kernel(svc::Bf16Kernel::kVector);
    svc::train::gemm_bf16(false, m, a.data(), k, packed, 0.f, vec.data(), n, nullptr);
    svc::set_bf16_kernel(svc::Bf16Kernel::kAmx);
    // These inputs are multiples of 1/8 in [-1, 1]: exact in bf16, every product and sum exact, so both agree bitwise.
    for (int i = 0; i < m * n; ++i) CHECK(amx[i] == vec[i], "cell %d: %g (default) vs %g (vector)", i, amx[i], vec[i]);
  }

  // Emulated bf16, on any CPU: both operands rounded to bf16 (nearest even), products and sums in fp32. Checked
  // against a double product of the same rounded inputs, over the transposes and beta, with edges on purpose (m, n
  // and k not multiples of anything, k odd).
  const bool hardware = svc::train::bf16_products();
  svc::set_bf16_kernel(svc::Bf16Kernel::kEmulated);
  CHECK(svc::train::bf16_products() && svc::train::bf16_emulated(), "emulated bf16 gives bf16 products on any CPU");
  const auto round_bf16 = [](float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    float r;
    std::memcpy(&r, &u, sizeof r);
    return r;
  };
  {
    const int m = 29, k = 67, n = 45;
    std::vector<float> a(m * k), b(n * k), c(m * n), c0(m * n);
    for (int i = 0; i < m * k; ++i) a[i] = std::sin(0.37f * i) * 1.7f;
    for (int i = 0; i < n * k; ++i) b[i] = std::cos(0.23f * i) * 0.05f;
    for (int i = 0; i < m * n; ++i) c0[i] = static_cast<float>(i % 7) - 3.f;
    svc::ThreadPool pool(2);
    for (int variant = 0; variant < 8; ++variant) {
      const bool ta = variant & 1, tb = variant & 2;
      const float beta = (variant & 4) ? 1.f : 0.f;
      // op(A) is m x k, op(B) k x n; stored transposed when asked.
      const auto op_a = [&](int i, int r) { return ta ? a[r * m + i] : a[i * k + r]; };
      const auto op_b = [&](int r, int j) { return tb ? b[j * k + r] : b[r * n + j]; };
      svc::train::PackedBf16 packed;
      svc::train::pack_b_bf16(tb, b.data(), tb ? k : n, k, n, packed, &pool);
      c = c0;
      svc::train::gemm_bf16(ta, m, a.data(), ta ? m : k, packed, beta, c.data(), n, &pool);
      double worst = 0;
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double ref = beta * c0[i * n + j], mag = 0;
          for (int r = 0; r < k; ++r) {
            const double p = static_cast<double>(round_bf16(op_a(i, r))) * round_bf16(op_b(r, j));
            ref += p;
            mag += std::fabs(p);
          }
          worst = std::max(worst, std::fabs(c[i * n + j] - ref) / (mag + std::fabs(beta * c0[i * n + j]) + 1e-30));
        }
      // fp32 sums of k exact products: a few 2⁻²⁴ per term, far below bf16's own 2⁻⁸.
      CHECK(worst < 1e-5, "emulated ta=%d tb=%d beta=%g: relative error %g against bf16 inputs in double", ta, tb, beta,
            worst);
    }
  }
  if (hardware) {
    // Where the CPU has vdpbf16ps: the same packed panels give the same exact products.
    const int m = 21, k = 33, n = 37;
    std::vector<float> a(m * k), b(n * k), emu(m * n), vec(m * n);
    for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 37) % 17) / 8.f - 1.f;
    for (int i = 0; i < n * k; ++i) b[i] = static_cast<float>((i * 11) % 13) / 8.f - 0.75f;
    svc::train::PackedBf16 packed;
    svc::train::pack_b_bf16(true, b.data(), k, k, n, packed, nullptr);
    svc::train::gemm_bf16(false, m, a.data(), k, packed, 0.f, emu.data(), n, nullptr);
    svc::set_bf16_kernel(svc::Bf16Kernel::kVector);
    svc::train::gemm_bf16(false, m, a.data(), k, packed, 0.f, vec.data(), n, nullptr);
    for (int i = 0; i < m * n; ++i) CHECK(emu[i] == vec[i], "cell %d: %g (emulated) vs %g (vector)", i, emu[i], vec[i]);
  }
  svc::set_bf16_kernel(svc::Bf16Kernel::kAmx);
  return svc::test::exit_code();
}
