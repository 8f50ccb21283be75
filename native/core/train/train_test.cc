// C++ checks of the training core: gradients against finite differences,
// determinism of the trainer, and the safetensors round trip of its export.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tensor/half.h"
#include "train/gradcheck.h"
#include "train/test_check.h"
#include "train/trainer.h"

using namespace svc::train;
using svc::EncoderConfig;


static std::vector<double> run_steps(int threads, int steps) {
  const EncoderConfig cfg = toy_config(32, 4, 64, 32);
  TrainerOptions o;
  o.threads = threads;
  o.seed = 1234;
  o.adam.lr = 1e-3;
  o.adam.total_steps = steps;
  // fp32 products: the 1-vs-2-thread tolerance below is fp32's (gemm_bf16_test checks bf16 steps).
  o.bf16_products = false;
  return toy_step_losses(cfg, o, 9, {5, 9, 3, 12, 7, 4}, 7, 3, steps);
}

int main() {
  for (const GradCheck& c : run_gradient_checks()) {
    std::printf("%-28s max rel error %.3e over %lld components\n", c.name.c_str(), c.max_rel_error,
                static_cast<long long>(c.compared));
    CHECK(c.max_rel_error <= 1e-4, "%s gradient error %.3e", c.name.c_str(), c.max_rel_error);
    CHECK(c.compared > 0, "%s compared nothing", c.name.c_str());
  }

  const std::vector<double> a = run_steps(2, 6), b = run_steps(2, 6), c = run_steps(1, 6);
  for (size_t i = 0; i < a.size(); ++i) std::printf("step %zu loss %.9f\n", i, a[i]);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0, "same seed and threads differ");
  // Two threads sum two groups' gradients, one thread one: equal up to rounding.
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(std::fabs(a[i] - c[i]) <= 1e-5 * std::fabs(c[i]), "1 and 2 threads differ at step %zu: %.9f %.9f", i, a[i], c[i]);
  CHECK(a.back() < a.front(), "loss did not go down: %f -> %f", a.front(), a.back());

  {
    // embed() in slices gives what one pass over all texts gives.
    const EncoderConfig cfg = toy_config(32, 4, 64, 512);
    TrainerOptions o;
    o.threads = 2;
    o.adam.total_steps = 1;
    Trainer trainer(cfg, toy_checkpoint(cfg, 9), o);
    std::vector<int32_t> lengths, ids;
    for (int t = 0; t < 40; ++t) lengths.push_back(5 + (t * 37) % 300);
    for (int32_t n : lengths)
      for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((ids.size() * 13 + 1) % 50));
    std::vector<float> all(40 * 32), one(32);
    trainer.embed(ids.data(), lengths.data(), 40, all.data());
    int64_t offset = 0;
    double worst = 0;
    for (int t = 0; t < 40; ++t) {
      trainer.embed(ids.data() + offset, lengths.data() + t, 1, one.data());
      for (int j = 0; j < 32; ++j) worst = std::max(worst, std::fabs(static_cast<double>(one[j] - all[t * 32 + j])));
      offset += lengths[t];
    }
    std::printf("embed in slices vs one text at a time: max abs diff %.3e\n", worst);
    CHECK(worst <= 1e-6, "embed slices differ by %.3e", worst);
  }

  for (float v : {0.f, 1.f, -2.5f, 65504.f, 1e-7f, 6.1e-5f, 0.333333f, 70000.f})
    std::printf("half(%g) = %g\n", v, svc::half_to_float(svc::float_to_half(v)));
  CHECK(svc::half_to_float(svc::float_to_half(0.333333f)) == 0.333251953125f, "fp16 rounding");
  CHECK(std::isinf(svc::half_to_float(svc::float_to_half(70000.f))), "fp16 overflow");

  return test::exit_code();
}
