// Faults end a run cleanly: a kernel that throws, a device actor killed mid-run, a run past its
// timeout — each gives a run_failure naming the op and the device, within bounded time, with every
// buffer released and the engine usable for the next run.
#include <doppler/actors/backend.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

using namespace doppler;
using namespace std::chrono_literals;

namespace {

/// The CPU backend, except that op `victim` throws and every kernel first sleeps `delay`.
class faulty_backend final : public actors::backend {
 public:
  faulty_backend(std::string victim, std::chrono::milliseconds delay, std::chrono::milliseconds victim_delay = 0ms)
      : victim_(std::move(victim)), delay_(delay), victim_delay_(victim_delay) {}
  std::string_view name() const noexcept override { return "faulty"; }
  tensor execute(const graph& g, op_index i, std::span<const tensor* const> in, std::uint64_t seed) override {
    ++calls;
    std::this_thread::sleep_for(delay_);
    if (g[i].id == victim_) {
      if (victim_delay_ > 0ms) std::this_thread::sleep_for(victim_delay_);
      else throw std::runtime_error("injected kernel fault");
    }
    return execute_op(g, i, in, seed);
  }
  std::atomic<int> calls{0};

 private:
  std::string victim_;
  std::chrono::milliseconds delay_, victim_delay_;
};

graph chain_graph() {
  workload_params p;
  p.dim = 32;
  p.matrices = 12;
  return make_workload("chainmm", p);
}

placement round_robin(const graph& g, const cluster& c) {
  return make_placer("round-robin")->place(g, c, cost_model{}, placer_options{});
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("a kernel that throws ends the run naming the op and the device") {
  cluster c = make_preset("cpu:3");
  graph g = chain_graph();
  placement p = round_robin(g, c);
  // a middle op of the chain
  op_index victim = g.topo_order()[g.size() / 2];
  auto kernels = std::make_shared<faulty_backend>(g[victim].id, 0ms);
  engine e(c, engine_options{}.with_custom_backend(kernels));
  auto t0 = std::chrono::steady_clock::now();
  try {
    e.run(g, p);
    FAIL("the run should have failed");
  } catch (const run_failure& f) {
    std::string what = f.what();
    MESSAGE(what);
    CHECK(what.find("'" + g[victim].id + "'") != std::string::npos);
    CHECK(what.find(c[p.device[victim]].id) != std::string::npos);
    CHECK(what.find("injected kernel fault") != std::string::npos);
    CHECK_FALSE(f.timed_out());  // a fault, not the clock
    REQUIRE(f.op().has_value());
    CHECK(*f.op() == victim);
    CHECK(*f.device() == p.device[victim]);
  }
  CHECK(seconds_since(t0) < 5.0);
  CHECK(e.bytes_held() == 0);
  // the engine still runs a good graph
  workload_params wp;
  wp.dim = 32;
  graph ok = make_workload("ffnn", wp);
  auto r = e.run(ok, round_robin(ok, c), run_options{}.with_seed(5));
  CHECK(r.runs.size() == 1);
}

TEST_CASE("a device actor killed mid-run ends the run naming the device, and the next run works") {
  cluster c = make_preset("cpu:4");
  graph g = chain_graph();
  placement p = round_robin(g, c);
  auto kernels = std::make_shared<faulty_backend>("", 40ms);
  engine e(c, engine_options{}.with_custom_backend(kernels));
  std::thread killer([&] {
    while (kernels->calls < 3) std::this_thread::sleep_for(1ms);
    e.kill_device(1);
  });
  auto t0 = std::chrono::steady_clock::now();
  std::string what;
  std::optional<device_index> dev;
  try {
    e.run(g, p);
  } catch (const run_failure& f) {
    what = f.what();
    dev = f.device();
  }
  killer.join();
  MESSAGE(what);
  CHECK(what.find("died") != std::string::npos);
  CHECK(what.find("cpu1") != std::string::npos);
  REQUIRE(dev);  // the failure names its device
  CHECK(*dev == 1);
  CHECK(seconds_since(t0) < 5.0);
  CHECK(e.bytes_held() == 0);
  // device 1 was respawned: a full run now succeeds and matches the reference
  auto r = e.run(g, p, run_options{}.with_seed(9).keep_all());
  auto ref = execute_reference(g, 9);
  for (op_index i = 0; i < g.size(); ++i) CHECK(bitwise_equal(r.outputs[i], ref[i]));
}

TEST_CASE("a run past its timeout fails naming the unfinished op, in bounded time") {
  cluster c = make_preset("cpu:2");
  graph g = chain_graph();
  placement p = round_robin(g, c);
  op_index victim = g.topo_order()[3];
  auto kernels = std::make_shared<faulty_backend>(g[victim].id, 0ms, 1500ms);
  engine e(c, engine_options{}.with_custom_backend(kernels));
  auto t0 = std::chrono::steady_clock::now();
  std::string what;
  try {
    e.run(g, p, run_options{}.with_timeout(200ms));
    FAIL("the run should have timed out");
  } catch (const run_failure& f) {
    what = f.what();
    REQUIRE(f.op().has_value());
    CHECK(*f.op() == victim);
    CHECK(f.timed_out());
  }
  MESSAGE(what);
  CHECK(what.find("timed out") != std::string::npos);
  CHECK(what.find("'" + g[victim].id + "'") != std::string::npos);
  CHECK(seconds_since(t0) < 1.2);  // the timeout, not the slow kernel, ended it
  CHECK(e.bytes_held() == 0);
}

TEST_CASE("emulate: a run past its timeout ends its holds, and the engine shuts down at once and runs again") {
  cluster c = make_preset("cpu:2");
  graph_builder b("slow");
  b.add(op_spec{"x", op_kind::synthetic, {}, {}, {}, 1e6, 8, ""});
  b.add(op_spec{"slow", op_kind::synthetic, {"x"}, {}, {}, 1e15, 8, ""});  // hours on a cpu:2 device
  graph g = std::move(b).build();
  placement p = round_robin(g, c);
  auto t0 = std::chrono::steady_clock::now();
  {
    engine e(c, engine_options{}.with_backend("emulate"));
    std::string what;
    try {
      e.run(g, p, run_options{}.with_timeout(300ms));
      FAIL("the run should have timed out");
    } catch (const run_failure& f) {
      what = f.what();
    }
    CHECK(what.find("timed out") != std::string::npos);
    CHECK(what.find("'slow'") != std::string::npos);
    // The interrupted hold freed its worker: a quick graph runs on the same engine.
    graph_builder q("quick");
    q.add(op_spec{"x", op_kind::synthetic, {}, {}, {}, 1e3, 8, ""});
    graph gq = std::move(q).build();
    CHECK_NOTHROW(e.run(gq, round_robin(gq, c), run_options{}.with_timeout(5000ms)));
  }  // the engine's device threads join here: no hold is left to wait for
  CHECK(seconds_since(t0) < 5.0);
}

TEST_CASE("a device killed between runs: the next run still succeeds") {
  cluster c = make_preset("cpu:2");
  graph g = chain_graph();
  placement p = round_robin(g, c);
  engine e(c);
  e.kill_device(0);
  std::this_thread::sleep_for(20ms);
  auto r = e.run(g, p, run_options{}.with_seed(4).keep_all());
  auto ref = execute_reference(g, 4);
  for (op_index i = 0; i < g.size(); ++i) CHECK(bitwise_equal(r.outputs[i], ref[i]));
}
