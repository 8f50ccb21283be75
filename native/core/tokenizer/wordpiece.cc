#include "wordpiece.h"

#include <cstring>
#include <stdexcept>

namespace svc::tok {

namespace {

inline uint64_t mix(uint64_t h) {
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 29;
  return h;
}

// Vocabulary keys are short (a few bytes): hash 8 bytes at a time, no per-byte loop.
inline uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0xff51afd7ed558ccdULL);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = mix(h ^ w);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = mix(h ^ w ^ 0x5555555555555555ULL);
  }
  return h;
}

inline bool is_continuation_byte(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

void VocabMap::build(const std::vector<std::pair<std::string_view, int32_t>>& entries) {
  size_t capacity = 16;
  // Load factor <= 1/2 keeps probe chains short.
  while (capacity < entries.size() * 2) capacity <<= 1;
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  arena_.clear();
  max_key_size_ = 0;
  size_t total = 0;
  for (const auto& entry : entries) total += entry.first.size();
  arena_.reserve(total);
  for (const auto& [key, id] : entries) {
    const uint64_t h = hash_bytes(key.data(), key.size());
    size_t i = h & mask_;
    bool replaced = false;
    while (slots_[i].id >= 0) {
      const Slot& s = slots_[i];
      if (s.hash == h && s.size == key.size() && std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0) {
        slots_[i].id = id;  // a repeated key keeps its last id, like a JSON object read into a map
        replaced = true;
        break;
      }
      i = (i + 1) & mask_;
    }
    if (replaced) continue;
    slots_[i] = Slot{h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), id};
    arena_.append(key.data(), key.size());
    if (key.size() > max_key_size_) max_key_size_ = key.size();
  }
}

int32_t VocabMap::find(const char* data, size_t size) const {
  if (slots_.empty()) return -1;
  const uint64_t h = hash_bytes(data, size);
  size_t i = h & mask_;
  for (;;) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash == h && s.size == size && std::memcmp(arena_.data() + s.offset, data, size) == 0) return s.id;
    i = (i + 1) & mask_;
  }
}

WordPiece::WordPiece(const std::vector<std::pair<std::string, int32_t>>& vocab, std::string unk_token,
                     std::string continuing_subword_prefix, size_t max_input_chars_per_word)
    : max_chars_(max_input_chars_per_word) {
  std::vector<std::pair<std::string_view, int32_t>> whole;
  std::vector<std::pair<std::string_view, int32_t>> continuation;
  whole.reserve(vocab.size());
  const std::string& prefix = continuing_subword_prefix;
  for (const auto& [token, id] : vocab) {
    whole.emplace_back(token, id);
    if (token.size() > prefix.size() && token.compare(0, prefix.size(), prefix) == 0) {
      continuation.emplace_back(std::string_view(token).substr(prefix.size()), id);
    }
  }
  whole_.build(whole);
  continuation_.build(continuation);
  unk_id_ = whole_.find(unk_token);
  if (unk_id_ < 0) throw std::runtime_error("the WordPiece unk_token '" + unk_token + "' is not in the vocabulary");
  // An empty prefix makes every token a continuation too.
  if (prefix.empty()) continuation_ = whole_;
}

void WordPiece::tokenize(const char* word, size_t size, size_t chars, std::vector<Piece>& out) const {
  if (size == 0) return;
  if (chars > max_chars_) {
    out.push_back(Piece{unk_id_, 0, static_cast<uint32_t>(size)});
    return;
  }
  const size_t first = out.size();
  size_t start = 0;
  while (start < size) {
    const VocabMap& map = start == 0 ? whole_ : continuation_;
    // Nothing longer than the longest key can match: start there, on a character boundary.
    size_t end = size - start > map.max_key_size() ? start + map.max_key_size() : size;
    while (end < size && is_continuation_byte(static_cast<unsigned char>(word[end]))) --end;
    int32_t id = -1;
    while (end > start) {
      id = map.find(word + start, end - start);
      if (id >= 0) break;
      do {
        --end;
      } while (end > start && is_continuation_byte(static_cast<unsigned char>(word[end])));
    }
    if (id < 0) {
      out.resize(first);
      out.push_back(Piece{unk_id_, 0, static_cast<uint32_t>(size)});
      return;
    }
    out.push_back(Piece{id, static_cast<uint32_t>(start), static_cast<uint32_t>(end)});
    start = end;
  }
}

}  // namespace svc::tok
