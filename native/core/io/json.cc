#include "io/json.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "tokenizer/utf8.h"

namespace svc::json {

const Value* Value::find(std::string_view key) const {
  for (const auto& member : members_) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

namespace {

// Names quoted in messages are cut: a hostile file must not make the message huge.
std::string shown(std::string_view name) {
  constexpr std::size_t kShown = 64;
  return name.size() <= kShown ? std::string(name) : std::string(name.substr(0, kShown)) + "...";
}

}  // namespace

class Parser {
 public:
  Parser(std::string_view text, const Limits& limits) : text_(text), limits_(limits) {}

  Value document() {
    if (text_.size() > limits_.max_bytes) {
      throw Error("invalid JSON: " + std::to_string(text_.size()) + " bytes is more than the limit of " +
                  std::to_string(limits_.max_bytes));
    }
    Value value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the document");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("invalid JSON at byte " + std::to_string(pos_) + ": " + what);
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value parse_value(int depth) {
    if (depth > limits_.max_depth) fail("nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    Value value;
    const char c = text_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') {
      value.type_ = Value::Type::kString;
      value.string_ = parse_string();
      return value;
    }
    if (consume("true")) {
      value.type_ = Value::Type::kBool;
      value.bool_ = true;
      return value;
    }
    if (consume("false")) {
      value.type_ = Value::Type::kBool;
      return value;
    }
    if (consume("null")) return value;
    if (c == '-' || (c >= '0' && c <= '9')) {
      value.type_ = Value::Type::kNumber;
      value.number_ = parse_number();
      return value;
    }
    fail("unexpected character");
  }

  Value parse_object(int depth) {
    Value value;
    value.type_ = Value::Type::kObject;
    ++pos_;
    skip_space();
    if (at('}')) {
      ++pos_;
      return value;
    }
    for (;;) {
      skip_space();
      if (!at('"')) fail("expected a member name");
      std::string key = parse_string();
      skip_space();
      if (!at(':')) fail("expected ':'");
      ++pos_;
      value.members_.emplace_back(std::move(key), parse_value(depth + 1));
      skip_space();
      if (at(',')) {
        ++pos_;
        continue;
      }
      if (at('}')) break;
      fail("expected ',' or '}'");
    }
    // Readers take the first member of a name; a second one would be silently ignored.
    std::vector<std::string_view> names;
    names.reserve(value.members_.size());
    for (const auto& member : value.members_) names.push_back(member.first);
    std::sort(names.begin(), names.end());
    const auto twice = std::adjacent_find(names.begin(), names.end());
    if (twice != names.end()) fail("duplicate member '" + shown(*twice) + "'");
    ++pos_;
    return value;
  }

  Value parse_array(int depth) {
    Value value;
    value.type_ = Value::Type::kArray;
    ++pos_;
    skip_space();
    if (at(']')) {
      ++pos_;
      return value;
    }
    for (;;) {
      value.items_.push_back(parse_value(depth + 1));
      skip_space();
      if (at(',')) {
        ++pos_;
        continue;
      }
      if (at(']')) {
        ++pos_;
        return value;
      }
      fail("expected ',' or ']'");
    }
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and its value must be a finite double.
  double parse_number() {
    const std::size_t start = pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == from) fail("expected a digit");
    };
    if (at('-')) ++pos_;
    if (at('0')) {
      ++pos_;
      if (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') fail("leading zero in a number");
    } else {
      digits();
    }
    if (at('.')) {
      ++pos_;
      digits();
    }
    if (at('e') || at('E')) {
      ++pos_;
      if (at('+') || at('-')) ++pos_;
      digits();
    }
    double out = 0;
    // from_chars: no locale, no allocation; out_of_range for values past a double.
    const auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, out);
    if (ec == std::errc::result_out_of_range) {
      pos_ = start;
      fail("number out of range");
    }
    if (ec != std::errc() || end != text_.data() + pos_) {
      pos_ = start;
      fail("malformed number");
    }
    return out;
  }

  uint32_t parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("short \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v |= c - 'A' + 10;
      else
        fail("bad \\u escape");
    }
    return v;
  }

  // One UTF-8 sequence starting at pos_ (its lead byte >= 0x80), copied to out.
  // Overlong forms, surrogates and code points past U+10FFFF are refused.
  void copy_utf8(std::string& out) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text_[i]); };
    const unsigned char lead = byte(pos_);
    int extra = 0;
    uint32_t cp = 0, min = 0;
    if (lead >= 0xC2 && lead <= 0xDF)
      extra = 1, cp = lead & 0x1F, min = 0x80;
    else if (lead >= 0xE0 && lead <= 0xEF)
      extra = 2, cp = lead & 0x0F, min = 0x800;
    else if (lead >= 0xF0 && lead <= 0xF4)
      extra = 3, cp = lead & 0x07, min = 0x10000;
    else
      fail("invalid UTF-8");
    if (pos_ + extra >= text_.size()) fail("invalid UTF-8");
    for (int i = 1; i <= extra; ++i) {
      const unsigned char b = byte(pos_ + i);
      if ((b & 0xC0) != 0x80) fail("invalid UTF-8");
      cp = cp << 6 | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid UTF-8");
    out.append(text_.data() + pos_, static_cast<std::size_t>(extra) + 1);
    pos_ += static_cast<std::size_t>(extra) + 1;
  }

  std::string parse_string() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_];
      if (static_cast<unsigned char>(c) >= 0x80) {
        copy_utf8(out);
        continue;
      }
      ++pos_;
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          uint32_t cp = parse_hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in a \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            // A lone surrogate has no UTF-8 form: refused, as serde_json (HF tokenizers) does.
            if (text_.substr(pos_, 2) != "\\u") fail("lone high surrogate in a \\u escape");
            pos_ += 2;
            const uint32_t low = parse_hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate not followed by a low one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          svc::append_utf8(out, cp);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }

  std::string_view text_;
  const Limits& limits_;
  std::size_t pos_ = 0;
};

Value parse(std::string_view text, const Limits& limits) { return Parser(text, limits).document(); }

Value parse_file(const std::string& path, const Limits& limits) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("cannot open " + path);
  const std::streamoff size = in.tellg();
  if (size < 0) throw Error("cannot read " + path);
  if (static_cast<uint64_t>(size) > limits.max_bytes) {
    throw Error(path + ": " + std::to_string(size) + " bytes is more than the limit of " +
                std::to_string(limits.max_bytes));
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(text.data(), size)) throw Error("cannot read " + path);
  try {
    return parse(text, limits);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

bool integer_in(const Value& v, int64_t min, int64_t max, int64_t* out) {
  constexpr double kExact = 9007199254740992.0;  // 2^53: every integer up to here is exact
  if (!v.is_number()) return false;
  const double d = v.as_number();
  if (!(d >= -kExact && d <= kExact) || d != static_cast<double>(static_cast<int64_t>(d))) return false;
  const int64_t i = static_cast<int64_t>(d);
  if (i < min || i > max) return false;
  *out = i;
  return true;
}

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

}  // namespace svc::json
