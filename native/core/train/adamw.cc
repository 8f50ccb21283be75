#include "train/adamw.h"

#include <cmath>

#include "train/vector_ops.h"

namespace svc::train {

double linear_warmup_decay(int64_t step, int64_t warmup, int64_t total) {
  if (step < warmup) return static_cast<double>(step) / static_cast<double>(warmup > 1 ? warmup : 1);
  const double left = static_cast<double>(total - step) / static_cast<double>(total - warmup > 1 ? total - warmup : 1);
  return left > 0 ? left : 0;
}

int64_t warmup_steps_for(const AdamWOptions& o) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(o.total_steps) * o.warmup_ratio));
}

AdamW::AdamW(const AdamWOptions& options, std::vector<uint8_t> decay_mask)
    : o_(options), decay_(std::move(decay_mask)), m_(decay_.size(), 0.f), v_(decay_.size(), 0.f) {}

double AdamW::step(float* p, const float* g, Workers* workers) {
  const double lr = o_.lr * linear_warmup_decay(t_, warmup_steps_for(o_), o_.total_steps);
  ++t_;
  const float b1 = static_cast<float>(o_.beta1), b2 = static_cast<float>(o_.beta2);
  const double bc1 = 1 - std::pow(o_.beta1, static_cast<double>(t_));
  const double bc2 = 1 - std::pow(o_.beta2, static_cast<double>(t_));
  const float step_size = static_cast<float>(lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2));
  const float eps = static_cast<float>(o_.eps);
  const float decay = static_cast<float>(1 - lr * o_.weight_decay);
  const int64_t n = static_cast<int64_t>(decay_.size());
  float* m = m_.data();
  float* v = v_.data();
  const uint8_t* decays = decay_.data();
  const AdamWStep st{b1, b2, step_size, inv_sqrt_bc2, eps, decay};
  parallel_for_grain(workers, n, 4096, [=, &st](int64_t i0, int64_t i1) {
    vector_ops().adamw(i1 - i0, p + i0, g + i0, m + i0, v + i0, decays + i0, st);
  });
  return lr;
}

}  // namespace svc::train
