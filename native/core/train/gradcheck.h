// Gradient checks of every backward kernel and of a whole toy encoder against
// central finite differences in double precision. Shared by the C++ test
// binary and the addon's trainSelfTest(), so both run the same checks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "train/model.h"
#include "io/safetensors.h"

namespace svc::train {

struct GradCheck {
  std::string name;
  double max_rel_error;   // max over inputs of |analytic - numeric| / max(|analytic|, |numeric|, 1e-6)
  int64_t compared;       // gradient components compared
};

std::vector<GradCheck> run_gradient_checks();

// A random BERT checkpoint (fp32 tensors, checkpoint names) of cfg's shapes for toy-sized tests.
std::map<std::string, io::StoredTensor> toy_checkpoint(const EncoderConfig& cfg, uint64_t seed);

}  // namespace svc::train
