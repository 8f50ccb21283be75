// A byte trie over vocabulary tokens, built once and then read-only. WordPiece
// needs "the longest vocabulary token that starts here": one walk down the
// trie answers it, where hashing would try every shorter prefix in turn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace svc::tok {

class Trie {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFF;

  void build(const std::vector<std::pair<std::string_view, int32_t>>& entries);

  // The id and byte length of the longest key that is a prefix of [p, p + n),
  // or {-1, 0}.
  std::pair<int32_t, size_t> longest_prefix(const unsigned char* p, size_t n) const {
    if (units_.empty()) return {-1, 0};
    int32_t best_id = -1;
    size_t best_len = 0;
    uint32_t node = 0;
    for (size_t i = 0; i < n; ++i) {
      node = child(node, p[i]);
      if (node == kNone) break;
      const int32_t id = ids_[node];
      if (id >= 0) {
        best_id = id;
        best_len = i + 1;
      }
    }
    return {best_id, best_len};
  }

  // Calls f(id, byte length) for every key that is a prefix of [p, p + n), shortest first.
  template <typename F>
  void for_each_prefix(const unsigned char* p, size_t n, F&& f) const {
    if (units_.empty()) return;
    uint32_t node = 0;
    for (size_t i = 0; i < n; ++i) {
      node = child(node, p[i]);
      if (node == kNone) return;
      if (ids_[node] >= 0) f(ids_[node], i + 1);
    }
  }

 private:
  static constexpr int32_t kFree = -1;

  // A double-array trie: the child of `node` by byte c sits at base + c and
  // is real when its check names `node`. One step reads one 8-byte unit, so
  // a walk costs at most one cache miss per byte; token ids sit in a parallel
  // array, off the walk's dependency chain.
  struct Unit {
    int32_t base;
    int32_t check;  // the parent's index, or kFree
  };

  uint32_t child(uint32_t node, unsigned char byte) const {
    const uint32_t t = static_cast<uint32_t>(units_[node].base) + byte;
    // units_ has 256 spare units past any base, so t is always in range.
    return units_[t].check == static_cast<int32_t>(node) ? t : kNone;
  }

  std::vector<Unit> units_;
  std::vector<int32_t> ids_;  // per unit: the token ending there, or -1
};

}  // namespace svc::tok
