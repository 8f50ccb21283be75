#include "io/config.h"

#include <cmath>

#include "io/json.h"

namespace svc {

namespace {

using json::Error;
using json::Value;

int bounded_int(const Value& root, const char* key, int max, const std::string& path, const int* fallback = nullptr) {
  const Value* v = root.find(key);
  if (!v && fallback) return *fallback;
  int64_t out = 0;
  if (!v || !json::integer_in(*v, 1, max, &out))
    throw Error(path + ": " + key + " must be an integer from 1 to " + std::to_string(max));
  return static_cast<int>(out);
}

double bounded_number(const Value& root, const char* key, double low, double high, double fallback,
                      const std::string& path, const char* range) {
  const Value* v = root.find(key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_number() || !(v->as_number() >= low && v->as_number() < high))
    throw Error(path + ": " + key + " must be a number " + range);
  return v->as_number();
}

std::string string_or(const Value& root, const char* key, const std::string& fallback, const std::string& path) {
  const Value* v = root.find(key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_string()) throw Error(path + ": " + key + " must be a string");
  return v->as_string();
}

}  // namespace

void check_encoder_config(const EncoderConfig& c, const std::string& what) {
  auto within = [&](int v, int max, const char* key) {
    if (v < 1 || v > max) throw Error(what + ": " + key + " must be an integer from 1 to " + std::to_string(max));
  };
  within(c.hidden, ConfigLimits::kMaxHidden, "hidden_size");
  within(c.layers, ConfigLimits::kMaxLayers, "num_hidden_layers");
  within(c.heads, c.hidden, "num_attention_heads");
  within(c.intermediate, ConfigLimits::kMaxIntermediate, "intermediate_size");
  within(c.vocab, ConfigLimits::kMaxVocab, "vocab_size");
  within(c.max_positions, ConfigLimits::kMaxPositions, "max_position_embeddings");
  within(c.type_vocab, ConfigLimits::kMaxTypeVocab, "type_vocab_size");
  if (c.position_offset < 0 || c.position_offset >= c.max_positions)
    throw Error(what + ": the position offset (pad_token_id + 1) " + std::to_string(c.position_offset) +
                " leaves no position of max_position_embeddings " + std::to_string(c.max_positions));
  if (c.model_type == ModelType::kMpnet && c.relative_buckets < 32)
    throw Error(what + ": relative_attention_num_buckets must be at least 32 (MPNet buckets distances into 32)");
  if (c.hidden % c.heads != 0)
    throw Error(what + ": hidden_size " + std::to_string(c.hidden) + " is not a multiple of num_attention_heads " +
                std::to_string(c.heads));
  if (!(c.layer_norm_eps > 0 && c.layer_norm_eps < 1))
    throw Error(what + ": layer_norm_eps must be a number in (0, 1)");
  if (!(c.dropout >= 0 && c.dropout < 1)) throw Error(what + ": hidden_dropout_prob must be a number in [0, 1)");
}

EncoderConfig read_encoder_config(const std::string& path) {
  const Value root = json::parse_file(path, {std::size_t{1} << 20, 16});
  if (!root.is_object()) throw Error(path + ": not a JSON object");
  EncoderConfig c;
  // Checkpoints from before model_type was written are BERT's.
  const std::string type = string_or(root, "model_type", "bert", path);
  if (type == "bert") {
    c.model_type = ModelType::kBert;
  } else if (type == "xlm-roberta" || type == "roberta") {
    c.model_type = ModelType::kXlmRoberta;
  } else if (type == "mpnet") {
    c.model_type = ModelType::kMpnet;
  } else {
    throw Error(path + ": model_type '" + type + "' is not supported (bert, xlm-roberta, roberta or mpnet)");
  }
  if (c.model_type != ModelType::kBert) {
    // RobertaEmbeddings and MPNetEmbeddings number positions from padding_idx + 1.
    int64_t pad = 1;
    if (const Value* v = root.find("pad_token_id");
        v && !v->is_null() && !json::integer_in(*v, 0, ConfigLimits::kMaxPositions, &pad))
      throw Error(path + ": pad_token_id must be an integer from 0 to " + std::to_string(ConfigLimits::kMaxPositions));
    c.position_offset = static_cast<int>(pad) + 1;
  }
  c.hidden = bounded_int(root, "hidden_size", ConfigLimits::kMaxHidden, path);
  c.layers = bounded_int(root, "num_hidden_layers", ConfigLimits::kMaxLayers, path);
  c.heads = bounded_int(root, "num_attention_heads", c.hidden, path);
  c.intermediate = bounded_int(root, "intermediate_size", ConfigLimits::kMaxIntermediate, path);
  c.vocab = bounded_int(root, "vocab_size", ConfigLimits::kMaxVocab, path);
  c.max_positions = bounded_int(root, "max_position_embeddings", ConfigLimits::kMaxPositions, path);
  const int two = 2;
  c.type_vocab = bounded_int(root, "type_vocab_size", ConfigLimits::kMaxTypeVocab, path, &two);
  if (c.model_type == ModelType::kMpnet) {
    const int upstream = 32;
    c.relative_buckets =
        bounded_int(root, "relative_attention_num_buckets", ConfigLimits::kMaxPositions, path, &upstream);
  }
  c.layer_norm_eps = bounded_number(root, "layer_norm_eps", 0, 1, 1e-12, path, "in (0, 1)");
  c.dropout = bounded_number(root, "hidden_dropout_prob", 0, 1, 0.1, path, "in [0, 1)");
  if (const std::string act = string_or(root, "hidden_act", "gelu", path); act != "gelu")
    throw Error(path + ": hidden_act '" + act + "' is not supported (only gelu)");
  if (const std::string pos = string_or(root, "position_embedding_type", "absolute", path); pos != "absolute")
    throw Error(path + ": position_embedding_type '" + pos + "' is not supported (only absolute)");
  check_encoder_config(c, path);
  return c;
}

}  // namespace svc
