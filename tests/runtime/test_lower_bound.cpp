// The makespan lower bound: the critical path and work bounds by hand, the head/tail bound by hand
// and against every placement of small graphs (runtime/src/lower_bound.cpp, docs/simulator.md).
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>
#include <doppler/runtime/workloads.hpp>

#include "sim_fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace doppler;
using namespace sim_fixtures;

namespace {

const cost_model cm;

}  // namespace

TEST_CASE("lower bound: critical path on the fastest device vs total work") {
  std::vector<device> ds = {{"slow", device_kind::gpu, 1e12, 1e12, "h"}, {"fast", device_kind::gpu, 2e12, 1e12, "h"}};
  cluster c("two", ds, {}, {{"slow", "fast", 1e10, 0, true}});
  auto chain = make_graph({syn("a", {}, 1e12, 8), syn("b", {"a"}, 2e12, 8), syn("c", {"b"}, 3e12, 8)});
  CHECK(makespan_lower_bound(chain, c, cm) == doctest::Approx(3.0));  // path 6e12 / 2e12
  auto wide = make_graph({syn("a", {}, 1e12, 8), syn("b", {}, 1e12, 8), syn("c", {}, 1e12, 8), syn("d", {}, 1e12, 8)});
  CHECK(makespan_lower_bound(wide, c, cm) == doctest::Approx(4.0 / 3.0));  // work 4e12 / 3e12
  CHECK(makespan_lower_bound(wide, c, cm, sim_options{}.with_streams(2)) == doctest::Approx(2.0 / 3.0));
  cost_model half;
  half.set_efficiency(op_kind::synthetic, 0.5);
  CHECK(makespan_lower_bound(wide, c, half) == doctest::Approx(8.0 / 3.0));
  CHECK(makespan_lower_bound(wide, c, half, sim_options{}.with_model(sim_model::simple)) ==
        doctest::Approx(4.0 / 3.0));
  // A straggler counts at its slowed rate: the fast device at 1/4 speed leaves the slow one fastest.
  CHECK(makespan_lower_bound(chain, c, cm, sim_options{}.with_straggler(1, 4)) == doctest::Approx(6.0));
  // Every placement of the chain meets the bound; the all-fast one reaches it.
  auto all_fast = place(chain, {{"a", 1}, {"b", 1}, {"c", 1}});
  CHECK(simulate(chain, c, all_fast, cm).makespan == doctest::Approx(3.0));
}

TEST_CASE("lower bound: finite and below the makespan when FLOPs times the fastest rate overflow a double") {
  // Work was counted in seconds on a 1 FLOP/s device: 1e300 FLOPs (1e301 s at the slow device's
  // efficiency) times 1e21 FLOP/s overflowed to an infinite "lower" bound above a finite makespan.
  std::vector<device> ds = {{"slow", device_kind::gpu, 1, 1e9, "h"}, {"fast", device_kind::gpu, 1e21, 1e9, "h"}};
  cluster c("het", ds, {}, {{"slow", "fast", 1e10, 0, true}});
  auto g = make_graph({syn("x", {}, 0, 8), syn("y", {"x"}, 1e300, 8), syn("z", {"y"}, 1, 8)});
  const double lb = makespan_lower_bound(g, c, cm);
  REQUIRE(std::isfinite(lb));
  placement p;
  p.device.assign(g.size(), 1);  // all on the fast device
  const double ms = simulate(g, c, p, cm).makespan;
  CHECK(lb > 0.5 * ms);  // y on the fast device is the whole critical path
  CHECK(lb <= ms * (1 + 1e-12));
}

