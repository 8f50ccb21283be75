// Counter-based randomness for dropout: a keep/drop decision is a pure function
// of (seed, stream, index), so masks need no storage, backward recomputes them,
// and the outcome is the same whichever thread evaluates it.
#pragma once

#include <cstdint>

namespace svc::train {

inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct DropoutStream {
  uint64_t key = 0;        // seed, step, layer and site mixed together
  uint32_t threshold = 0;  // drop when the 32 random bits fall below it
  bool active = false;

  bool keep(uint64_t index) const { return static_cast<uint32_t>(mix64(key ^ mix64(index)) >> 32) >= threshold; }
};

// Dropout sites inside a layer; the embeddings' output uses layer = -1.
enum class DropSite : uint32_t { kEmbeddings = 1, kAttentionProbs = 2, kAttentionOutput = 3, kFfnOutput = 4 };

inline DropoutStream dropout_stream(uint64_t seed, uint64_t step, int layer, DropSite site, double p) {
  DropoutStream s;
  s.active = p > 0;
  s.threshold = static_cast<uint32_t>(p * 4294967296.0 > 4294967295.0 ? 4294967295.0 : p * 4294967296.0);
  s.key = mix64(mix64(mix64(seed) ^ step) ^ (static_cast<uint64_t>(layer + 1) << 8 | static_cast<uint32_t>(site)));
  return s;
}

}  // namespace svc::train
