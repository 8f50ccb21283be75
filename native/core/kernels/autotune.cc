#include "kernels/autotune.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "cpu_features.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
#include "tensor/half.h"
#include "thread_pool.h"

namespace svc {

namespace {

// SVC_KERNEL=bf16-emulated is read here, as SVC_ISA is in cpu_features.cc: bf16 products must be there from the
// addon's first call (bf16_products() decides what a 'bf16' load keeps), before anything above the core runs.
Bf16Kernel initial_bf16_kernel() {
  const char* forced = std::getenv("SVC_KERNEL");
  return forced && std::strcmp(forced, "bf16-emulated") == 0 ? Bf16Kernel::kEmulated : Bf16Kernel::kAmx;
}

std::atomic<int> g_bf16_kernel{static_cast<int>(initial_bf16_kernel())};

// Deterministic values in [-1, 1): the same inputs on every run and every CPU.
float unit_value(uint64_t i) {
  uint64_t x = i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

struct Candidate {
  std::string name;
  std::function<void(float* c)> run;
  double best_seconds = 0;
  int rounds = 0;
};

double relative_error(const std::vector<float>& c, const std::vector<float>& reference) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double d = static_cast<double>(c[i]) - reference[i];
    diff += d * d;
    norm += static_cast<double>(reference[i]) * reference[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : 0;
}

}  // namespace

void set_bf16_kernel(Bf16Kernel kernel) { g_bf16_kernel.store(static_cast<int>(kernel), std::memory_order_relaxed); }

Bf16Kernel bf16_kernel() { return static_cast<Bf16Kernel>(g_bf16_kernel.load(std::memory_order_relaxed)); }

std::vector<KernelMeasurement> measure_linear_kernels(int threads, double budget_ms, MeasureShape shape) {
  const int m = shape.m, k = shape.k, n = shape.n;
  ThreadPool pool(std::max(1, threads));
  std::vector<float> a(static_cast<std::size_t>(m) * k), w(static_cast<std::size_t>(n) * k);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = unit_value(i);
  // Weights as a checkpoint's: small and exact in fp16, so the fp32 kernel streams fp16 panels as it does for
  // svc-small (kernels/gemm.h).
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = half_to_float(float_to_half(0.05f * unit_value(a.size() + i)));

  const PackedF32 packed = pack_f32(w.data(), nullptr, n, k);
  AlignedBuffer<float> scratch;
  std::vector<Candidate> candidates;
  candidates.push_back({"fp32", [&](float* c) {
                          GemmArgs args;
                          args.a = a.data();
                          args.lda = k;
                          args.m = m;
                          args.c = c;
                          args.ldc = n;
                          gemm_f32(args, packed, scratch, &pool);
                        }});
  train::PackedBf16 packed_bf16;
#if SVC_ARCH_X86
  // The bf16 kernels read the same panels (pack_b_bf16): W is [n x k], so op(B) = Wᵀ.
  if (train::bf16_products()) {
    // The public pack sizes the panels before filling them (the kernel's own pack writes into them as they are).
    train::pack_b_bf16(true, w.data(), k, k, n, packed_bf16, &pool);
    candidates.push_back({"bf16-vector", [&](float* c) {
                            train::detail::gemm_bf16_avx512(false, m, a.data(), k, packed_bf16, 0.f, c, n, &pool);
                          }});
    if (cpu_features().amx) {
      candidates.push_back({"bf16-amx", [&](float* c) {
                              train::detail::gemm_bf16_amx(false, m, a.data(), k, packed_bf16, 0.f, c, n, &pool);
                            }});
    }
  }
#endif

  const std::size_t cells = static_cast<std::size_t>(m) * n;
  std::vector<std::vector<float>> out(candidates.size(), std::vector<float>(cells));
  for (std::size_t i = 0; i < candidates.size(); ++i) candidates[i].run(out[i].data());  // warm-up, and the outputs
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  constexpr int kMinRounds = 2, kMaxRounds = 12;
  for (int round = 0; round < kMaxRounds; ++round) {
    if (round >= kMinRounds && std::chrono::duration<double, std::milli>(Clock::now() - start).count() >= budget_ms)
      break;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const Clock::time_point t0 = Clock::now();
      candidates[i].run(out[i].data());
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      Candidate& cand = candidates[i];
      cand.best_seconds = cand.rounds == 0 ? s : std::min(cand.best_seconds, s);
      ++cand.rounds;
    }
  }

  const double flops = 2.0 * m * n * k;
  std::vector<KernelMeasurement> result;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& cand = candidates[i];
    result.push_back({cand.name, flops / std::max(cand.best_seconds, 1e-9) / 1e9,
                      i == 0 ? 0.0 : relative_error(out[i], out[0]), cand.rounds});
  }
  return result;
}

}  // namespace svc