TEST_CASE("lower bound: each op at its least time over the devices, not on the device of the highest rate") {
  // A straggler's slowdown stretches the overhead too: a (1e12 FLOP/s, 10x slower) has the higher
  // rate, but a 1e9-FLOP op takes (1 ms + 1 s) x 10 on it and 0.1 s + 1 s on b. The bound said
  // 10.01 s for a run of 1.1 s.
  std::vector<device> ds = {{"a", device_kind::gpu, 1e12, 1e12, "h"}, {"b", device_kind::gpu, 1e10, 1e12, "h"}};
  cluster c("two", ds, {}, {{"a", "b", 1e10, 0, true}});
  cost_model slow_start;
  slow_start.set_overhead(1.0);
  auto one = make_graph({syn("v", {}, 1e9, 8)});
  const auto opt = sim_options{}.with_straggler(0, 10);
  const double on_b = simulate(one, c, place(one, {{"v", 1}}), slow_start, opt).makespan;
  CHECK(on_b == doctest::Approx(1.1));
  CHECK(makespan_lower_bound(one, c, slow_start, opt) == doctest::Approx(1.1));
  // With host cores the bound sums the same least times.
  slow_start.set_host_cores(1);
  auto two = make_graph({syn("v", {}, 1e9, 8), syn("w", {}, 1e9, 8)});
  CHECK(makespan_lower_bound(two, c, slow_start, opt) == doctest::Approx(2.2));
  CHECK(simulate(two, c, place(two, {{"v", 1}, {"w", 1}}), slow_start, opt).makespan >= 2.2 * (1 - 1e-12));
}

TEST_CASE("lower bound: the source's and the sink's devices give the others a head and a tail") {
  // x (no work, 1e10 B: 1 s over a link) feeds four 1 s ops whose 1e10 B outputs a sum op (no work)
  // takes. Whichever device holds x, the other one starts 1 s late; whichever holds the sum, the
  // other one stops 1 s early: 2 T - 1 - 1 >= 4 s of work, T >= 3 s (the old bound: 4 s / 2 = 2 s).
  auto g = make_graph({syn("x", {}, 0, 1e10), syn("a", {"x"}, 1e12, 1e10), syn("b", {"x"}, 1e12, 1e10),
                       syn("c", {"x"}, 1e12, 1e10), syn("d", {"x"}, 1e12, 1e10),
                       syn("sum", {"a", "b", "c", "d"}, 0, 8)});
  auto c = mesh(2, 1e12, 1e10, 0);
  const auto simple = sim_options{}.with_model(sim_model::simple);
  CHECK(makespan_lower_bound(g, c, cm) == doctest::Approx(3.0));
  CHECK(makespan_lower_bound(g, c, cm, simple) == doctest::Approx(3.0));
  // and it is reached: three ops with x and the sum, one elsewhere (0-1 x moves, 1-2 runs, 2-3 back)
  double best = 1e300, best_simple = 1e300;
  each_placement(g, c, [&](const placement& p) {
    best = std::min(best, simulate(g, c, p, cm).makespan);
    best_simple = std::min(best_simple, simulate(g, c, p, cm, simple).makespan);
  });
  CHECK(best == doctest::Approx(3.0));
  CHECK(best_simple == doctest::Approx(3.0));
  // Latency counts on both sides: 0.25 s per link puts the bound at (4 + 1.25 + 1.25) / 2.
  CHECK(makespan_lower_bound(g, mesh(2, 1e12, 1e10, 0.25), cm) == doctest::Approx(3.25));
  // Two streams per device double what a device does in its window: 2 (2 T - 2) >= 4, T >= 2.
  CHECK(makespan_lower_bound(g, c, cm, sim_options{}.with_streams(2)) == doctest::Approx(2.0));
}

