#include "tensor/json_lite.h"

#include <cstdlib>
#include <stdexcept>

namespace svc {

const JsonValue* JsonValue::find(const std::string& key) const {
  if (kind != Kind::Object) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, const char* what) : s_(text), what_(what) {}

  JsonValue parse_document() {
    JsonValue v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail();
    return v;
  }

 private:
  [[noreturn]] void fail() const {
    throw std::runtime_error(std::string(what_) + ": invalid JSON at byte " + std::to_string(pos_));
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  char peek() {
    skip_ws();
    if (pos_ >= s_.size()) fail();
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail();
    ++pos_;
  }
  bool match_word(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  JsonValue parse_value(int depth) {
    if (depth > 64) fail();
    JsonValue v;
    char c = peek();
    if (c == '{') {
      v.kind = JsonValue::Kind::Object;
      ++pos_;
      if (peek() == '}') { ++pos_; return v; }
      for (;;) {
        if (peek() != '"') fail();
        std::string key = parse_string();
        expect(':');
        v.object[key] = parse_value(depth + 1);
        char d = peek();
        ++pos_;
        if (d == '}') break;
        if (d != ',') fail();
      }
    } else if (c == '[') {
      v.kind = JsonValue::Kind::Array;
      ++pos_;
      if (peek() == ']') { ++pos_; return v; }
      for (;;) {
        v.array.push_back(parse_value(depth + 1));
        char d = peek();
        ++pos_;
        if (d == ']') break;
        if (d != ',') fail();
      }
    } else if (c == '"') {
      v.kind = JsonValue::Kind::String;
      v.string = parse_string();
    } else if (match_word("true")) {
      v.kind = JsonValue::Kind::Bool;
      v.boolean = true;
    } else if (match_word("false")) {
      v.kind = JsonValue::Kind::Bool;
    } else if (match_word("null")) {
    } else {
      v.kind = JsonValue::Kind::Number;
      std::string digits;
      while (pos_ < s_.size() && std::string_view("+-0123456789.eE").find(s_[pos_]) != std::string_view::npos)
        digits.push_back(s_[pos_++]);
      if (digits.empty()) fail();
      char* end = nullptr;
      v.number = std::strtod(digits.c_str(), &end);
      if (end != digits.c_str() + digits.size()) fail();
    }
    return v;
  }

  // Keys and values the engine reads are ASCII; \u escapes are decoded to UTF-8 anyway.
  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') { out.push_back(c); continue; }
      if (pos_ >= s_.size()) fail();
      char e = s_[pos_++];
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail();
          unsigned cp = std::strtoul(std::string(s_.substr(pos_, 4)).c_str(), nullptr, 16);
          pos_ += 4;
          if (cp < 0x80) out.push_back(static_cast<char>(cp));
          else if (cp < 0x800) { out.push_back(static_cast<char>(0xC0 | (cp >> 6))); out.push_back(static_cast<char>(0x80 | (cp & 0x3F))); }
          else { out.push_back(static_cast<char>(0xE0 | (cp >> 12))); out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F))); out.push_back(static_cast<char>(0x80 | (cp & 0x3F))); }
          break;
        }
        default: out.push_back(e);
      }
    }
    if (pos_ >= s_.size()) fail();
    ++pos_;  // closing quote
    return out;
  }

  std::string_view s_;
  const char* what_;
  std::size_t pos_ = 0;
};

}  // namespace

JsonValue parse_json(std::string_view text, const char* what) { return Parser(text, what).parse_document(); }

}  // namespace svc
