// Dispatch overhead of the actor runtime: a DAG of 102,400 no-op ops (64 lanes × 1,600 levels, each op
// reading its lane's previous op and a neighbour lane's) over 8 device actors, with the `null`
// backend, so what is timed is the protocol alone: dependency counters, execute / op_done messages,
// transfers (send → tensor → transfer_done) for the edges that cross devices. The same DAG runs
// through oneTBB flow_graph (continue_node per op, empty bodies) in the same binary: compare ratios.
//   ./build/release/tests/perf/bench_dispatch --benchmark_counters_tabular=true
// Arguments: 0 = blocked placement (8 lanes per device: 1/8 of the neighbour edges cross devices),
//            1 = scattered placement (lane j on device j % 8: every neighbour edge crosses).
// `us_per_op` counts the whole engine.run (plan tables, begin handshake, dispatch, collect);
// `dispatch_us_per_op` the measured makespan (first execute → last completion).

#include <doppler/actors/backend.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/graph.hpp>

#include <benchmark/benchmark.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr int lanes = 64, depth = 1600, devices = 8;

std::string op_id(int level, int lane) { return "o" + std::to_string(level) + "_" + std::to_string(lane); }

std::shared_ptr<const doppler::graph> dag() {
  static std::shared_ptr<const doppler::graph> g = [] {
    doppler::graph_builder b("dispatch-dag");
    b.reserve(static_cast<std::size_t>(lanes) * depth);
    for (int l = 0; l < depth; ++l)
      for (int j = 0; j < lanes; ++j) {
        doppler::op_spec s;
        s.id = op_id(l, j);
        s.kind = doppler::op_kind::synthetic;
        s.flops = 0;
        s.bytes = 4;
        if (l > 0) s.inputs = {op_id(l - 1, j), op_id(l - 1, (j + 1) % lanes)};
        b.push(std::move(s));
      }
    return std::make_shared<const doppler::graph>(std::move(b).build());
  }();
  return g;
}

doppler::placement placement_of(const doppler::graph& g, bool scattered) {
  doppler::placement p;
  p.device.resize(g.size());
  for (doppler::op_index i = 0; i < g.size(); ++i) {
    int lane = static_cast<int>(i % lanes);
    p.device[i] = static_cast<doppler::device_index>(scattered ? lane % devices : lane / (lanes / devices));
  }
  return p;
}

/// A backend that does nothing but, unlike `null`, runs on the device's worker thread: the cost of
/// the hand-off to a worker and back.
class empty_worker_backend final : public doppler::actors::backend {
 public:
  std::string_view name() const noexcept override { return "empty-worker"; }
  doppler::tensor execute(const doppler::graph&, doppler::op_index, std::span<const doppler::tensor* const>,
                          std::uint64_t) override {
    return {};
  }
};

void run_actors(benchmark::State& state, std::shared_ptr<doppler::actors::backend> kernels) {
  auto g = dag();
  auto p = placement_of(*g, state.range(0) == 1);
  doppler::engine e(doppler::make_preset("cpu:8"), doppler::engine_options{}.with_custom_backend(kernels));
  auto opt = doppler::run_options{}.with_trace(false);
  e.run(g, p, opt);  // warm-up
  double wall = 0, dispatch = 0;
  std::uint64_t transfers = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = e.run(g, p, opt);
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    dispatch += r.runs[0].makespan;
    transfers = r.transfers[0];
  }
  double ops = static_cast<double>(g->size()) * static_cast<double>(state.iterations());
  state.counters["ops"] = static_cast<double>(g->size());
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["us_per_op"] = wall / ops * 1e6;
  state.counters["dispatch_us_per_op"] = dispatch / ops * 1e6;
}

void bm_actors_null(benchmark::State& state) { run_actors(state, doppler::actors::make_backend("null")); }
void bm_actors_worker_threads(benchmark::State& state) {
  run_actors(state, std::make_shared<empty_worker_backend>());
}

/// The same DAG as a oneTBB flow graph: build once, run (try_put to the entries, wait) per iteration.
void bm_tbb_flow_graph(benchmark::State& state) {
  using namespace oneapi::tbb::flow;
  auto g = dag();
  graph fg;
  std::vector<std::unique_ptr<continue_node<continue_msg>>> nodes;
  nodes.reserve(g->size());
  auto t_build = std::chrono::steady_clock::now();
  for (doppler::op_index i = 0; i < g->size(); ++i)
    nodes.push_back(std::make_unique<continue_node<continue_msg>>(fg, [](const continue_msg&) {}));
  for (doppler::op_index i = 0; i < g->size(); ++i)
    for (doppler::op_index s : g->succs(i)) make_edge(*nodes[i], *nodes[s]);
  double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_build).count();
  std::vector<doppler::op_index> entries;
  for (doppler::op_index i = 0; i < g->size(); ++i)
    if (g->preds(i).empty()) entries.push_back(i);
  double wall = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    for (auto i : entries) nodes[i]->try_put(continue_msg());
    fg.wait_for_all();
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double ops = static_cast<double>(g->size()) * static_cast<double>(state.iterations());
  state.counters["ops"] = static_cast<double>(g->size());
  state.counters["us_per_op"] = wall / ops * 1e6;
  state.counters["build_us_per_op"] = build / static_cast<double>(g->size()) * 1e6;
}

}  // namespace

BENCHMARK(bm_actors_null)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_actors_worker_threads)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_tbb_flow_graph)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