TEST_CASE("lower bound: no placement of a small graph beats it (every placement simulated)") {
  // Fork-join graphs with one source and one sink, on three devices: a mesh with latency, a mesh
  // with a straggler, and a line of unequal devices and links (a route through the middle device).
  std::vector<device> ds = {{"a", device_kind::gpu, 1e12, 1e12, "h"}, {"b", device_kind::gpu, 2e12, 1e12, "h"},
                            {"c", device_kind::gpu, 1e12, 1e12, "h"}};
  const cluster line("line", ds, {}, {{"a", "b", 2e10, 1e-2, true}, {"b", "c", 1e10, 0, true}});
  const cluster lat = mesh(3, 1e12, 1e10, 0.05);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> flops(0.2e12, 2e12), bytes(0.1e10, 1.5e10);
  int lifted = 0;
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<op_spec> specs{syn("x", {}, 0, bytes(rng))};
    for (int i = 1; i <= 5; ++i) {
      std::vector<std::string> in{"x"};
      if (i > 1 && rng() % 2) in = {"m" + std::to_string(1 + rng() % (i - 1))};
      if (i > 2 && rng() % 3 == 0) in.push_back("m" + std::to_string(1 + rng() % (i - 1)));
      std::sort(in.begin(), in.end());
      in.erase(std::unique(in.begin(), in.end()), in.end());
      specs.push_back(syn("m" + std::to_string(i), in, flops(rng), bytes(rng)));
    }
    std::vector<std::string> all;
    for (int i = 1; i <= 5; ++i) all.push_back("m" + std::to_string(i));
    specs.push_back(syn("y", all, flops(rng) / 4, 8));
    graph g = make_graph(specs);
    struct setup {
      const cluster* c;
      sim_options opt;
    } setups[] = {{&lat, {}},
                  {&lat, sim_options{}.with_straggler(1, 3)},
                  {&line, {}},
                  {&line, sim_options{}.with_model(sim_model::simple)},
                  {&lat, sim_options{}.with_model(sim_model::simple).with_straggler(2, 2)}};
    for (const auto& [c, opt] : setups) {
      CAPTURE(trial);
      double bound = makespan_lower_bound(g, *c, cm, opt);
      double best = 1e300;
      each_placement(g, *c, [&](const placement& p) { best = std::min(best, simulate(g, *c, p, cm, opt).makespan); });
      CHECK(best >= bound * (1 - 1e-12));
      // the old bound: the critical path on the fastest device, the work over the total rate
      std::vector<double> t(g.size());
      double work = 0, rate = 0, fast = 0;
      for (device_index d = 0; d < c->device_count(); ++d) {
        double r = (*c)[d].flops;
        for (const auto& [sd, f] : opt.stragglers) r /= sd == d ? f : 1;
        rate += r;
        fast = std::max(fast, r);
      }
      for (op_index v = 0; v < g.size(); ++v) {
        t[v] = g[v].flops / fast;
        work += g[v].flops;
      }
      lifted += bound > 1.02 * std::max(critical_path(g, t), work / rate) ? 1 : 0;
    }
  }
  CHECK(lifted >= 16);  // the head/tail part raises most of the 40 bounds (24 at seed 7)
}


TEST_CASE("lower bound: the small Llama block's best known placements sit between it and the goal's bars") {
  // tests/data/placements/README.md: placements of the generated block (`doppler workload
  // llama-block`, default parameters) found by tests/tools/anneal_probe, the best known of each
  // (docs/learner-experiments.md, "Does a placement below the bar exist?"). The bound must hold for
  // them, and the DGX-1 one must stay below issue 5's bar there: 0.90x search's ten-seed mean at
  // 20 000 simulations (7.249 us), 6.524 us. On p100x4 the best known is above that bar (11.84 us).
  const graph g = make_workload("llama-block", workload_params{});
  const cost_model cm;
  struct known {
    const char* cluster;
    const char* file;
    double makespan;
    double bar;  // issue 5's bar, where the placement is below it
  } cases[] = {{"dgx1-v100", "llama-block-dgx1-v100-anneal.json", 6.50079e-6, 0.90 * 7.249e-6},
               {"p100x4", "llama-block-p100x4-anneal.json", 11.8772e-6, 0}};
  for (const auto& k : cases) {
    CAPTURE(k.cluster);
    const cluster c = make_preset(k.cluster);
    const placement p = load_placement(std::string(DOPPLER_TEST_DATA_DIR) + "/placements/" + k.file, g, c);
    const double m = simulate(g, c, p, cm).makespan;
    CHECK(m == doctest::Approx(k.makespan).epsilon(1e-5));
    CHECK(makespan_lower_bound(g, c, cm) <= m);
    if (k.bar > 0) CHECK(m < k.bar);
  }
}
