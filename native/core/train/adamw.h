// AdamW as torch.optim.AdamW computes it (decoupled decay, bias-corrected
// moments), with the learning-rate schedule sentence-transformers uses for
// SetFit: linear warm-up over the first ceil(10%) of steps, then linear decay
// to zero (transformers' get_linear_schedule_with_warmup).
#pragma once

#include <cstdint>
#include <vector>

#include "workers.h"

namespace svc::train {

struct AdamWOptions {
  double lr = 2e-5;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;
  double weight_decay = 0.01;
  double warmup_ratio = 0.1;
  int64_t total_steps = 1;
};

// The multiplier of lr at zero-based step `step`.
double linear_warmup_decay(int64_t step, int64_t warmup_steps, int64_t total_steps);
int64_t warmup_steps_for(const AdamWOptions& o);

class AdamW {
 public:
  // decay_mask[i] says whether parameter i gets weight decay.
  AdamW(const AdamWOptions& options, std::vector<uint8_t> decay_mask);

  // Applies one update with the scheduled rate; returns the rate used.
  double step(float* params, const float* grads, Workers* workers = nullptr);
  int64_t steps_done() const { return t_; }

 private:
  AdamWOptions o_;
  std::vector<uint8_t> decay_;
  std::vector<float> m_, v_;
  int64_t t_ = 0;
};

}  // namespace svc::train
