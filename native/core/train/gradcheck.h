// Gradient checks of every backward kernel and of a whole toy encoder against
// central finite differences in double precision. Shared by the C++ test
// binary and the addon's trainSelfTest(), so both run the same checks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "train/model.h"
#include "train/trainer.h"
#include "io/safetensors.h"

namespace svc::train {

struct GradCheck {
  std::string name;
  double max_rel_error;  // max over inputs of |analytic - numeric| / max(|analytic|, |numeric|, 1e-6)
  int64_t compared;      // gradient components compared
};

std::vector<GradCheck> run_gradient_checks();
// The adapter's (LoRA) checks, which run_gradient_checks() ends with.
std::vector<GradCheck> lora_gradient_checks();
// The end-to-end phase's (softmax head cross-entropy) checks, which run_gradient_checks() also runs.
std::vector<GradCheck> head_gradient_checks();

// A random BERT checkpoint (fp32 tensors, checkpoint names) of cfg's shapes for toy-sized tests.
std::map<std::string, io::StoredTensor> toy_checkpoint(const EncoderConfig& cfg, uint64_t seed);

// A two-layer toy encoder config over a 50-token vocabulary, for the trainer's tests.
EncoderConfig toy_config(int hidden, int heads, int intermediate, int max_positions);

// The losses of `steps` Trainer steps (options o) from toy_checkpoint(cfg, checkpoint_seed) on one
// fixed batch: six texts of `lengths` tokens, ids (row·id_mult + id_add) mod vocab, six pairs over them.
std::vector<double> toy_step_losses(const EncoderConfig& cfg, const TrainerOptions& o, uint64_t checkpoint_seed,
                                    const std::vector<int32_t>& lengths, int id_mult, int id_add, int steps);

}  // namespace svc::train
