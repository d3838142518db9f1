// Placer speed: HEFT and the CP teacher per op at 8 devices (dgx1-v100) on random DAGs of 10k and
// 100k ops, against a baseline in the same harness: one plain topological sweep over the edges
// (top levels), the least any list scheduler must do. Counter `per_op` = seconds per op. And cp on
// 10k and 20k identical independent ops, all tied at every step.
//   ./build/release/tests/perf/bench_placers --benchmark_min_time=0.5

#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/placer.hpp>

#include <benchmark/benchmark.h>

#include <random>
#include <string>

using namespace doppler;

namespace {

/// A random DAG of n synthetic ops: op i takes 1–3 inputs among the 256 ops before it; FLOPs in
/// [1e8, 1e10], output bytes in [1e4, 1e6] (100k ops: ~50 GB, fits 8 × 16 GB). Seeded, so every run sees the same graph.
graph random_dag(std::size_t n) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> flops(1e8, 1e10), bytes(1e4, 1e6);
  graph_builder b("random-" + std::to_string(n));
  b.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    op_spec s;
    s.id = "n" + std::to_string(i);
    s.kind = op_kind::synthetic;
    s.flops = flops(rng);
    s.bytes = bytes(rng);
    if (i > 0) {
      std::size_t lo = i > 256 ? i - 256 : 0;
      int k = std::uniform_int_distribution<int>(1, 3)(rng);
      for (int j = 0; j < k; ++j) {
        std::size_t src = std::uniform_int_distribution<std::size_t>(lo, i - 1)(rng);
        s.inputs.push_back("n" + std::to_string(src));
      }
    }
    b.push(std::move(s));
  }
  return std::move(b).build();
}

const graph& dag(std::size_t n) {
  static graph g10k = random_dag(10'000), g100k = random_dag(100'000);
  return n == 10'000 ? g10k : g100k;
}

void per_op(benchmark::State& state, std::size_t n) {
  state.counters["per_op"] = benchmark::Counter(static_cast<double>(n),
                                                benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["ops"] = static_cast<double>(n);
}

void bm_baseline_topo_sweep(benchmark::State& state) {
  const graph& g = dag(static_cast<std::size_t>(state.range(0)));
  auto cost = op_flops(g);
  for (auto _ : state) benchmark::DoNotOptimize(top_levels(g, cost));
  per_op(state, g.size());
}

void bm_heft(benchmark::State& state) {
  const graph& g = dag(static_cast<std::size_t>(state.range(0)));
  cluster c = make_preset("dgx1-v100");
  cost_model cm;
  auto p = make_placer("heft");
  for (auto _ : state) benchmark::DoNotOptimize(p->place(g, c, cm, {}));
  per_op(state, g.size());
}

void bm_cp(benchmark::State& state) {
  const graph& g = dag(static_cast<std::size_t>(state.range(0)));
  cluster c = make_preset("dgx1-v100");
  cost_model cm;
  for (auto _ : state) benchmark::DoNotOptimize(cp_place(g, c, cm, 1));
  per_op(state, g.size());
}

void bm_cp_with_decisions(benchmark::State& state) {
  const graph& g = dag(static_cast<std::size_t>(state.range(0)));
  cluster c = make_preset("dgx1-v100");
  cost_model cm;
  std::vector<cp_decision> dec;
  for (auto _ : state) benchmark::DoNotOptimize(cp_place(g, c, cm, 1, &dec));
  per_op(state, g.size());
}

/// n identical independent ops: every step ties all the ready ops (the tie pool's case; popping and
/// pushing them back each step made 20 000 such ops take 14 s, quadratic).
void bm_cp_all_tied(benchmark::State& state) {
  graph_builder b("flat");
  for (std::int64_t i = 0; i < state.range(0); ++i) {
    op_spec s;
    s.id = "o" + std::to_string(i);
    s.kind = op_kind::synthetic;
    s.flops = 1e9;
    s.bytes = 1e3;
    b.add(std::move(s));
  }
  const graph g = std::move(b).build();
  cluster c = make_preset("dgx1-v100");
  cost_model cm;
  for (auto _ : state) benchmark::DoNotOptimize(cp_place(g, c, cm, 1));
  per_op(state, g.size());
}

}  // namespace

BENCHMARK(bm_cp_all_tied)->Arg(10'000)->Arg(20'000)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_baseline_topo_sweep)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_heft)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_cp)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_cp_with_decisions)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
