// The trainer's end-to-end phase (trainer_head.cc) on a toy encoder: the head's cross-entropy
// goes down for the full encoder and for an adapter, the same seed gives the same losses, an
// adapter's phase leaves the base as it was, and bad settings are refused.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_check.h"
#include "train/gradcheck.h"
#include "train/trainer.h"

using namespace svc::train;
using svc::EncoderConfig;

namespace {

const EncoderConfig kCfg = toy_config(32, 4, 64, 32);
const std::vector<int32_t> kLengths = {5, 9, 3, 12, 7, 4};
const std::vector<int32_t> kTargets = {0, 1, 2, 0, 1, 2};

std::vector<int32_t> toy_ids() {
  std::vector<int32_t> ids;
  for (int32_t n : kLengths)
    for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((ids.size() * 7 + 3) % kCfg.vocab));
  return ids;
}

TrainerOptions options(bool adapter) {
  TrainerOptions o;
  o.threads = 2;
  o.seed = 1234;
  o.adam.lr = 1e-3;
  o.adam.total_steps = 4;
  o.bf16_products = false;
  if (adapter) {
    o.adapter.rank = 4;
    o.adapter.alpha = 8;
    for (bool& t : o.adapter.targets) t = true;
  }
  return o;
}

// Two contrastive steps, then `steps` end-to-end steps on the six texts; their losses.
std::vector<double> phase_losses(bool adapter, int steps, std::vector<float>* base_after = nullptr) {
  Trainer trainer(kCfg, toy_checkpoint(kCfg, 9), options(adapter));
  const std::vector<int32_t> ids = toy_ids(), pa = {0, 1, 2}, pb = {3, 4, 5};
  const std::vector<float> labels = {1, 1, 1};
  const PairBatch pairs{ids.data(), kLengths.data(), 6, pa.data(), pb.data(), labels.data(), 3};
  for (int s = 0; s < 2; ++s) trainer.step(pairs);
  const std::vector<float> base = trainer.params();
  HeadPhaseOptions h;
  h.classes = 3;
  h.body_lr = adapter ? 1e-2 : 1e-3;
  h.head_lr = 5e-2;
  h.total_steps = steps;
  const std::vector<float> weights(3 * kCfg.hidden, 0.f), bias(3, 0.f);
  trainer.start_head_phase(h, weights.data(), bias.data());
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s)
    losses.push_back(trainer.head_step(ids.data(), kLengths.data(), 6, kTargets.data()).loss);
  CHECK(trainer.head() != std::vector<float>(3 * kCfg.hidden + 3, 0.f), "the head did not move");
  if (base_after) *base_after = trainer.params();
  if (adapter) CHECK(trainer.params() == base, "the adapter's end-to-end phase changed the base");
  return losses;
}

void refused(const std::function<void(Trainer&)>& fn, const char* expect) {
  Trainer trainer(kCfg, toy_checkpoint(kCfg, 9), options(false));
  std::string message;
  try {
    fn(trainer);
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  CHECK(message == expect, "expected '%s', got '%s'", expect, message.c_str());
}

}  // namespace

int main() {
  for (const bool adapter : {false, true}) {
    const std::vector<double> a = phase_losses(adapter, 30), b = phase_losses(adapter, 30);
    const char* name = adapter ? "adapter" : "full";
    std::printf("%s end-to-end loss %.6f -> %.6f\n", name, a.front(), a.back());
    CHECK(std::fabs(a.front() - std::log(3.0)) < 1e-6, "%s: a zero head's first loss is %f, not ln 3", name, a.front());
    CHECK(a.back() < 0.5 * a.front(), "%s: loss did not go down: %f -> %f", name, a.front(), a.back());
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0, "%s: same seed differs", name);
  }
  const std::vector<float> w(3 * kCfg.hidden, 0.f), bias(3, 0.f);
  const std::vector<int32_t> ids = toy_ids(), bad = {0, 1, 3, 0, 1, 2};
  refused([&](Trainer& t) { t.head_step(ids.data(), kLengths.data(), 6, kTargets.data()); },
          "start the end-to-end phase before its steps");
  refused(
      [&](Trainer& t) {
        HeadPhaseOptions h;
        h.classes = 1;
        t.start_head_phase(h, w.data(), bias.data());
      },
      "the end-to-end head needs at least two classes");
  refused(
      [&](Trainer& t) {
        HeadPhaseOptions h;
        h.classes = 3;
        t.start_head_phase(h, w.data(), bias.data());
        t.head_step(ids.data(), kLengths.data(), 6, bad.data());
      },
      "head target out of range");
  std::printf("head phase: ok\n");
  return 0;
}
