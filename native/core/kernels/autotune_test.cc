// The kernel measurement (autotune.h): every candidate this CPU allows is timed and checked against fp32, and the
// bf16 kernel switch reaches gemm_bf16. SVC_ISA caps the candidates like every kernel: capped at avx512 or lower,
// fp32 is the only one.
#include "kernels/autotune.h"

#include <cmath>
#include <cstdio>
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
  return svc::test::exit_code();
}
