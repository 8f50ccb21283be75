// Text as a normalizer step leaves it: UTF-8 bytes and, per byte, the UTF-16
// range [begin, end) of the source characters it came from, so tokens of the
// normalized text map back to the caller's string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace svc::tok {

struct NormText {
  std::string bytes;
  std::vector<uint32_t> begin;
  std::vector<uint32_t> end;

  void clear() {
    bytes.clear();
    begin.clear();
    end.clear();
  }
  size_t size() const { return bytes.size(); }
  // Appends `n` bytes that all come from source units [b, e).
  void append(const char* p, size_t n, uint32_t b, uint32_t e) {
    bytes.append(p, n);
    begin.insert(begin.end(), n, b);
    end.insert(end.end(), n, e);
  }
  // Appends bytes [from, to) of `other`, keeping their sources.
  void append_from(const NormText& other, size_t from, size_t to) {
    bytes.append(other.bytes, from, to - from);
    begin.insert(begin.end(), other.begin.begin() + from, other.begin.begin() + to);
    end.insert(end.end(), other.end.begin() + from, other.end.begin() + to);
  }
};

// Byte length of the UTF-8 sequence a (valid) lead byte starts.
inline size_t utf8_length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

// Decodes one code point of valid UTF-8.
inline char32_t utf8_decode(const unsigned char* p, size_t len) {
  switch (len) {
    case 1:
      return p[0];
    case 2:
      return ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    case 3:
      return ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    default:
      return ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
  }
}

}  // namespace svc::tok
