// A small JSON reader for the two JSON documents the engine reads: the
// safetensors header and a model's config.json. Whole-document, no streaming.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace svc {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  bool is_object() const { return kind == Kind::Object; }
  // nullptr when this is not an object or has no such key.
  const JsonValue* find(const std::string& key) const;
};

// Throws std::runtime_error("<what>: invalid JSON at byte N") on malformed input.
JsonValue parse_json(std::string_view text, const char* what);

}  // namespace svc
