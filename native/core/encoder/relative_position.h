// MPNet's relative position bias: every layer adds, to the attention score of query i and key j,
// a learned per-head value of the bucket of the distance j - i (MPNetEncoder.compute_position_bias
// upstream, T5's bidirectional bucketing). The table is shared by every layer and the bias depends on
// the distance alone, so the engine builds each head's bias once per forward, for its longest text,
// and every layer and every shorter text reads it from there.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace svc {

// Upstream calls relative_position_bucket with its defaults whatever config.json says: 32 buckets
// (16 per direction), distances up to 128 (8 exact, then logarithmic); a bigger table's rows past 32
// are never read.
constexpr int kMpnetBuckets = 32;
constexpr int kMpnetMaxDistance = 128;

// The bucket of relative_position = key - query, as MPNetEncoder.relative_position_bucket computes it
// (the logarithm in float32, as torch does on a float tensor).
inline int mpnet_relative_bucket(int relative_position) {
  const int half = kMpnetBuckets / 2, max_exact = half / 2;
  int n = -relative_position;
  int bucket = n < 0 ? half : 0;
  n = n < 0 ? -n : n;
  if (n < max_exact) return bucket + n;
  const float ratio = std::log(static_cast<float>(n) / static_cast<float>(max_exact)) /
                      static_cast<float>(std::log(static_cast<double>(kMpnetMaxDistance) / max_exact));
  const int large = max_exact + static_cast<int>(ratio * static_cast<float>(half - max_exact));
  return bucket + std::min(large, half - 1);
}

// Floats one head's bias takes for a text of len tokens: 2 len - 1 distances and a vector's worth of
// zeros, so a kernel reads the bias of 16 consecutive queries for one key in one load.
inline int64_t position_bias_floats(int len) { return 2 * static_cast<int64_t>(len) + 16; }

// The bias of one head for a text of len tokens, in the layout the attention kernels take:
// out[i - j + len - 1] is added to the score of query i and key j (a key's bias for consecutive
// queries is consecutive). A text of n <= len tokens uses out + (len - n): its distances are the
// middle 2 n - 1 entries. table: relative_attention_bias, [relative_attention_num_buckets x heads].
inline void mpnet_position_bias(const float* table, int heads, int head, int len, float* out) {
  for (int t = 0; t < 2 * len - 1; ++t) {
    const int relative = (len - 1) - t;  // key - query
    out[t] = table[static_cast<int64_t>(mpnet_relative_bucket(relative)) * heads + head];
  }
  std::fill(out + 2 * len - 1, out + position_bias_floats(len), 0.0f);
}

}  // namespace svc
