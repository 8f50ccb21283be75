// The training core and the bf16 products (kernels/gemm_bf16.h) run on the engine's thread pool. parallel_for cuts [0,
// n) into contiguous chunks (a few per thread, so uneven work balances); every caller writes disjoint outputs per
// index, so results never depend on which thread ran which chunk.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "thread_pool.h"

namespace svc::train {

using Workers = svc::ThreadPool;

inline void parallel_for(Workers* workers, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (!workers || workers->size() == 1 || n <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  const int64_t chunks = std::min<int64_t>(n, 4 * workers->size());
  workers->run(chunks, [&](int64_t c, int) {
    const int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    if (begin < end) fn(begin, end);
  });
}

// parallel_for over [0, n) in whole blocks of `grain` (the last may be short):
// chunk edges then fall on the same elements whatever the thread count, so
// vectorized loops split their body and remainder identically and results stay
// bitwise the same across thread counts.
inline void parallel_for_grain(Workers* workers, int64_t n, int64_t grain,
                               const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t units = (n + grain - 1) / grain;
  parallel_for(workers, units, [&](int64_t u0, int64_t u1) { fn(u0 * grain, std::min(n, u1 * grain)); });
}

}  // namespace svc::train
