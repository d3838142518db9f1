// Placers: the cp teacher against a hand-worked example, tie reporting, validity on every workload
// and paper graph, seeded determinism, search never worse than its start (its own or a given one), and cp/heft unchanged
// without a transfer planner. Memory and non-finite op times: test_placer_limits.cpp.
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/sim.hpp>
#include <doppler/runtime/tolerance.hpp>
#include <doppler/runtime/transfer_plan.hpp>
#include <doppler/runtime/workloads.hpp>

#include "placer_fixtures.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <string>

using namespace doppler;
using namespace doppler::placer_test;


// The worked example (doppler-paper:2; time t, comm c in seconds, edges a→b, a→c, b→d, c→e, d→e):
//
//        a (t 2, c 1)              bottom levels bl(v) = t(v) + max over consumers (c(v) + bl(s)):
//       /            \               bl(e) = 1
//   b (t 3, c 1)   c (t 1, c 0.5)    bl(d) = 2 + 1 + 1 = 4
//      |              |              bl(c) = 1 + 0.5 + 1 = 2.5
//   d (t 2, c 1)      |              bl(b) = 3 + 1 + 4 = 8
//       \            /               bl(a) = 2 + 1 + 8 = 11
//        e (t 1, c 0)
// Steps (X = the device a lands on, Y = the other; avail X = Y = 0 at the start):
//   1. ready {a}: EST X = Y = 0 → tie {0, 1}; a on X, runs 0..2.            avail X = 2
//   2. ready {b (8), c (2.5)} → b: EST X = max(2, 2) = 2, Y = max(0, 2+1) = 3 → X, 2..5.  avail X = 5
//   3. ready {c (2.5), d (4)} → d: EST X = max(5, 5) = 5, Y = max(0, 5+1) = 6 → X, 5..7.  avail X = 7
//   4. ready {c} → c: EST X = max(7, 2) = 7, Y = max(0, 2+1) = 3 → Y, 3..4.              avail Y = 4
//   5. ready {e} → e: EST X = max(7, 4+0.5, 7) = 7, Y = max(4, 4, 7+1) = 8 → X, 7..8.
// Placement a, b, d, e on X and c on Y; selection order a, b, d, c, e; only step 1 ties.
TEST_CASE("cp teacher matches the hand-worked example") {
  graph g = build("worked", {syn("a", 2, 1), syn("b", 3, 1, {"a"}), syn("c", 1, 0.5, {"a"}),
                             syn("d", 2, 1, {"b"}), syn("e", 1, 0, {"c", "d"})});
  cluster c = make_preset("doppler-paper:2");
  cost_model cm;
  for (std::uint64_t seed : {0u, 1u, 2u, 3u, 7u}) {
    std::vector<cp_decision> dec;
    placement p = cp_place(g, c, cm, seed, &dec);
    CAPTURE(seed);
    device_index x = p.device[idx(g, "a")], y = 1 - x;
    CHECK(p.device[idx(g, "b")] == x);
    CHECK(p.device[idx(g, "d")] == x);
    CHECK(p.device[idx(g, "e")] == x);
    CHECK(p.device[idx(g, "c")] == y);
    std::vector<op_index> want = {idx(g, "a"), idx(g, "b"), idx(g, "d"), idx(g, "c"), idx(g, "e")};
    CHECK(p.order == want);
    CHECK(p.method == "cp");
    REQUIRE(dec.size() == 5);
    CHECK(dec[0].tied_devices == std::vector<device_index>{0, 1});
    for (std::size_t i = 0; i < dec.size(); ++i) {
      CHECK(dec[i].op == want[i]);
      CHECK(dec[i].tied_ops == std::vector<op_index>{want[i]});
      if (i > 0) CHECK(dec[i].tied_devices.size() == 1);
    }
  }
  // Both devices come up over a few seeds: the RNG really breaks the tie.
  std::set<device_index> firsts;
  for (std::uint64_t seed = 0; seed < 16; ++seed) firsts.insert(cp_place(g, c, cm, seed).device[idx(g, "a")]);
  CHECK(firsts.size() == 2);
}

