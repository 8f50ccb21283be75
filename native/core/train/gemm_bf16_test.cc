// The bf16 training products (gemm_bf16.h) against fp32 and double references, and a
// toy encoder's training steps with bf16 products against the same steps in fp32, fully
// fine-tuned and with an adapter on the frozen base.
// Under SVC_ISA=avx512 or lower (or on a CPU without AVX512_BF16) it checks instead that
// a trainer asked for bf16 products runs the fp32 ones, bit for bit.
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cpu_features.h"
#include "kernels/gemm_bf16.h"
#include "train/gradcheck.h"
#include "test_check.h"
#include "train/linalg.h"
#include "train/rng.h"
#include "train/trainer.h"

using namespace svc::train;

static std::vector<float> values(size_t n, uint64_t seed, bool quarters) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = mix64(seed * 0x9e3779b97f4a7c15ull + i);
    // quarters: -8, -7.75, ..., 7.75, exact in bf16, so every product and sum below is exact.
    v[i] = quarters ? static_cast<float>(static_cast<int>(r % 64) - 32) / 4.f
                    : static_cast<float>(static_cast<double>(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  return v;
}

static std::vector<double> toy_losses(bool bf16, int threads, bool adapter = false) {
  const svc::EncoderConfig cfg = toy_config(64, 4, 128, 160);
  TrainerOptions o;
  if (adapter) {
    // A rank-4 adapter on every linear layer: its frozen base's products run in bf16, its own in fp32.
    o.adapter.rank = 4;
    o.adapter.alpha = 8;
    for (bool& t : o.adapter.targets) t = true;
  }
  o.threads = threads;
  o.seed = 7;
  o.adam.lr = 1e-3;
  o.adam.total_steps = 4;
  o.bf16_products = bf16;
  // The 150-token text's per-head attention products (150² x 16) are big enough to run in bf16 too.
  return toy_step_losses(cfg, o, 3, {15, 33, 9, 150, 21, 6}, 11, 5, 4);
}

int main() {
  std::printf("kernels: %s, bf16 products: %s\n", svc::cpu_level_name(), bf16_products() ? "yes" : "no");
  if (!bf16_products()) {
    const std::vector<double> asked = toy_losses(true, 2), fp32 = toy_losses(false, 2);
    CHECK(std::memcmp(asked.data(), fp32.data(), asked.size() * sizeof(double)) == 0,
          "without bf16 products the trainer must run the fp32 ones");
    const std::vector<double> asked_adapter = toy_losses(true, 2, true), fp32_adapter = toy_losses(false, 2, true);
    CHECK(std::memcmp(asked_adapter.data(), fp32_adapter.data(), asked_adapter.size() * sizeof(double)) == 0,
          "without bf16 products an adapter's trainer must run the fp32 ones");
    return test::exit_code();
  }

  Workers workers(2);
  // Edges on purpose: m not a multiple of the 14-row tile (AVX512_BF16) or the 32-row block
  // (AMX), n not of the 32-column panel, k odd; the second shape spans several of AMX's
  // 128-row groups and a k that is not a whole number of its 32-deep tiles.
  for (const auto [m, n, k] : {std::array<int, 3>{45, 77, 131}, std::array<int, 3>{300, 70, 260}})
    for (int variant = 0; variant < 8; ++variant) {
      const bool ta = variant & 1, tb = variant & 2;
      const float beta = (variant & 4) ? 1.f : 0.f;
      const int lda = ta ? m : k, ldb = tb ? k : n;
      for (const bool quarters : {true, false}) {
        const std::vector<float> a = values(static_cast<size_t>(m) * k, 1 + variant, quarters),
                                 b = values(static_cast<size_t>(k) * n, 11 + variant, quarters),
                                 c0 = values(static_cast<size_t>(m) * n, 21 + variant, quarters);
        std::vector<float> c = c0, ref = c0;
        PackedBf16 packed;
        pack_b_bf16(tb, b.data(), ldb, k, n, packed, &workers);
        gemm_bf16(ta, m, a.data(), lda, packed, beta, c.data(), n, &workers);
        gemm<float>(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, beta, ref.data(), n, &workers);
        double worst = 0;  // error over its bound: must stay <= 1
        double largest = 0;
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            double abs_sum = 0, exact = beta * c0[i * n + j];
            for (int p = 0; p < k; ++p) {
              const double x = ta ? a[p * lda + i] : a[i * lda + p], y = tb ? b[j * ldb + p] : b[p * ldb + j];
              abs_sum += std::fabs(x * y);
              exact += x * y;
            }
            const double got = c[i * n + j];
            if (quarters) {  // bf16-exact inputs and sums far inside fp32's 24 bits: exact
              CHECK(got == exact && ref[i * n + j] == exact, "variant %d (%d,%d): %.9g, fp32 %.9g, exact %.9g", variant,
                    i, j, got, ref[i * n + j], exact);
              continue;
            }
            // Each product carries two roundings to bf16 (8-bit significand, unit roundoff 2^-8):
            // relative error <= 2^-7 + 2^-16. fp32 summation of k terms adds <= k * 2^-24 of Σ|a·b|
            // (and of |beta·c|, rounded once).
            const double bound =
                (std::ldexp(1.0, -7) + std::ldexp(1.0, -16) + (k + 1) * std::ldexp(1.0, -24)) * abs_sum +
                std::ldexp(1.0, -23) * std::fabs(beta * c0[i * n + j]);
            worst = std::max(worst, std::fabs(got - exact) / bound);
            largest = std::max(largest, std::fabs(got - static_cast<double>(ref[i * n + j])));
          }
        if (quarters) continue;
        std::printf("%dx%dx%d ta=%d tb=%d beta=%g: max error / bound %.3f, max |bf16 - fp32| %.3e\n", m, n, k, ta, tb,
                    beta, worst, largest);
        CHECK(worst <= 1.0, "variant %d: error %.3f times the bf16 bound", variant, worst);
        CHECK(largest > 0, "variant %d: bf16 products equal fp32 ones: no bf16 rounding happened", variant);
      }
    }

  // Training steps: the same toy encoder and batch with bf16 and with fp32 products. Products
  // of relative error 2^-7 pass through two layers, LayerNorms and the loss; the step losses stay
  // within 1% of the fp32 ones (measured: up to 0.2%), and bf16 steps are bitwise repeatable.
  // One and two threads sum the groups' weight gradients in another order; the last-bit
  // difference that leaves in a weight can move its bf16 rounding by a whole 2^-8 step, so
  // their losses agree within 1e-3 relative (measured: up to 4e-4) where fp32's agree within 1e-5.
  const std::vector<double> b16 = toy_losses(true, 2), again = toy_losses(true, 2), one = toy_losses(true, 1),
                            fp32 = toy_losses(false, 2);
  for (size_t s = 0; s < b16.size(); ++s) {
    std::printf("step %zu loss bf16 %.7f fp32 %.7f, bf16 on 1 thread %.7f\n", s, b16[s], fp32[s], one[s]);
    CHECK(std::fabs(b16[s] - fp32[s]) <= 1e-2 * fp32[s], "step %zu: bf16 %.7f fp32 %.7f", s, b16[s], fp32[s]);
    CHECK(b16[s] != fp32[s], "step %zu: bf16 loss equals fp32 loss", s);
    CHECK(std::fabs(one[s] - b16[s]) <= 1e-3 * b16[s], "step %zu: 1 and 2 threads %.9f %.9f", s, one[s], b16[s]);
  }
  CHECK(std::memcmp(b16.data(), again.data(), b16.size() * sizeof(double)) == 0, "bf16 steps not repeatable");

  // An adapter's steps: the frozen base's products (forward and dx) in bf16, A and B and their
  // gradients in fp32. The same bound as full fine-tuning's, and repeatable bit for bit.
  const std::vector<double> a16 = toy_losses(true, 2, true), a16_again = toy_losses(true, 2, true),
                            a32 = toy_losses(false, 2, true);
  for (size_t s = 0; s < a16.size(); ++s) {
    std::printf("adapter step %zu loss bf16 %.7f fp32 %.7f\n", s, a16[s], a32[s]);
    CHECK(std::fabs(a16[s] - a32[s]) <= 1e-2 * a32[s], "adapter step %zu: bf16 %.7f fp32 %.7f", s, a16[s], a32[s]);
    CHECK(a16[s] != a32[s], "adapter step %zu: bf16 loss equals fp32 loss: the base ran fp32 products", s);
  }
  CHECK(std::memcmp(a16.data(), a16_again.data(), a16.size() * sizeof(double)) == 0,
        "adapter bf16 steps not repeatable");

  return test::exit_code();
}
