#include "precompiled.h"

#include <cstring>
#include <stdexcept>

#include "grapheme_tables.h"

namespace svc::tok {

namespace {

// darts-clone unit fields.
inline bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1) != 0; }
inline uint32_t value(uint32_t unit) { return unit & 0x7FFFFFFFu; }
inline uint32_t label(uint32_t unit) { return unit & (0x80000000u | 0xFFu); }
inline uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

// A cluster this long or longer is never looked up whole (the reference's rule).
constexpr size_t kWholeClusterLimit = 6;

}  // namespace

std::string decode_base64(std::string_view text) {
  auto digit = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    if (c == '=') break;
    const int d = digit(c);
    if (d < 0) throw std::runtime_error("precompiled_charsmap is not base64");
    bits = (bits << 6) | static_cast<uint32_t>(d);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xFF));
    }
  }
  return out;
}

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob) {
  if (blob.size() < 4) throw std::runtime_error("precompiled_charsmap is too short");
  uint32_t trie_size;
  std::memcpy(&trie_size, blob.data(), 4);  // little-endian, as every supported target is
  if (trie_size % 4 != 0 || trie_size > blob.size() - 4 || trie_size == 0) {
    throw std::runtime_error("precompiled_charsmap has a malformed trie size");
  }
  units_.resize(trie_size / 4);
  std::memcpy(units_.data(), blob.data() + 4, trie_size);
  normalized_.assign(blob.substr(4 + trie_size));
  for (int c = 0; c < 128; ++c) {
    const auto byte = static_cast<unsigned char>(c);
    std::string_view mapped;
    ascii_[c] = c != 0 && transform(&byte, 1, &mapped) ? static_cast<int32_t>(mapped.data() - normalized_.data()) : -1;
  }
}

std::string_view PrecompiledCharsmap::normalized_at(uint32_t at) const {
  if (at >= normalized_.size()) return {};
  const char* start = normalized_.data() + at;
  const void* nul = std::memchr(start, 0, normalized_.size() - at);
  const size_t len = nul ? static_cast<size_t>(static_cast<const char*>(nul) - start) : normalized_.size() - at;
  return std::string_view(start, len);
}

bool PrecompiledCharsmap::transform(const unsigned char* p, size_t n, std::string_view* out) const {
  size_t node = 0;
  uint32_t unit = units_[0];
  node ^= offset(unit);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = p[i];
    if (c == 0) return false;
    node ^= c;
    if (node >= units_.size()) return false;
    unit = units_[node];
    if (label(unit) != c) return false;
    node ^= offset(unit);
    if (has_leaf(unit)) {
      if (node >= units_.size()) return false;
      *out = normalized_at(value(units_[node]));
      return true;
    }
  }
  return false;
}

void PrecompiledCharsmap::normalize(const NormText& in, NormText& out) const {
  const auto* p = reinterpret_cast<const unsigned char*>(in.bytes.data());
  const size_t n = in.size();
  size_t i = 0;
  std::string_view mapped;
  while (i < n) {
    const unsigned char lead = p[i];
    // A run of ASCII that maps to itself, each byte a cluster of its own (the run's last byte is left
    // out when a non-ASCII character follows: a mark may join it), is copied in one go.
    size_t run = i;
    while (run < n && p[run] < 0x80 && p[run] != '\r' && p[run] != 0 && ascii_[p[run]] < 0) ++run;
    if (run < n && p[run] >= 0x80 && run > i) --run;
    if (run > i) {
      out.append_from(in, i, run);
      i = run;
      continue;
    }
    // ASCII followed by ASCII (or the end) is a cluster of one, CR LF aside.
    if (lead < 0x80 && lead != '\r' && (i + 1 == n || p[i + 1] < 0x80)) {
      if (ascii_[lead] >= 0) {
        mapped = normalized_at(static_cast<uint32_t>(ascii_[lead]));
        out.append(mapped.data(), mapped.size(), in.begin[i], in.end[i]);
      } else {
        out.append_from(in, i, i + 1);
      }
      ++i;
      continue;
    }
    // The cluster [i, j).
    size_t len = utf8_length(lead);
    char32_t prev = utf8_decode(p + i, len);
    GraphemeKind prev_kind = grapheme_kind(prev);
    size_t j = i + len;
    while (j < n) {
      const size_t l = utf8_length(p[j]);
      const char32_t cp = utf8_decode(p + j, l);
      const GraphemeKind kind = grapheme_kind(cp);
      if (grapheme_break(prev, prev_kind, cp, kind)) break;
      prev = cp;
      prev_kind = kind;
      j += l;
    }
    if (j - i < kWholeClusterLimit && transform(p + i, j - i, &mapped)) {
      // As the reference aligns a replacement: its k-th character comes from the cluster's k-th
      // character, the ones past the cluster's last from that last one.
      size_t from = i;
      for (size_t k = 0; k < mapped.size();) {
        const size_t out_len = utf8_length(static_cast<unsigned char>(mapped[k]));
        const size_t from_len = utf8_length(p[from]);
        out.append(mapped.data() + k, out_len, in.begin[from], in.end[from + from_len - 1]);
        if (from + from_len < j) from += from_len;
        k += out_len;
      }
      i = j;
      continue;
    }
    while (i < j) {
      const size_t l = utf8_length(p[i]);
      if (transform(p + i, l, &mapped)) {
        out.append(mapped.data(), mapped.size(), in.begin[i], in.end[i + l - 1]);
      } else {
        out.append_from(in, i, i + l);
      }
      i += l;
    }
  }
}

}  // namespace svc::tok