TEST_CASE("cp reports every tied op and device") {
  // Two identical entries r1, r2 feeding one join: the first step ties both ops and both devices.
  graph g = build("sym", {syn("r1", 1, 1), syn("r2", 1, 1), syn("j", 1, 0, {"r1", "r2"})});
  cluster c = make_preset("doppler-paper:2");
  std::vector<cp_decision> dec;
  placement p = cp_place(g, c, cost_model(), 5, &dec);
  REQUIRE(dec.size() == 3);
  CHECK(dec[0].tied_ops == std::vector<op_index>{idx(g, "r1"), idx(g, "r2")});
  CHECK(dec[0].tied_devices == std::vector<device_index>{0, 1});
  CHECK(std::count(dec[0].tied_ops.begin(), dec[0].tied_ops.end(), dec[0].op) == 1);
  // Step 2: the other entry; its own device is busy until 1, the other is free at 0: no tie.
  CHECK(dec[1].tied_ops.size() == 1);
  CHECK(dec[1].tied_devices.size() == 1);
  CHECK(p.device[dec[1].op] != p.device[dec[0].op]);
  // Step 3: j waits for both (end 1, transfer 1 from the other device): EST 2 on both → tie.
  CHECK(dec[2].tied_devices == std::vector<device_index>{0, 1});
}

TEST_CASE("cp with many tied ops: each step's tie set is every remaining one, exact or nearly equal levels") {
  // 40 independent ops. Exact: identical work, one bottom level (the tie pool's path). Nearly equal:
  // work differing by a relative 1e-12 (the gathered-and-sorted path). Either way step i ties the
  // 40 - i ops not yet placed, sorted by index, the chosen one among them, and every op is placed once.
  for (double spread : {0.0, 1e-12}) {
    CAPTURE(spread);
    std::vector<op_spec> specs;
    for (int i = 0; i < 40; ++i) specs.push_back(syn("o" + std::to_string(i), 1 + spread * (i % 7), 0));
    graph g = build("flat", specs);
    cluster c = make_preset("doppler-paper:4");
    std::vector<op_index> first_picks;
    for (std::uint64_t seed : {1, 2}) {
      std::vector<cp_decision> dec;
      cp_place(g, c, cost_model(), seed, &dec);
      REQUIRE(dec.size() == 40);
      // The draws themselves, pinned: the tie pool replaced popping and pushing back every tied op
      // (2026-12-07) with placements byte-identical on 78 graphs, 5 000 tied ops among them.
      const std::vector<op_index> pinned = seed == 1 ? std::vector<op_index>{5, 18, 14, 20, 2}
                                                     : std::vector<op_index>{36, 30, 9, 8, 3};
      for (std::size_t i = 0; i < pinned.size(); ++i) CHECK(dec[i].op == pinned[i]);
      std::set<op_index> remaining;
      for (op_index v = 0; v < 40; ++v) remaining.insert(v);
      for (std::size_t i = 0; i < dec.size(); ++i) {
        CAPTURE(i);
        CHECK(dec[i].tied_ops == std::vector<op_index>(remaining.begin(), remaining.end()));
        CHECK(remaining.erase(dec[i].op) == 1);
      }
      first_picks.push_back(dec[0].op);
    }
    CHECK(first_picks[0] != first_picks[1]);  // the seed draws among the ties (1 in 40 to collide)
  }
}

TEST_CASE("the tie rule: sums in different orders are equal and real differences are not") {
  // 0.1 + 0.2 and 0.3 differ in the last bit; cp must see them as a tie.
  CHECK(0.1 + 0.2 != 0.3);
  CHECK(nearly_equal(0.1 + 0.2, 0.3));
  CHECK_FALSE(clearly_less(0.3, 0.1 + 0.2));
  // A relative difference of 1e-6 is real, in both directions.
  CHECK_FALSE(nearly_equal(1.0, 1.0 + 1e-6));
  CHECK(clearly_less(1.0, 1.0 + 1e-6));
  CHECK_FALSE(clearly_less(1.0 + 1e-6, 1.0));
  // The tolerance is relative: it scales with the values, and 0 equals only 0.
  CHECK(nearly_equal(1e12, 1e12 + 1e2));
  CHECK_FALSE(nearly_equal(1e-12, 2e-12));
  CHECK(nearly_equal(0.0, 0.0));
  CHECK_FALSE(nearly_equal(0.0, 1e-300));
}

