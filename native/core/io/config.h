// The architecture of a BERT-family encoder, read from its config.json: the one
// EncoderConfig of the engine (the encoder and the trainer both take their shapes
// from it, and every tensor of a weights file is checked against it before use).
#pragma once

#include <cstdint>
#include <string>

namespace svc {

// config.json's model_type: the families whose embeddings and layers the engine runs.
enum class ModelType { kBert, kXlmRoberta, kMpnet };

struct EncoderConfig {
  ModelType model_type = ModelType::kBert;
  // The position row of a text's first token: XLM-RoBERTa and MPNet count positions from
  // pad_token_id + 1 (2 for their usual pad id 1), BERT from 0. A text addresses
  // max_positions - position_offset positions.
  int position_offset = 0;
  int hidden = 384;
  int layers = 6;
  int heads = 12;
  int intermediate = 1536;
  int vocab = 30522;
  int max_positions = 512;
  int type_vocab = 2;
  // MPNet: rows of encoder.relative_attention_bias (relative_attention_num_buckets). Upstream buckets
  // distances into the first 32 whatever it says, so it must be at least 32; 0 for other families.
  int relative_buckets = 0;
  double layer_norm_eps = 1e-12;
  double dropout = 0.1;  // hidden_dropout_prob: hidden and attention-probability dropout in training
  int head_dim() const { return hidden / heads; }
  int max_tokens() const { return max_positions - position_offset; }
};

// The bounds a config.json must keep; sizes past them are refused before anything is allocated.
struct ConfigLimits {
  static constexpr int kMaxHidden = 16384;
  static constexpr int kMaxLayers = 256;
  static constexpr int kMaxIntermediate = 65536;
  static constexpr int kMaxVocab = 1 << 22;
  static constexpr int kMaxPositions = 1 << 16;
  static constexpr int kMaxTypeVocab = 1024;
};

// Throws json::Error naming the file and the field when one is missing, out of its bounds, or
// unsupported (model_type bert, xlm-roberta or mpnet; hidden_act "gelu"; absolute position embeddings).
EncoderConfig read_encoder_config(const std::string& path);

// The same checks on a config built in memory (toy encoders in tests); `what` names it in errors.
void check_encoder_config(const EncoderConfig& c, const std::string& what);

}  // namespace svc
