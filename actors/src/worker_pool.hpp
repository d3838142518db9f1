#pragma once
// A fixed set of threads draining one job queue ordered by priority (lower rank first, then FIFO): a
// device's streams, or its copy engine. A worker that finishes a job takes the next one itself, so
// back-to-back kernels do not wait for the device actor to be scheduled. Jobs report back by actor
// message; the destructor finishes the running jobs, drops queued ones and joins.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <tuple>
#include <vector>

namespace doppler::actors {

class worker_pool {
 public:
  explicit worker_pool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;
  ~worker_pool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
      jobs_ = {};
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }

  /// Queues a job; among queued jobs the lowest `rank` runs first (FIFO among equal ranks).
  void post(std::uint32_t rank, std::function<void()> job) {
    {
      std::lock_guard lock(mutex_);
      jobs_.push(entry{rank, seq_++, std::move(job)});
    }
    ready_.notify_one();
  }
  /// Drops every queued job (running ones finish).
  void drop_queued() {
    std::lock_guard lock(mutex_);
    jobs_ = {};
  }

 private:
  struct entry {
    std::uint32_t rank;
    std::uint64_t seq;
    std::function<void()> job;
    bool operator>(const entry& o) const { return std::tie(rank, seq) > std::tie(o.rank, o.seq); }
  };

  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        job = std::move(const_cast<entry&>(jobs_.top()).job);
        jobs_.pop();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::priority_queue<entry, std::vector<entry>, std::greater<>> jobs_;
  std::uint64_t seq_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace doppler::actors