TEST_CASE("heft puts a chain on the fastest device and an independent pair on two devices") {
  std::vector<device> devs = {{"slow", device_kind::gpu, 1e10, 1e12, "h"}, {"fast", device_kind::gpu, 4e10, 1e12, "h"}};
  cluster c("hetero", devs, {}, {{"slow", "fast", 1e10, 0.0, true}});
  graph chain = build("chain", {syn("a", 1, 1), syn("b", 1, 1, {"a"}), syn("c", 1, 1, {"b"})});
  placement p = make_placer("heft")->place(chain, c, cost_model(), {});
  for (device_index d : p.device) CHECK(d == 1);
  // Two independent 4-unit ops: the second finishes at 2 s after the first on the fast device,
  // sooner than at 4 s alone on the slow one, so both go fast (EFT, not EST, decides).
  graph pair = build("pair", {syn("x", 4, 1), syn("y", 4, 1)});
  p = make_placer("heft")->place(pair, c, cost_model(), {});
  CHECK(p.device[0] == 1);
  CHECK(p.device[1] == 1);
  // On equal devices the second op goes to the idle one.
  p = make_placer("heft")->place(pair, make_preset("doppler-paper:2"), cost_model(), {});
  CHECK(p.device[0] != p.device[1]);
}

TEST_CASE("every placer yields a complete valid placement on the generated workloads") {
  cost_model cm;
  for (const char* cl : {"p100x4", "dgx1-v100"}) {
    cluster c = make_preset(cl);
    for (auto& w : workload_names()) {
      graph g = make_workload(w, workload_params{});
      for (auto& name : placer_names()) {
        CAPTURE(cl);
        CAPTURE(w);
        CAPTURE(name);
        placement p = make_placer(name)->place(g, c, cm, quick());
        CHECK(p.device.size() == g.size());
        CHECK(p.order.size() == g.size());
        CHECK(p.method == name);
        CHECK_NOTHROW(check_placement(p, g, c));
        CHECK(simulate(g, c, p, cm).makespan >= makespan_lower_bound(g, c, cm) * (1 - 1e-9));
      }
    }
  }
}

TEST_CASE("the Llama-7B block on p100x4: every placer at or above the bound, heft within 6 percent of it") {
  // The head/tail bound is what shows 0.90x heft's 16.74 ms unreachable there (docs/results.md).
  cost_model cm;
  cluster c = make_preset("p100x4");
  graph g = make_workload("llama-block", workload_params::llama_7b());
  double bound = makespan_lower_bound(g, c, cm);
  CHECK(bound > 0.0158);
  for (auto& name : placer_names()) {
    CAPTURE(name);
    double m = simulate(g, c, make_placer(name)->place(g, c, cm, quick()), cm).makespan;
    CHECK(m >= bound * (1 - 1e-9));
    if (name == "heft") CHECK(m <= 1.06 * bound);
  }
}

TEST_CASE("every placer yields a complete valid placement on the six paper graphs") {
  cost_model cm;
  for (auto& f : paper_files) {
    graph g = paper(f);
    cluster c = paper_cluster(f);
    for (auto& name : placer_names()) {
      CAPTURE(f);
      CAPTURE(name);
      placement p = make_placer(name)->place(g, c, cm, quick());
      CHECK_NOTHROW(check_placement(p, g, c));
      CHECK(p.order.size() == g.size());
      std::set<device_index> used(p.device.begin(), p.device.end());
      if (name != "single") CHECK(used.size() > 1);
    }
  }
}

