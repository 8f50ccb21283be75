#include "trie.h"

#include <algorithm>
#include <map>
#include <memory>

namespace svc::tok {

namespace {

// The trie as it is built: simple and slow, packed into the double array once.
struct BuildNode {
  int32_t id = -1;
  std::map<unsigned char, std::unique_ptr<BuildNode>> children;
};

}  // namespace

void Trie::build(const std::vector<std::pair<std::string_view, int32_t>>& entries) {
  BuildNode root;
  for (const auto& [key, id] : entries) {
    if (key.empty()) continue;
    BuildNode* node = &root;
    for (const char c : key) {
      auto& slot = node->children[static_cast<unsigned char>(c)];
      if (!slot) slot = std::make_unique<BuildNode>();
      node = slot.get();
    }
    node->id = id;  // a repeated key keeps its last id
  }

  ids_.clear();
  units_.assign(1 + 256, Unit{0, kFree});
  units_[0].check = 0;  // the root is never anyone's child slot
  // Free units form a doubly linked list in index order, so finding a base
  // only visits free slots; position 0 is the list's head sentinel.
  std::vector<uint32_t> next(units_.size()), prev(units_.size());
  auto link_new = [&](size_t from, size_t to) {  // appends free units [from, to) to the list
    next.resize(to + 1);
    prev.resize(to + 1);
    const uint32_t tail = prev[0];
    for (size_t i = from; i < to; ++i) {
      prev[i] = static_cast<uint32_t>(i == from ? tail : i - 1);
      next[i] = static_cast<uint32_t>(i + 1);
    }
    next[tail] = static_cast<uint32_t>(from);
    next[to - 1] = 0;
    prev[0] = static_cast<uint32_t>(to - 1);
  };
  prev[0] = 0;
  next[0] = 0;
  link_new(1, units_.size());
  auto grow = [&](size_t size) {
    if (units_.size() >= size) return;
    const size_t old = units_.size();
    units_.resize(std::max(size, old * 2), Unit{0, kFree});
    link_new(old, units_.size());
  };
  auto take = [&](uint32_t i) {
    next[prev[i]] = next[i];
    prev[next[i]] = prev[i];
  };

  std::vector<std::pair<const BuildNode*, uint32_t>> queue{{&root, 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const auto [b, index] = queue[q];
    if (ids_.size() <= index) ids_.resize(units_.size(), -1);
    ids_[index] = b->id;
    if (b->children.empty()) continue;
    const unsigned char lowest = b->children.begin()->first;
    // Try each free slot as the home of the lowest label.
    size_t base = 0;
    for (uint32_t f = next[0];; f = next[f]) {
      if (f == 0) {  // no free slot fits: grow and go on from the new units
        const size_t old = units_.size();
        grow(old + 512);
        f = static_cast<uint32_t>(old);
      }
      if (f <= lowest) continue;
      base = f - lowest;
      grow(base + 256 + 1);
      bool fits = true;
      for (const auto& entry : b->children) {
        if (units_[base + entry.first].check != kFree) {
          fits = false;
          break;
        }
      }
      if (fits) break;
    }
    units_[index].base = static_cast<int32_t>(base);
    for (const auto& entry : b->children) {
      const auto slot = static_cast<uint32_t>(base + entry.first);
      units_[slot].check = static_cast<int32_t>(index);
      take(slot);
      queue.emplace_back(entry.second.get(), slot);
    }
  }
  // Trim to the last used unit, keeping 256 spare so child() needs no bounds check.
  size_t used = units_.size();
  while (used > 1 && units_[used - 1].check == kFree) --used;
  units_.resize(used + 256, Unit{0, kFree});
  ids_.resize(units_.size(), -1);
}

}  // namespace svc::tok
