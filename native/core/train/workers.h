// A fixed set of threads for the training core. Work is split into one
// contiguous chunk per thread and chunk c always runs on thread c, so results
// never depend on scheduling. Stands in for the engine's thread_pool.h until the
// trainer is moved onto it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace svc::train {

class Workers {
 public:
  explicit Workers(int threads);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  int size() const { return static_cast<int>(threads_.size()) + 1; }

  // Calls fn(begin, end) on [0, n) cut into size() contiguous chunks, the
  // calling thread taking chunk 0; returns when all chunks are done.
  void run(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void loop(int index);

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Runs fn over [0, n) on `workers`, or inline when there are none.
inline void parallel_for(Workers* workers, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (!workers || workers->size() == 1 || n <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  workers->run(n, fn);
}

}  // namespace svc::train
