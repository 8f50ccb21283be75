#include "train/workers.h"

namespace svc::train {

namespace {
void chunk(int64_t n, int parts, int index, int64_t* begin, int64_t* end) {
  *begin = n * index / parts;
  *end = n * (index + 1) / parts;
}
}  // namespace

Workers::Workers(int threads) {
  for (int i = 1; i < threads; ++i) threads_.emplace_back([this, i] { loop(i); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void Workers::run(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    pending_ = static_cast<int>(threads_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  int64_t begin, end;
  chunk(n, size(), 0, &begin, &end);
  if (begin < end) fn(begin, end);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void Workers::loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
    }
    int64_t begin, end;
    chunk(n, size(), index, &begin, &end);
    if (begin < end) (*job)(begin, end);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace svc::train