TEST_CASE("placers are deterministic for a seed") {
  cost_model cm;
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  for (auto& name : placer_names()) {
    CAPTURE(name);
    placement a = make_placer(name)->place(g, c, cm, quick(3));
    placement b = make_placer(name)->place(g, c, cm, quick(3));
    CHECK(a.device == b.device);
    CHECK(a.order == b.order);
  }
  // Seeds matter for the randomized ones (chainmm's cp has many ties).
  for (const char* name : {"random", "cp"}) {
    std::set<std::vector<device_index>> seen;
    for (std::uint64_t s = 0; s < 8; ++s) seen.insert(make_placer(name)->place(g, c, cm, quick(s)).device);
    CHECK_MESSAGE(seen.size() > 1, name);
  }
}

TEST_CASE("search is never worse than its start and reports progress") {
  cost_model cm;
  for (const char* f : {"chain_mm_112nodes.txt", "transformer_block_215nodes.txt"}) {
    graph g = paper(f);
    cluster c = make_preset("doppler-paper:4");
    placer_options o;
    o.seed = 1;
    o.budget = 300;
    o.sim.model = sim_model::simple;
    double last = -1;
    int calls = 0;
    o.progress = [&](double x) {
      CHECK(x >= last);
      last = x;
      ++calls;
    };
    placement s = make_placer("search")->place(g, c, cm, o);
    CHECK(last == 1.0);
    CHECK(calls > 10);
    placer_options so = o;
    so.progress = nullptr;
    double start = 1e300;
    for (const char* m : {"cp", "heft", "m-etf", "round-robin", "single"})
      start = std::min(start, simulate(g, c, make_placer(m)->place(g, c, cm, so), cm, o.sim).makespan);
    CHECK(simulate(g, c, s, cm, o.sim).makespan <= start);
  }
}

