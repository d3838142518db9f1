#pragma once
/// The comm planner as the runtime's `transfer_planner`: a tensor that several devices consume (or one
/// whose route runs through another device) becomes a one-tensor multicast demand — the tensor cut into
/// chunks, every chunk from the producer to every consumer device — planned by `plan()` and turned into
/// a `transfer_plan` the simulator and the actor runtime execute. Plans are cached by (source,
/// destinations, bytes) on this planner's cluster; a plan no faster than direct copies (by its own
/// α-β replay against the direct copies' link load) is not used.

#include <doppler/comm/planner.hpp>
#include <doppler/runtime/transfer_plan.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace doppler::comm {

struct multicast_options {
  std::string method = "greedy";        ///< plan() method for a request not in the cache
  double chunk_bytes = 1 << 20;         ///< target chunk size: a tensor is cut into bytes/chunk_bytes pieces
  std::uint32_t max_chunks = 8;         ///< ... at most this many
  double time_limit = 2;                ///< seconds per solve (solver methods)
  bool keep_slower = false;             ///< use a plan even when direct copies would be faster (tests)

  multicast_options& with_method(std::string m) { method = std::move(m); return *this; }
  multicast_options& with_chunk_bytes(double b) { chunk_bytes = b; return *this; }
  multicast_options& with_max_chunks(std::uint32_t k) { max_chunks = k; return *this; }
  multicast_options& with_time_limit(double s) { time_limit = s; return *this; }
  multicast_options& with_keep_slower(bool on = true) { keep_slower = on; return *this; }
};

/// The demand of moving one tensor of `bytes` from `src` to `dsts` in `chunks` pieces.
demand tensor_demand(const cluster& c, device_index src, std::span<const device_index> dsts, double bytes,
                     std::uint32_t chunks);

/// A schedule of `tensor_demand(...)` as a transfer plan: sends become hops on the cluster's links,
/// each after the delivery that brought its chunk to the sender; repeated deliveries and chunks that
/// stop at a switch are dropped. Throws doppler::error when a send has no link or no chunk to send.
transfer_plan to_transfer_plan(const schedule& s, const demand& d, const cluster& c);

/// Seconds the direct copies of `bytes` to every destination take without other traffic: per link,
/// the bytes of every route crossing it over its bandwidth (the busiest link), plus the longest
/// route latency.
double direct_seconds(const cluster& c, device_index src, std::span<const device_index> dsts, double bytes);

class multicast_planner final : public transfer_planner {
 public:
  explicit multicast_planner(std::shared_ptr<const cluster> c, multicast_options opt = {});

  /// The cached plan, or a new one (nullptr: copy directly — the planner failed, or its plan is
  /// not faster than direct copies). Thread-safe; a failure is logged once per request.
  std::shared_ptr<const transfer_plan> plan(device_index src, std::span<const device_index> dsts,
                                            double bytes) override;
  /// Plans without looking at the cache, with `method`; throws doppler::error when planning fails.
  std::shared_ptr<const transfer_plan> solve(device_index src, std::span<const device_index> dsts, double bytes,
                                             const std::string& method) const;
  /// Puts a plan in the cache (e.g. a refined one), replacing what was there.
  void store(device_index src, std::span<const device_index> dsts, double bytes,
             std::shared_ptr<const transfer_plan> p);
  /// What the cache holds for a request (nothing yet: {false, nullptr}).
  std::pair<bool, std::shared_ptr<const transfer_plan>> cached(device_index src, std::span<const device_index> dsts,
                                                               double bytes) const;

  const cluster& topology() const noexcept { return *c_; }
  const multicast_options& options() const noexcept { return opt_; }
  std::uint64_t hits() const noexcept { return hits_; }
  std::uint64_t misses() const noexcept { return misses_; }
  std::uint64_t failures() const noexcept { return failures_; }

 private:
  using key = std::tuple<device_index, std::vector<device_index>, double>;
  std::shared_ptr<const cluster> c_;
  multicast_options opt_;
  mutable std::mutex mutex_;
  std::map<key, std::shared_ptr<const transfer_plan>> cache_;
  std::atomic<std::uint64_t> hits_{0}, misses_{0}, failures_{0};
};

}  // namespace doppler::comm
