#include "thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define SVC_PAUSE() _mm_pause()
#else
#define SVC_PAUSE() std::this_thread::yield()
#endif

namespace svc {

namespace {
// About 20-50 microseconds of spinning: long enough to span the gap between two
// GEMMs of a forward pass, short enough not to burn a shared core when idle.
constexpr int kSpinIterations = 20000;
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::work(int thread_index) {
  const Task& fn = *fn_;
  for (;;) {
    int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= tasks_) break;
    fn(i, thread_index);
  }
}

void ThreadPool::run(int64_t tasks, const Task& fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (int64_t i = 0; i < tasks; ++i) fn(i, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    tasks_ = tasks;
    next_.store(0, std::memory_order_relaxed);
    open_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  work(0);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = false;  // late helpers skip this job
  }
  for (int spin = 0; active_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinIterations) {
      SVC_PAUSE();
      continue;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return active_.load(std::memory_order_acquire) == 0; });
  }
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
      SVC_PAUSE();
      gen = generation_.load(std::memory_order_acquire);
    }
    bool join = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (gen == seen) wake_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      if (open_) {
        active_.fetch_add(1, std::memory_order_relaxed);
        join = true;
      }
    }
    if (!join) continue;
    work(index);
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

}  // namespace svc
