// The engine's own fork-join pool. A pool of `threads` runs work on threads-1
// helper threads plus the calling thread, so an Encoder built with threads = T
// never keeps more than T cores busy. Helpers spin briefly between jobs (the
// GEMMs of one forward pass come back to back) and then sleep on a condition
// variable, so an idle encoder costs no CPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace svc {

class ThreadPool {
 public:
  // fn(task index, thread index in [0, size())).
  using Task = std::function<void(int64_t, int)>;

  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn for every task in [0, tasks), returns when all are done. Tasks are
  // handed out dynamically, so uneven tasks balance. Not reentrant: one run at a
  // time per pool (an Encoder serializes its calls). Exceptions from fn are not
  // allowed (kernels do not throw).
  void run(int64_t tasks, const Task& fn);

 private:
  void worker_loop(int index);
  void work(int thread_index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> next_{0};
  // Helpers that joined the current job and have not left it. A helper joins only
  // while the job is open (under mutex_); the caller closes it once every task is
  // claimed, so it never waits for a helper the OS has not scheduled yet: on a busy
  // machine the caller simply does the work itself.
  std::atomic<int> active_{0};
  bool open_ = false;
  int64_t tasks_ = 0;
  const Task* fn_ = nullptr;
  bool stop_ = false;
};

}  // namespace svc
