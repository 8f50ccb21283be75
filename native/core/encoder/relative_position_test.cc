// MPNet's relative position buckets against upstream: the first distance of every bucket as torch
// computes MPNetEncoder.relative_position_bucket (torch 1.13, float32 logarithm) over key - query from
// -1100 to 1100, past any text the engine takes. The boundaries at 16, 32 and 64 are where a float
// logarithm could round to the other side; the bias layout is checked on a small table.
#include <cstdio>
#include <vector>

#include "encoder/relative_position.h"
#include "test_check.h"

namespace {

// (first key - query of the bucket, bucket), in increasing key - query; each bucket runs to the next.
constexpr int kUpstream[][2] = {{-1100, 15}, {-90, 14}, {-63, 13}, {-45, 12}, {-31, 11}, {-22, 10}, {-15, 9}, {-11, 8},
                                {-7, 7},     {-6, 6},   {-5, 5},   {-4, 4},   {-3, 3},   {-2, 2},   {-1, 1},  {0, 0},
                                {1, 17},     {2, 18},   {3, 19},   {4, 20},   {5, 21},   {6, 22},   {7, 23},  {8, 24},
                                {12, 25},    {16, 26},  {23, 27},  {32, 28},  {46, 29},  {64, 30},  {91, 31}};

}  // namespace

int main() {
  constexpr int kSteps = sizeof kUpstream / sizeof kUpstream[0];
  int wrong = 0;
  for (int s = 0; s < kSteps; ++s) {
    const int end = s + 1 < kSteps ? kUpstream[s + 1][0] : 1101;
    for (int relative = kUpstream[s][0]; relative < end; ++relative) {
      const int got = svc::mpnet_relative_bucket(relative);
      if (got != kUpstream[s][1] && wrong++ < 5)
        std::printf("key - query %d: bucket %d, upstream %d\n", relative, got, kUpstream[s][1]);
    }
  }
  svc::test::check(wrong == 0, "every bucket of key - query in [-1100, 1100] as upstream");

  // A table whose entry is 100 * bucket + head: the bias of head 1 for 5 tokens reads back each
  // distance's bucket, and the padding after the 2 len - 1 distances is zero.
  constexpr int kHeads = 3, kLen = 5;
  std::vector<float> table(32 * kHeads);
  for (int b = 0; b < 32; ++b)
    for (int h = 0; h < kHeads; ++h) table[b * kHeads + h] = static_cast<float>(100 * b + h);
  std::vector<float> bias(static_cast<std::size_t>(svc::position_bias_floats(kLen)), -1.0f);
  svc::mpnet_position_bias(table.data(), kHeads, 1, kLen, bias.data());
  bool laid_out = true;
  for (int i = 0; i < kLen; ++i)
    for (int j = 0; j < kLen; ++j)
      laid_out = laid_out && bias[i - j + kLen - 1] == static_cast<float>(100 * svc::mpnet_relative_bucket(j - i) + 1);
  for (std::size_t t = 2 * kLen - 1; t < bias.size(); ++t) laid_out = laid_out && bias[t] == 0.0f;
  svc::test::check(laid_out, "bias[i - j + len - 1] is head 1's entry of the bucket of j - i, zeros after");
  svc::test::check(bias[kLen - 1] == 1.0f && bias[kLen - 2] == 1701.0f && bias[kLen] == 101.0f,
                   "distance 0 is bucket 0, a key one after the query bucket 17, one before bucket 1");
  return svc::test::exit_code();
}
