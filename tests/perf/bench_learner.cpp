// Learner speed (issue 5), one thread (torch::set_num_threads(1) inside the policy):
//   * one phase-II training episode on the paper's 417-node graph (8gpu_full_transformer.txt, 367 ops as imported) on
//     doppler-paper:8: a sampled rollout, its simulated makespan, and a REINFORCE update on it —
//     at the default sizes (hidden 64, 4 steps) and the paper's (hidden 128, 6 steps); the
//     single-policy ablation (`joint`), a metis hint and dynamic SEL at the default sizes beside it;
//   * greedy inference (the deployment placement: encode + |V| SEL/PLC steps) on llama-layer
//     graphs of 961, 3073 and 9985 ops on doppler-paper:8; counter `per_op` (seconds per op) shows
//     whether the time grows linearly with the graph; the same with dynamic SEL.
// The baseline in the same harness is the cp teacher on the same graphs (and, for the training
// episode, cp plus a simulation on the paper graph), the list scheduler the policy imitates (its per-op cost is the floor of any rollout that keeps cp's timeline).
//   ./build/release/tests/perf/bench_learner --benchmark_min_time=0.5

#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/workloads.hpp>

#include <benchmark/benchmark.h>

#include <map>
#include <string>

using namespace doppler;

namespace {

const graph& paper_graph() {
  static graph g = load_graph(std::string(DOPPLER_SOURCE_DIR) + "/workloads/doppler-paper/8gpu_full_transformer.txt");
  return g;
}

const cluster& paper8() {
  static cluster c = make_preset("doppler-paper:8");
  return c;
}

/// llama-layer graphs: `layers` decoder layers, each op split 8 ways (192 ops per layer + 1):
/// 5 → 961, 16 → 3073, 52 → 9985 ops.
const graph& llama(std::int64_t layers) {
  static std::map<std::int64_t, graph> cache;
  auto it = cache.find(layers);
  if (it == cache.end()) {
    workload_params p;
    p.layers = layers;
    p.shards = 8;
    it = cache.emplace(layers, make_workload("llama-layer", p)).first;
  }
  return it->second;
}

void per_op(benchmark::State& state, std::size_t n) {
  state.counters["per_op"] = benchmark::Counter(static_cast<double>(n),
                                                benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["ops"] = static_cast<double>(n);
}

/// One untimed placement before the timed ones: the first call pays the allocator's first touches
/// and LibTorch's lazy set-up (about 3x a warm call at 10k ops), and ctest's short run (min_time
/// 0.2 s) times a single iteration of the 10k-op case. A one-shot `doppler place` pays it.
void warm_up(learner::policy& pol, const graph& g, const cost_model& cm) {
  learner::problem pb(g, paper8(), cm);
  benchmark::DoNotOptimize(pol.place(pb));
}

/// args: hidden, steps, kind (0 dual, 1 joint, 2 dual with a metis hint: two more PLC columns and
/// SEL's rank input, 3 dual with dynamic SEL: every ready op's features at every step)
void bm_train_episode(benchmark::State& state) {
  const graph& g = paper_graph();
  cost_model cm;
  learner::problem pb(g, paper8(), cm);
  learner::policy_options po;
  po.hidden = static_cast<int>(state.range(0));
  po.steps = static_cast<int>(state.range(1));
  po.kind = state.range(2) == 1 ? learner::policy_kind::joint : learner::policy_kind::dual;
  if (state.range(2) == 2) po.hint = "metis";
  po.dynamic_sel = state.range(2) == 3;
  learner::policy pol(po);
  sim_options so;
  std::uint64_t seed = 1;
  (void)pol.place(pb);  // graph tensors (and the hint) built once, as in training
  for (auto _ : state) {
    auto ep = pol.rollout(pb, learner::rollout_options::sample(seed++));
    double ms = learner::score(pb, ep.result, so);
    benchmark::DoNotOptimize(ms);
    double adv = (seed % 2) ? 0.1 : -0.1;
    benchmark::DoNotOptimize(pol.reinforce_update(pb, {&ep, 1}, {&adv, 1}, 0.99, 0.01));
  }
  state.counters["ops"] = static_cast<double>(g.size());
  const char* kinds[] = {"dual", "joint", "dual+hint", "dual+dynamic-sel"};
  state.SetLabel(std::string(kinds[state.range(2)]) + " hidden " + std::to_string(po.hidden) +
                 ", steps " + std::to_string(po.steps));
}
BENCHMARK(bm_train_episode)->Args({64, 4, 0})->Args({128, 6, 0})->Args({64, 4, 1})->Args({64, 4, 2})->Args({64, 4, 3})
    ->Unit(benchmark::kMillisecond);

/// Greedy placement from scratch (problem features, encoding and the rollout), args: layers.
void bm_inference(benchmark::State& state) {
  const graph& g = llama(state.range(0));
  cost_model cm;
  learner::policy pol;
  warm_up(pol, g, cm);
  for (auto _ : state) {
    learner::problem pb(g, paper8(), cm);  // a fresh problem: nothing cached
    benchmark::DoNotOptimize(pol.place(pb));
  }
  per_op(state, g.size());
}
BENCHMARK(bm_inference)->Arg(5)->Arg(16)->Arg(52)->Unit(benchmark::kMillisecond);

/// The same with dynamic SEL: each step also computes every ready op's best EST (ready set × devices).
void bm_inference_dynamic_sel(benchmark::State& state) {
  const graph& g = llama(state.range(0));
  cost_model cm;
  learner::policy_options po;
  po.dynamic_sel = true;
  learner::policy pol(po);
  warm_up(pol, g, cm);
  for (auto _ : state) {
    learner::problem pb(g, paper8(), cm);
    benchmark::DoNotOptimize(pol.place(pb));
  }
  per_op(state, g.size());
}
BENCHMARK(bm_inference_dynamic_sel)->Arg(5)->Arg(16)->Arg(52)->Unit(benchmark::kMillisecond);

/// The cp teacher on the same graphs.
void bm_baseline_cp(benchmark::State& state) {
  const graph& g = llama(state.range(0));
  cost_model cm;
  for (auto _ : state) benchmark::DoNotOptimize(cp_place(g, paper8(), cm, 0));
  per_op(state, g.size());
}
BENCHMARK(bm_baseline_cp)->Arg(5)->Arg(16)->Arg(52)->Unit(benchmark::kMillisecond);

/// The cp teacher and a simulation on the training episode's graph: the list scheduler an episode
/// replays, plus the same makespan evaluation (the floor of a training episode without a network).
void bm_baseline_cp_paper(benchmark::State& state) {
  const graph& g = paper_graph();
  cost_model cm;
  sim_options so;
  for (auto _ : state) {
    placement p = cp_place(g, paper8(), cm, 0);
    benchmark::DoNotOptimize(simulate(g, paper8(), p, cm, so).makespan);
  }
  state.counters["ops"] = static_cast<double>(g.size());
}
BENCHMARK(bm_baseline_cp_paper)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
