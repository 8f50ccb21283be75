// A LoRA adapter in Hugging Face PEFT's layout (adapter_model.safetensors), read and checked
// against an encoder's config and merged into its linear layers at load: W' = W + scale B A.
// Tensor names are PEFT's for a BertModel:
//   base_model.model.encoder.layer.{i}.{module}.lora_A.weight  [r x in]
//   base_model.model.encoder.layer.{i}.{module}.lora_B.weight  [out x r]
// with module one of attention.self.{query,key,value}, attention.output.dense,
// intermediate.dense, output.dense.
#pragma once

#include <map>
#include <string>

#include "io/config.h"
#include "tensor/aligned_buffer.h"

namespace svc {

// What an Encoder merges: the file, the rank adapter_config.json declares, and alpha / r.
struct AdapterSpec {
  std::string path;
  int rank = 0;
  float scale = 0.f;
};

class LoraAdapter {
 public:
  // Reads every tensor and refuses, naming the tensor: a name that is not an adapted linear layer of
  // this config, an A without its B (or the reverse), a shape other than [rank x in] / [out x rank],
  // a non-finite value. Throws json::Error (a plain std::runtime_error) with the path.
  LoraAdapter(const AdapterSpec& spec, const EncoderConfig& config);

  // Adds scale B A into w (out x in, row-major) when `linear` (e.g. "encoder.layer.0.attention.self.query")
  // is adapted; leaves it alone otherwise.
  void merge_into(const std::string& linear, float* w, int64_t out, int64_t in) const;

  // Adapted linear layers (for tests and the weights' accounting).
  std::size_t size() const { return pairs_.size(); }

 private:
  struct Pair {
    AlignedBuffer<float> a, b;  // a: rank x in, b: out x rank
  };
  std::map<std::string, Pair> pairs_;  // by linear-layer name without the PEFT prefix
  int rank_;
  float scale_;
};

}  // namespace svc
