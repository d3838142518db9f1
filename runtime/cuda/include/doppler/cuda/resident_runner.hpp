#pragma once
/// Runs a placed graph with tensors resident on their devices, driven by completions: the scheduling
/// core of the GPU benchmark, header-only and templated on the device so the CPU tests check it
/// with a fake device. Work-conserving (`wc`): an op launches the moment all its inputs are on its
/// device; a producer's output is copied to each other device that consumes it as soon as the
/// producer completes. Bulk-synchronous (`bsp`): every op of a level, wait for all, the copies
/// they need, wait, next level. No CUDA header needed.
///
/// `Device` provides: `using tensor_type`; `int streams() const`;
/// `tensor_type launch(const graph&, op_index, std::span<const tensor_type* const>, std::uint64_t
/// seed, int stream, completion_fn)`; `tensor_type copy_from(const tensor_type&, int stream,
/// completion_fn, op_index)` — both return at once and call the callback (on any thread) when done.

#include <doppler/cuda/cuda_backend.hpp>
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/placement.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace doppler::cuda {

template <class Device>
class resident_runner {
 public:
  using tensor_type = typename Device::tensor_type;

  /// Op i runs on devs[p.device[i] mod devs.size()]. All references must outlive the runner.
  resident_runner(const graph& g, const placement& p, std::vector<Device*> devs, std::uint64_t seed)
      : g_(g), p_(p), devs_(std::move(devs)), seed_(seed), on_(g.size() * devs_.size()), need_(g.size()),
        next_stream_(devs_.size(), 0) {
    for (op_index i = 0; i < g.size(); ++i) need_[i] = static_cast<int>(g.preds(i).size());
  }
  /// Waits for work still in flight (after a failed run), since its callbacks point here.
  ~resident_runner() {
    std::unique_lock lock(mu_);
    while (outstanding_ > 0) {
      cv_.wait(lock, [&] { return !events_.empty(); });
      events_.pop_front();
      --outstanding_;
    }
  }
  resident_runner(const resident_runner&) = delete;
  resident_runner& operator=(const resident_runner&) = delete;

  /// Work-conserving run; returns wall seconds from the first launch to the last completion.
  double wc() {
    const auto t0 = std::chrono::steady_clock::now();
    for (op_index i = 0; i < g_.size(); ++i)
      if (need_[i] == 0) launch(i);
    for (std::size_t left = g_.size(); left > 0;) {
      const event e = pop();
      if (e.device < 0) {
        --left;
        for (int d : consumer_devices(e.op)) d == dev(e.op) ? arrived(e.op, d) : copy(e.op, d);
      } else {
        arrived(e.op, e.device);
      }
    }
    return seconds_since(t0);
  }

  /// Bulk-synchronous run, level by level; returns wall seconds.
  double bsp() {
    const std::vector<std::uint32_t> lv = levels(g_);
    const std::uint32_t last = lv.empty() ? 0 : *std::max_element(lv.begin(), lv.end());
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint32_t l = 0; !lv.empty() && l <= last; ++l) {
      int waiting = 0;
      for (op_index i = 0; i < g_.size(); ++i)
        if (lv[i] == l) launch(i), ++waiting;
      for (; waiting > 0; --waiting) pop();
      for (op_index i = 0; i < g_.size(); ++i)
        if (lv[i] == l)
          for (int d : consumer_devices(i))
            if (d != dev(i)) copy(i, d), ++waiting;
      for (; waiting > 0; --waiting) pop();
    }
    return seconds_since(t0);
  }

  /// Device index op i runs on.
  int dev(op_index i) const { return static_cast<int>(p_.device[i] % devs_.size()); }
  /// Op i's output on its own device (valid after a run).
  const tensor_type& output(op_index i) const { return at(i, dev(i)); }
  /// Copies between devices the run made.
  std::size_t copies() const noexcept { return copies_; }

 private:
  struct event {
    op_index op = 0;
    int device = -1;  // -1: op finished; else a copy of op's output reached this device
    std::string error;
  };

  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  tensor_type& at(op_index i, int d) { return on_[i * devs_.size() + static_cast<std::size_t>(d)]; }
  const tensor_type& at(op_index i, int d) const { return on_[i * devs_.size() + static_cast<std::size_t>(d)]; }
  std::vector<int> consumer_devices(op_index i) const {
    std::vector<int> ds;
    for (op_index s : g_.succs(i))
      if (std::find(ds.begin(), ds.end(), dev(s)) == ds.end()) ds.push_back(dev(s));
    return ds;
  }
  int stream_for(int d) {
    unsigned& n = next_stream_[static_cast<std::size_t>(d)];
    return static_cast<int>(n++ % static_cast<unsigned>(devs_[static_cast<std::size_t>(d)]->streams()));
  }
  void push(event e) {
    // Notify under the lock: once the driver sees the last event it may destroy this runner, so
    // the notifying thread must be done with cv_ before the driver can take the lock.
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
    cv_.notify_one();
  }
  event pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !events_.empty(); });
    event e = std::move(events_.front());
    events_.pop_front();
    --outstanding_;
    if (!e.error.empty())
      throw error(errc::internal, "op `" + g_[e.op].id + "`" + (e.device < 0 ? "" : " (copy)") + ": " + e.error);
    return e;
  }
  void launch(op_index i) {
    const int d = dev(i);
    std::vector<const tensor_type*> args;
    for (op_index q : g_[i].inputs) args.push_back(&at(q, d));
    at(i, d) = devs_[static_cast<std::size_t>(d)]->launch(
        g_, i, args, seed_, stream_for(d), [this, i](const completion& c) { push({i, -1, c.error}); });
    ++outstanding_;  // after the call: a launch that throws never completes (only this thread pops)
  }
  void copy(op_index i, int d) {
    ++copies_;
    at(i, d) = devs_[static_cast<std::size_t>(d)]->copy_from(
        output(i), stream_for(d), [this, i, d](const completion& c) { push({i, d, c.error}); }, i);
    ++outstanding_;
  }
  /// Op i's output is now on device d: its consumers there may become ready.
  void arrived(op_index i, int d) {
    for (op_index s : g_.succs(i))
      if (dev(s) == d && --need_[s] == 0) launch(s);
  }

  const graph& g_;
  const placement& p_;
  std::vector<Device*> devs_;
  std::uint64_t seed_;
  std::vector<tensor_type> on_;  // on_[op · devices + device]
  std::vector<int> need_;
  std::vector<unsigned> next_stream_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<event> events_;
  std::size_t copies_ = 0;
  std::size_t outstanding_ = 0;  // launches and copies whose completion was not popped yet
};

}  // namespace doppler::cuda
