// The training core runs on the engine's thread pool. parallel_for cuts [0, n)
// into contiguous chunks (a few per thread, so uneven work balances); every
// caller writes disjoint outputs per index, so results never depend on which
// thread ran which chunk.
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

}  // namespace svc::train
