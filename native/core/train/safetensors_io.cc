#include "train/safetensors_io.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "tensor/safetensors.h"

namespace svc::train {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("safetensors " + path + ": " + what);
}

// A reader for exactly the JSON a safetensors header holds: objects, arrays,
// strings without escapes beyond \" and \\, and integers.
struct HeaderParser {
  const std::string& s;
  const std::string& path;
  size_t i = 0;

  void ws() { while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i; }
  void expect(char c) {
    ws();
    if (i >= s.size() || s[i] != c) fail(path, std::string("malformed header, expected '") + c + "'");
    ++i;
  }
  bool peek(char c) { ws(); return i < s.size() && s[i] == c; }
  std::string str() {
    expect('"');
    std::string out;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      out += s[i++];
    }
    expect('"');
    return out;
  }
  int64_t integer() {
    ws();
    size_t start = i;
    if (i < s.size() && s[i] == '-') ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (start == i) fail(path, "malformed header, expected a number");
    return std::stoll(s.substr(start, i - start));
  }
  std::vector<int64_t> int_array() {
    std::vector<int64_t> out;
    expect('[');
    if (peek(']')) { ++i; return out; }
    for (;;) {
      out.push_back(integer());
      if (peek(',')) { ++i; continue; }
      expect(']');
      return out;
    }
  }
  void skip_value() {
    ws();
    if (peek('"')) { str(); return; }
    if (peek('{') || peek('[')) {
      const char open = s[i], close = open == '{' ? '}' : ']';
      int depth = 0;
      do {
        if (s[i] == '"') { str(); continue; }
        if (s[i] == open) ++depth;
        if (s[i] == close) --depth;
        ++i;
      } while (depth > 0 && i < s.size());
      return;
    }
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']') ++i;
  }
};

size_t dtype_size(const std::string& d) {
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

}  // namespace

int64_t StoredTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000) return sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0);  // inf / nan
  if (abs >= 0x477ff000) return sign | 0x7c00;  // rounds past the largest half
  if (abs < 0x38800000) {                       // half subnormal or zero
    if (abs < 0x33000000) return sign;
    const uint32_t mant = (abs & 0x7fffff) | 0x800000;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return sign | static_cast<uint16_t>(h);
  }
  uint32_t h = ((abs >> 13) - ((127 - 15) << 10));
  const uint32_t rem = abs & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

std::vector<float> StoredTensor::to_f32() const {
  const int64_t n = elements();
  std::vector<float> out(n);
  if (dtype == "F32") {
    std::memcpy(out.data(), bytes.data(), n * 4);
  } else if (dtype == "F16" || dtype == "BF16") {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, bytes.data() + 2 * i, 2);
      out[i] = dtype == "F16" ? svc::half_to_float(v) : svc::bfloat16_to_float(v);
    }
  } else {
    throw std::runtime_error("tensor dtype " + dtype + " is not a float type");
  }
  return out;
}

StoredTensor f16_tensor(const std::vector<int64_t>& shape, const float* data) {
  StoredTensor t;
  t.dtype = "F16";
  t.shape = shape;
  const int64_t n = t.elements();
  t.bytes.resize(n * 2);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = float_to_half(data[i]);
    std::memcpy(t.bytes.data() + 2 * i, &h, 2);
  }
  return t;
}

std::map<std::string, StoredTensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 8);
  if (!in || header_len > (100u << 20)) fail(path, "bad header length");
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) fail(path, "truncated header");
  const uint64_t data_start = 8 + header_len;

  std::map<std::string, StoredTensor> out;
  HeaderParser p{header, path};
  p.expect('{');
  while (!p.peek('}')) {
    const std::string name = p.str();
    p.expect(':');
    if (name == "__metadata__") {
      p.skip_value();
    } else {
      StoredTensor t;
      std::vector<int64_t> offsets;
      p.expect('{');
      while (!p.peek('}')) {
        const std::string field = p.str();
        p.expect(':');
        if (field == "dtype") t.dtype = p.str();
        else if (field == "shape") t.shape = p.int_array();
        else if (field == "data_offsets") offsets = p.int_array();
        else p.skip_value();
        if (p.peek(',')) ++p.i;
      }
      p.expect('}');
      const size_t width = dtype_size(t.dtype);
      if (offsets.size() != 2 || width == 0 || offsets[1] < offsets[0] ||
          static_cast<uint64_t>(offsets[1] - offsets[0]) != t.elements() * width)
        fail(path, "bad entry for " + name);
      t.bytes.resize(offsets[1] - offsets[0]);
      in.seekg(static_cast<std::streamoff>(data_start + offsets[0]));
      in.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
      if (!in) fail(path, "truncated data for " + name);
      out.emplace(name, std::move(t));
    }
    if (p.peek(',')) ++p.i;
  }
  return out;
}

void write_safetensors(const std::string& path, const std::map<std::string, StoredTensor>& tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header += ",\"" + name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
  }
  header += "}";
  // Pad with spaces so the data section starts 8-byte aligned, as the reference writer does.
  while ((8 + header.size()) % 8) header += ' ';
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(path, "cannot create");
    const uint64_t len = header.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto& [name, t] : tensors)
      out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    if (!out) fail(path, "write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(path, "cannot rename the written file into place");
}

}  // namespace svc::train
