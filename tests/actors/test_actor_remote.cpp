// Devices in another actor system, reached over TCP on 127.0.0.1 through CAF's middleman: the plan
// travels as text, tensors as serialized messages, and the outputs still equal the reference run.
#include <doppler/actors/backend.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include <atomic>

using namespace doppler;

namespace {

/// The CPU backend, counting the kernels it ran (to see that the worker's devices did the work).
class counting_backend final : public actors::backend {
 public:
  std::string_view name() const noexcept override { return "counting"; }
  tensor execute(const graph& g, op_index i, std::span<const tensor* const> in, std::uint64_t seed) override {
    ++calls;
    return execute_op(g, i, in, seed);
  }
  std::atomic<int> calls{0};
};

}  // namespace

TEST_CASE("two of four devices served by a worker: wc and bsp outputs equal the reference") {
  cluster c = make_preset("cpu:4");
  auto served = std::make_shared<counting_backend>();
  worker w(c, {2, 3}, engine_options{}.with_custom_backend(served));
  engine e(c, engine_options{}.with_network());
  e.attach(2, "127.0.0.1", w.port(2));
  e.attach(3, "127.0.0.1", w.port(3));
  workload_params wp;
  wp.dim = 32;
  wp.heads = 4;
  wp.ffn = 48;
  wp.seq = 8;
  wp.shards = 4;
  graph g = make_workload("llama-layer", wp);
  placement p = make_placer("round-robin")->place(g, c, cost_model{}, placer_options{});
  auto ref = execute_reference(g, 6);
  for (exec_mode mode : {exec_mode::wc, exec_mode::bsp}) {
    auto r = e.run(g, p, run_options{}.with_mode(mode).with_seed(6).keep_all());
    std::size_t on_remote = 0;
    for (op_index i = 0; i < g.size(); ++i) {
      CAPTURE(g[i].id);
      CHECK(max_abs_diff(r.outputs[i], ref[i]) <= 1e-5);
      on_remote += p.device[i] >= 2 ? 1 : 0;
    }
    CHECK(on_remote > 0);
    CHECK(served->calls.exchange(0) == static_cast<int>(on_remote));
    CHECK(r.transfers.back() > 0);
  }
}

TEST_CASE("attach: no network or an unreachable worker is a clear error") {
  cluster c = make_preset("cpu:2");
  engine local(c);
  CHECK_THROWS_AS(local.attach(1, "127.0.0.1", 1), doppler::error);
  engine e(c, engine_options{}.with_network());
  CHECK_THROWS_AS(e.attach(1, "127.0.0.1", 1), run_failure);
  worker w(c, {1});
  CHECK_THROWS_AS(w.port(0), doppler::error);
}
