// C++ checks of the training core: gradients against finite differences,
// determinism of the trainer, and the safetensors round trip of its export.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "tensor/half.h"
#include "train/gradcheck.h"
#include "test_check.h"
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

static LoraConfig every_target(int rank, double alpha) {
  LoraConfig lc;
  lc.rank = rank;
  lc.alpha = alpha;
  for (bool& t : lc.targets) t = true;
  return lc;
}

// Adapter training: starts as the base, trains A and B only, names them as PEFT does.
static void check_adapter_trainer() {
  const EncoderConfig cfg = toy_config(32, 4, 64, 32);
  TrainerOptions o;
  o.threads = 2;
  o.seed = 1234;
  o.adam.lr = 1e-2;
  o.adam.total_steps = 6;
  o.adapter = every_target(4, 8);
  // fp32 products, as above: the 1-vs-2-thread tolerance is fp32's (gemm_bf16_test checks an adapter's bf16 steps).
  o.bf16_products = false;
  const std::vector<double> a = toy_step_losses(cfg, o, 9, {5, 9, 3, 12, 7, 4}, 7, 3, 6);
  const std::vector<double> b = toy_step_losses(cfg, o, 9, {5, 9, 3, 12, 7, 4}, 7, 3, 6);
  o.threads = 1;
  const std::vector<double> c = toy_step_losses(cfg, o, 9, {5, 9, 3, 12, 7, 4}, 7, 3, 6);
  for (size_t i = 0; i < a.size(); ++i) std::printf("adapter step %zu loss %.9f\n", i, a[i]);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0, "adapter: same seed and threads differ");
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(std::fabs(a[i] - c[i]) <= 1e-5 * std::fabs(c[i]), "adapter: 1 and 2 threads differ at step %zu", i);
  CHECK(a.back() < a.front(), "adapter: loss did not go down: %f -> %f", a.front(), a.back());

  // B = 0 at the start: the adapted encoder embeds as the base does; after steps only A and B moved.
  o.threads = 2;
  TrainerOptions full = o;
  full.adapter = LoraConfig{};
  Trainer base(cfg, toy_checkpoint(cfg, 9), full);
  Trainer adapted(cfg, toy_checkpoint(cfg, 9), o);
  const std::vector<int32_t> ids = {1, 7, 3, 9, 2, 4, 8, 11, 5}, lengths = {4, 5};
  std::vector<float> e0(64), e1(64), e2(64);
  base.embed(ids.data(), lengths.data(), 2, e0.data());
  adapted.embed(ids.data(), lengths.data(), 2, e1.data());
  double worst = 0;
  for (int i = 0; i < 64; ++i) worst = std::max(worst, std::fabs(static_cast<double>(e0[i] - e1[i])));
  CHECK(worst <= 1e-6, "adapter at B = 0 embeds %.3e away from the base", worst);
  const std::vector<float> before = adapted.params();
  const std::vector<int32_t> pa = {0}, pb = {1};
  const std::vector<float> labels = {0};
  PairBatch batch{ids.data(), lengths.data(), 2, pa.data(), pb.data(), labels.data(), 1};
  for (int s = 0; s < 3; ++s) adapted.step(batch);
  CHECK(adapted.params() == before, "adapter training changed the base weights");
  adapted.embed(ids.data(), lengths.data(), 2, e2.data());
  worst = 0;
  for (int i = 0; i < 64; ++i) worst = std::max(worst, std::fabs(static_cast<double>(e2[i] - e1[i])));
  CHECK(worst > 1e-4, "adapter training did not change the embeddings (%.3e)", worst);

  {
    // An fp16 checkpoint: the adapter keeps the word table and the frozen panels in fp16 (widened per
    // product where the kernel reads no fp16) and still embeds as a full trainer of the same weights.
    std::map<std::string, svc::io::StoredTensor> half = toy_checkpoint(cfg, 9);
    for (auto& [name, t] : half) t = svc::io::f16_tensor(t.shape, t.to_f32().data());
    Trainer full16(cfg, half, full), adapted16(cfg, half, o);
    std::vector<float> f16(64), a16(64);
    full16.embed(ids.data(), lengths.data(), 2, f16.data());
    adapted16.embed(ids.data(), lengths.data(), 2, a16.data());
    double gap = 0;
    for (int i = 0; i < 64; ++i) gap = std::max(gap, std::fabs(static_cast<double>(f16[i] - a16[i])));
    CHECK(gap <= 1e-6, "fp16 checkpoint: the adapter at B = 0 embeds %.3e away from the base", gap);
    const double loss = adapted16.step(batch).loss;
    CHECK(std::isfinite(loss), "fp16 checkpoint: adapter step loss %f", loss);
  }

  const std::vector<AdapterTensor> tensors = adapted.adapter_tensors();
  CHECK(tensors.size() == 2 * 6 * 2, "%zu adapter tensors", tensors.size());
  CHECK(tensors[0].name == "base_model.model.encoder.layer.0.attention.self.query.lora_A.weight", "%s",
        tensors[0].name.c_str());
  CHECK(tensors[0].rows == 4 && tensors[0].cols == 32, "query A is %lld x %lld",
        static_cast<long long>(tensors[0].rows), static_cast<long long>(tensors[0].cols));
  CHECK(tensors[9].name == "base_model.model.encoder.layer.0.intermediate.dense.lora_B.weight" &&
            tensors[9].rows == 64 && tensors[9].cols == 4,
        "%s", tensors[9].name.c_str());
  CHECK(tensors[23].name == "base_model.model.encoder.layer.1.output.dense.lora_B.weight", "%s",
        tensors[23].name.c_str());
  bool b_moved = false;
  for (int64_t i = 0; i < tensors[1].rows * tensors[1].cols; ++i) b_moved = b_moved || tensors[1].data[i] != 0.f;
  CHECK(b_moved, "query B is still zero");
  CHECK(base.adapter_tensors().empty(), "a full trainer has adapter tensors");

  auto refused = [&](LoraConfig lc, bool train_embeddings, const char* message) {
    TrainerOptions bad = o;
    bad.adapter = lc;
    bad.train_embeddings = train_embeddings;
    try {
      Trainer t(cfg, toy_checkpoint(cfg, 9), bad);
      CHECK(false, "accepted: %s", message);
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()) == message, "'%s' instead of '%s'", e.what(), message);
    }
  };
  refused(every_target(33, 8), false, "adapter rank must be an integer in [1, 32]");
  refused(every_target(4, 0), false, "adapter alpha must be a positive number");
  LoraConfig none = every_target(4, 8);
  for (bool& t : none.targets) t = false;
  refused(none, false, "adapter targets must name at least one layer");
  refused(every_target(4, 8), true, "an adapter trains on frozen embeddings: trainEmbeddings must be off");
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
    CHECK(std::fabs(a[i] - c[i]) <= 1e-5 * std::fabs(c[i]), "1 and 2 threads differ at step %zu: %.9f %.9f", i, a[i],
          c[i]);
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

  check_adapter_trainer();

  for (float v : {0.f, 1.f, -2.5f, 65504.f, 1e-7f, 6.1e-5f, 0.333333f, 70000.f})
    std::printf("half(%g) = %g\n", v, svc::half_to_float(svc::float_to_half(v)));
  CHECK(svc::half_to_float(svc::float_to_half(0.333333f)) == 0.333251953125f, "fp16 rounding");
  CHECK(std::isinf(svc::half_to_float(svc::float_to_half(70000.f))), "fp16 overflow");

  return test::exit_code();
}
