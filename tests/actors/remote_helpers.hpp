// What the tests of devices in other processes share (test_actor_remote.cpp, test_actor_sharing.cpp):
// a small Llama block, round-robin placement, the check against the reference run, and a CPU backend
// whose kernels sleep first (a run that stays in flight).
#pragma once

#include <doppler/actors/backend.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace remote_helpers {

using namespace doppler;
using namespace std::chrono_literals;

/// A Llama block small enough to run in a test (dim 32, 4 heads, 4 shards).
inline graph small_llama() {
  workload_params wp;
  wp.dim = 32;
  wp.heads = 4;
  wp.ffn = 48;
  wp.seq = 8;
  wp.shards = 4;
  return make_workload("llama-block", wp);
}

/// Every op on the next device in turn.
inline placement round_robin(const graph& g, const cluster& c) {
  return make_placer("round-robin")->place(g, c, cost_model{}, placer_options{});
}

/// Every output equals execute_reference with the same seed (1e-5).
inline void check_equals_reference(const graph& g, const run_result& r, std::uint64_t seed) {
  auto ref = execute_reference(g, seed);
  for (op_index i = 0; i < g.size(); ++i) {
    CAPTURE(g[i].id);
    CHECK(max_abs_diff(r.outputs[i], ref[i]) <= 1e-5);
  }
}

/// The CPU backend, each kernel first sleeping `delay` (a run that stays in flight).
class slow_backend final : public actors::backend {
 public:
  explicit slow_backend(std::chrono::milliseconds delay) : delay_ms(static_cast<int>(delay.count())) {}
  std::string_view name() const noexcept override { return "slow"; }
  tensor execute(const graph& g, op_index i, std::span<const tensor* const> in, std::uint64_t seed) override {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms.load()));
    return execute_op(g, i, in, seed);
  }
  std::atomic<int> calls{0};
  std::atomic<int> delay_ms;  ///< may change between runs
};

/// Waits (bounded, generous) until `b` ran a kernel: the run is in flight on it.
inline void wait_for_kernel(const slow_backend& b) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (b.calls == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  REQUIRE(b.calls > 0);
}

}  // namespace remote_helpers