TEST_CASE("search from a given start: never worse than it, keeps its order, refuses a bad one") {
  cost_model cm;
  graph g = paper("transformer_block_215nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  placer_options o;
  o.seed = 3;
  o.budget = 400;
  o.sim.model = sim_model::simple;
  // A poor start: round-robin's devices with cp's order.
  placement cp = make_placer("cp")->place(g, c, cm, o);
  placement start = make_placer("round-robin")->place(g, c, cm, o);
  start.order = cp.order;
  const double start_ms = simulate(g, c, start, cm, o.sim).makespan;
  o.start = std::make_shared<const placement>(start);
  placement s = make_placer("search")->place(g, c, cm, o);
  CHECK_NOTHROW(check_placement(s, g, c));
  CHECK(s.order == start.order);  // search moves devices only
  const double s_ms = simulate(g, c, s, cm, o.sim).makespan;
  CHECK(s_ms <= start_ms);
  CHECK(s_ms < start_ms);  // 400 proposals improve a round-robin start of this graph
  // The start is what search starts from: without it the result differs (it starts from cp/heft).
  placer_options plain = o;
  plain.start = nullptr;
  CHECK(make_placer("search")->place(g, c, cm, plain).device != s.device);
  // Budget 0 returns the start itself.
  placer_options none = o;
  none.budget = 0;
  CHECK(same_placement(make_placer("search")->place(g, c, cm, none), start));

  // A start for another graph (wrong op count) is refused, naming the problem.
  placement short_start = start;
  short_start.device.pop_back();
  o.start = std::make_shared<const placement>(short_start);
  CHECK_THROWS_AS(make_placer("search")->place(g, c, cm, o), error);

  // A start that overflows a device's memory is infeasible, naming the device.
  std::vector<device> devs = {{"g0", device_kind::gpu, 1e10, 1000, "h"}, {"g1", device_kind::gpu, 1e10, 1000, "h"}};
  cluster small("small", devs, {}, {{"g0", "g1", 1e10, 0.0, true}});
  std::vector<op_spec> ops;
  for (int i = 0; i < 4; ++i) {
    op_spec sp = syn("o" + std::to_string(i), 1, 0, i ? std::vector<std::string>{"o" + std::to_string(i - 1)}
                                                    : std::vector<std::string>{});
    sp.bytes = 400;
    ops.push_back(std::move(sp));
  }
  graph chain = build("chain", ops);
  placement all0;
  all0.device.assign(4, 0);
  placer_options mo = quick();
  mo.start = std::make_shared<const placement>(all0);
  for (int budget : {400, 0}) {  // with budget 0 it was returned unchecked
    CAPTURE(budget);
    mo.budget = budget;
    try {
      make_placer("search")->place(chain, small, cm, mo);
      FAIL("search accepted a start with 1600 bytes on a 1000-byte device");
    } catch (const error& e) {
      CHECK(e.code() == errc::infeasible);
      CHECK(std::string(e.what()).find("g0") != std::string::npos);
    }
  }
}

namespace {

/// What `f` writes to file descriptor 1 (stdout), e.g. METIS's printf complaints.
template <class F>
std::string stdout_of(F&& f) {
  std::FILE* tmp = std::tmpfile();
  REQUIRE(tmp != nullptr);
  std::fflush(stdout);
  int saved = ::dup(1);
  ::dup2(::fileno(tmp), 1);
  f();
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  std::string text;
  std::rewind(tmp);
  for (int ch; (ch = std::fgetc(tmp)) != EOF;) text += static_cast<char>(ch);
  std::fclose(tmp);
  return text;
}

}  // namespace

TEST_CASE("metis: tiny graphs and lumpy targets print nothing on stdout and place validly") {
  cost_model cm;
  // Fewer ops than devices: one op per device, the heaviest on the fastest.
  graph tiny = build("tiny", {syn("a", 1, 1), syn("b", 3, 1, {"a"}), syn("c", 2, 1, {"b"})});
  std::vector<device> ds;
  std::vector<link_spec> ls;
  for (int d = 0; d < 16; ++d) {
    ds.push_back({"d" + std::to_string(d), device_kind::gpu, (d + 1) * 1e10, 1e12, "h"});
    for (int e = 0; e < d; ++e) ls.push_back({"d" + std::to_string(e), "d" + std::to_string(d), 1e10, 0, true});
  }
  cluster skewed("skewed", ds, {}, ls);
  placement p;
  CHECK(stdout_of([&] { p = make_placer("metis")->place(tiny, skewed, cm, quick()); }).empty());
  CHECK(p.device[idx(tiny, "b")] == 15);
  CHECK(p.device[idx(tiny, "c")] == 14);
  CHECK(p.device[idx(tiny, "a")] == 13);
  CHECK_NOTHROW(check_placement(p, tiny, skewed));
  // A 20-op chain on 16 devices with targets 1:2:...:16 makes METIS (seed 0) complain that it
  // cannot bisect an empty part (it still returns a partition).
  std::vector<op_spec> chain;
  for (int i = 0; i < 20; ++i)
    chain.push_back(i == 0 ? syn("o0", 1, 1) : syn("o" + std::to_string(i), 1, 1, {"o" + std::to_string(i - 1)}));
  graph g = build("chain", chain);
  CHECK(stdout_of([&] { p = make_placer("metis")->place(g, skewed, cm, quick()); }).empty());
  CHECK_NOTHROW(check_placement(p, g, skewed));
  graph one = build("one", {syn("x", 1, 1)});
  CHECK(stdout_of([&] { p = make_placer("metis")->place(one, make_preset("p100x4"), cm, quick()); }).empty());
  CHECK(p.device.size() == 1);
}

TEST_CASE("search returns to its best: a long budget does not end where a short one does better") {
  // The small generated Llama block on dgx1-v100: single's placement is the best heuristic start,
  // and search without the return to the best gave it back unchanged at 20 000 proposals on nine
  // of ten seeds (seed 0 among them) while 5 000 found up to 5% better (docs/placers.md, "search").
  graph g = make_workload("llama-block", workload_params{});
  cluster c = make_preset("dgx1-v100");
  cost_model cm;
  placer_options o;
  const double single = simulate(g, c, make_placer("single")->place(g, c, cm, o), cm).makespan;
  o.seed = 0;
  o.budget = 20000;
  const double long_run = simulate(g, c, make_placer("search")->place(g, c, cm, o), cm).makespan;
  CHECK(long_run < 0.97 * single);
}

TEST_CASE("search refuses a negative budget") {
  cost_model cm;
  placer_options o = quick();
  o.budget = -1;
  CHECK_THROWS_AS(make_placer("search")->place(paper("chain_mm_112nodes.txt"), make_preset("doppler-paper:4"), cm, o),
                  error);
}

TEST_CASE("registry: names, descriptions, unknown names") {
  auto names = placer_names();
  CHECK(names == std::vector<std::string>{"single", "round-robin", "random", "cp", "heft", "m-etf", "metis", "search"});
  for (auto& n : names) {
    CHECK(!placer_description(n).empty());
    CHECK(make_placer(n)->name() == n);
  }
  try {
    make_placer("nope");
    FAIL("accepted an unknown placer");
  } catch (const error& e) {
    CHECK(e.code() == errc::unknown_kind);
    CHECK(std::string(e.what()).find("heft") != std::string::npos);
  }
}

TEST_CASE("critical-path costs: fastest device and mean transfer (bytes / 1e10 on doppler-paper)") {
  graph g = build("two", {syn("a", 2, 3), syn("b", 1, 0, {"a"})});
  auto pc = critical_path_costs(g, make_preset("doppler-paper:4"), cost_model());
  CHECK(pc.node[0] == doctest::Approx(2.0));
  CHECK(pc.edge[0] == doctest::Approx(3.0));
  CHECK(pc.edge[1] == 0.0);
  auto one = critical_path_costs(g, make_preset("doppler-paper:1"), cost_model());
  CHECK(one.edge[0] == 0.0);
}

namespace {

/// A transfer planner that is asked but never plans: every tensor is copied directly.
struct never_plans final : transfer_planner {
  int calls = 0;
  std::shared_ptr<const transfer_plan> plan(device_index, std::span<const device_index>, double) override {
    ++calls;
    return nullptr;
  }
};

graph dgx_workload(const char* name) {
  workload_params wp = workload_params::llama_7b();
  wp.shards = 8;
  return make_workload(name, wp);
}

}  // namespace

TEST_CASE("without a transfer planner cp and heft place as before: the dgx1-v100 makespans of docs/results.md") {
  // docs/results.md, "Planned transfers vs direct copies": direct-transfer makespans (ms) of the
  // placements made with the per-edge EST (`doppler place --transfers direct`).
  struct row {
    const char* graph;
    const char* method;
    double ms;
  };
  const row rows[] = {{"llama-layer", "cp", 27.03}, {"llama-layer", "heft", 22.16},
                      {"moe-layer", "cp", 23.93}, {"moe-layer", "heft", 51.65}};
  cluster c = make_preset("dgx1-v100");
  cost_model cm;
  for (const row& r : rows) {
    CAPTURE(r.graph);
    CAPTURE(r.method);
    graph g = dgx_workload(r.graph);
    placement p = make_placer(r.method)->place(g, c, cm, placer_options{});
    CHECK(std::abs(simulate(g, c, p, cm).makespan * 1e3 - r.ms) < 0.006);
  }
}

TEST_CASE("a transfer planner that never plans leaves cp's and heft's placements exactly unchanged") {
  cluster c = make_preset("dgx1-v100");
  cost_model cm;
  for (const char* name : {"llama-layer", "moe-layer"}) {
    graph g = dgx_workload(name);
    for (const char* m : {"cp", "heft"}) {
      CAPTURE(name);
      CAPTURE(m);
      auto declining = std::make_shared<never_plans>();
      placer_options with;
      with.sim.transfers = declining;
      placement a = make_placer(m)->place(g, c, cm, placer_options{});
      placement b = make_placer(m)->place(g, c, cm, with);
      CHECK(declining->calls > 0);  // consulted: multi-consumer tensors and routes through a GPU
      CHECK(a.device == b.device);
      CHECK(a.order == b.order);
    }
  }
}
