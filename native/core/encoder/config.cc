#include "encoder/config.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tensor/json_lite.h"

namespace svc {

namespace {
int required_int(const JsonValue& root, const char* key, const std::string& path) {
  const JsonValue* v = root.find(key);
  if (!v || v->kind != JsonValue::Kind::Number || v->number < 1 || v->number != static_cast<int>(v->number))
    throw std::runtime_error(path + ": " + key + " must be a positive integer");
  return static_cast<int>(v->number);
}
}  // namespace

EncoderConfig read_encoder_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open model config " + path);
  std::stringstream text;
  text << in.rdbuf();
  JsonValue root = parse_json(text.str(), path.c_str());
  if (!root.is_object()) throw std::runtime_error(path + ": not a JSON object");
  EncoderConfig c;
  c.hidden = required_int(root, "hidden_size", path);
  c.layers = required_int(root, "num_hidden_layers", path);
  c.heads = required_int(root, "num_attention_heads", path);
  c.intermediate = required_int(root, "intermediate_size", path);
  c.vocab = required_int(root, "vocab_size", path);
  c.max_positions = required_int(root, "max_position_embeddings", path);
  if (root.find("type_vocab_size")) c.type_vocab = required_int(root, "type_vocab_size", path);
  if (const JsonValue* eps = root.find("layer_norm_eps")) c.layer_norm_eps = static_cast<float>(eps->number);
  if (c.hidden % c.heads != 0) throw std::runtime_error(path + ": hidden_size is not a multiple of num_attention_heads");
  if (const JsonValue* act = root.find("hidden_act"); act && act->string != "gelu")
    throw std::runtime_error(path + ": hidden_act '" + act->string + "' is not supported (only gelu)");
  if (const JsonValue* pos = root.find("position_embedding_type"); pos && pos->string != "absolute")
    throw std::runtime_error(path + ": position_embedding_type '" + pos->string + "' is not supported");
  return c;
}

}  // namespace svc
