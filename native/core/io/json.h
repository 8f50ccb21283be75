// The one JSON reader of the engine: config.json, tokenizer.json and safetensors
// headers all go through it. Whole-document, objects kept in file order. Strict:
// RFC 8259 grammar, valid UTF-8 only, no duplicate member names, finite numbers,
// a depth and a size limit, so a hostile file is refused with the byte offset and
// the reason instead of exhausting the stack or memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace svc::json {

// Every malformed document and every field a reader refuses: a runtime_error, so the
// binding layer reports it as a plain Error (SvcError 'native_error' in JavaScript).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value {
 public:
  enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  bool as_bool() const { return bool_; }
  double as_number() const { return number_; }
  const std::string& as_string() const { return string_; }
  const std::vector<Value>& items() const { return items_; }
  const std::vector<std::pair<std::string, Value>>& members() const { return members_; }

  // The member named `key` of an object, or nullptr (also when this is not an object).
  const Value* find(std::string_view key) const;

 private:
  friend class Parser;
  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Value> items_;
  std::vector<std::pair<std::string, Value>> members_;
};

struct Limits {
  std::size_t max_bytes = std::size_t{64} << 20;  // a multilingual tokenizer.json is ~20 MB
  int max_depth = 64;                             // tokenizer.json nests 6 levels
};

// Parses one document (surrounding whitespace allowed, nothing else). Throws
// json::Error("invalid JSON at byte N: <reason>").
Value parse(std::string_view text, const Limits& limits = {});

// Reads and parses a file; errors name the file ("<path>: invalid JSON at byte N: ...").
Value parse_file(const std::string& path, const Limits& limits = {});

// Integers in JSON are doubles; exact ones up to 2^53 are what size fields may hold.
// True (and *out set) when v is a number that is an integer in [min, max].
bool integer_in(const Value& v, int64_t min, int64_t max, int64_t* out);

// `text` as a JSON string literal, quotes included (for writers).
std::string quote(std::string_view text);

}  // namespace svc::json
