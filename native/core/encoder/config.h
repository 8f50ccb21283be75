// The architecture of a BERT-family encoder, read from its config.json.
#pragma once

#include <string>

namespace svc {

struct EncoderConfig {
  int hidden = 0;
  int layers = 0;
  int heads = 0;
  int intermediate = 0;
  int vocab = 0;
  int max_positions = 0;
  int type_vocab = 2;
  float layer_norm_eps = 1e-12f;
  int head_dim() const { return hidden / heads; }
};

// Throws std::runtime_error naming the file and the field when something is missing or unsupported
// (only hidden_act "gelu" and absolute position embeddings are supported).
EncoderConfig read_encoder_config(const std::string& path);

}  // namespace svc
