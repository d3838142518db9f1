// The simulator: hand-computed makespans of each model, invariants on random DAGs (the lower bound
// among them) and the Chrome trace. The lower bound's own cases are in test_lower_bound.cpp;
// placement and cost-model files are tested in test_placement.cpp.
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/sim.hpp>

#include "sim_fixtures.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>

using namespace doppler;
using namespace sim_fixtures;

namespace {

const cost_model cm;

}  // namespace

TEST_CASE("a chain on one device takes the sum of its op times") {
  auto g = make_graph({syn("a", {}, 1e12, 8), syn("b", {"a"}, 2e12, 8), syn("c", {"b"}, 3e12, 8)});
  auto c = mesh(2, 1e12, 1e10, 0);
  auto p = place(g, {{"a", 0}, {"b", 0}, {"c", 0}});
  auto r = simulate(g, c, p, cm);
  CHECK(r.makespan == doctest::Approx(6.0).epsilon(1e-12));
  CHECK(r.busy[0] == doctest::Approx(6.0));
  CHECK(r.busy[1] == 0);
  CHECK(r.utilization(0) == doctest::Approx(1.0));
  CHECK(r.event_count == 3);
  for (double b : r.link_bytes) CHECK(b == 0);
}

TEST_CASE("fork-join over two devices pays latency + bytes / bandwidth per crossing") {
  // a (dev0, 1 s) -> b (dev1, 1 s) and c (dev0, 1 s); d (dev0, 1 s) joins b and c.
  auto g = make_graph({syn("a", {}, 1e12, 1e9), syn("b", {"a"}, 1e12, 2e9), syn("c", {"a"}, 1e12, 8),
                       syn("d", {"b", "c"}, 1e12, 8)});
  auto c = mesh(2, 1e12, 1e10, 1e-3);
  auto p = place(g, {{"a", 0}, {"b", 1}, {"c", 0}, {"d", 0}});
  auto r = simulate(g, c, p, cm, sim_options{}.with_trace());
  // a 0–1; a→dev1 1–1.101; b 1.101–2.101; b→dev0 2.101–2.302; d 2.302–3.302.
  CHECK(r.makespan == doctest::Approx(3.302).epsilon(1e-12));
  CHECK(op_event(r, g, "b").start == doctest::Approx(1.101));
  CHECK(op_event(r, g, "c").start == doctest::Approx(1.0));
  CHECK(op_event(r, g, "d").start == doctest::Approx(2.302));
  CHECK(r.busy[1] == doctest::Approx(1.0));
  double moved = 0;
  for (double b : r.link_bytes) moved += b;
  CHECK(moved == doctest::Approx(3e9));
  CHECK(r.event_count == 6);  // 4 ops + 2 transfers
}

TEST_CASE("a tensor needed by several ops on one device crosses once") {
  auto g = make_graph({syn("a", {}, 0, 1e10), syn("b", {"a"}, 1e12, 8), syn("c", {"a"}, 1e12, 8)});
  auto c = mesh(2, 1e12, 1e10, 0);
  auto r = simulate(g, c, place(g, {{"a", 0}, {"b", 1}, {"c", 1}}), cm);
  CHECK(r.makespan == doctest::Approx(3.0));  // transfer 0–1, b 1–2, c 2–3
  double moved = 0;
  for (double b : r.link_bytes) moved += b;
  CHECK(moved == doctest::Approx(1e10));
  // The simple model pays every edge, without contention: same times here, twice the bytes.
  auto s = simulate(g, c, place(g, {{"a", 0}, {"b", 1}, {"c", 1}}), cm,
                    sim_options{}.with_model(sim_model::simple));
  CHECK(s.makespan == doctest::Approx(3.0));
  moved = 0;
  for (double b : s.link_bytes) moved += b;
  CHECK(moved == doctest::Approx(2e10));
}

TEST_CASE("two transfers on one link queue: the second waits for the first") {
  auto g = make_graph({syn("p", {}, 0, 1e10), syn("q", {}, 0, 1e10), syn("z", {"p", "q"}, 1e12, 8)});
  auto c = mesh(2, 1e12, 1e10, 0);
  auto p = place(g, {{"p", 0}, {"q", 0}, {"z", 1}});
  auto r = simulate(g, c, p, cm, sim_options{}.with_trace());
  CHECK(r.makespan == doctest::Approx(3.0));  // transfers 0–1 and 1–2, z 2–3
  std::vector<const trace_event*> tr;
  for (const auto& e : r.events)
    if (e.what == trace_event::kind::transfer) tr.push_back(&e);
  REQUIRE(tr.size() == 2);
  CHECK(tr[0]->start == 0);
  CHECK(tr[1]->start == doctest::Approx(1.0));
  CHECK(tr[0]->where == tr[1]->where);
  // The paper's model has no contention: both arrive at 1, z ends at 2.
  auto s = simulate(g, c, p, cm, sim_options{}.with_model(sim_model::simple));
  CHECK(s.makespan == doctest::Approx(2.0));
}

TEST_CASE("multi-hop transfers hold every link of the route") {
  // d0 - sw - d1 and d0 - sw - d2: two transfers from d0 share the d0→sw link.
  std::vector<device> ds;
  for (int i = 0; i < 3; ++i) ds.push_back({"d" + std::to_string(i), device_kind::gpu, 1e12, 1e12, "h"});
  cluster c("star", ds, {"sw"},
            {{"d0", "sw", 1e10, 0.5, true}, {"d1", "sw", 1e10, 0.5, true}, {"d2", "sw", 1e10, 0.5, true}});
  auto g = make_graph({syn("p", {}, 0, 1e10), syn("q", {}, 0, 1e10), syn("x", {"p"}, 0, 8), syn("y", {"q"}, 0, 8)});
  auto r = simulate(g, c, place(g, {{"p", 0}, {"q", 0}, {"x", 1}, {"y", 2}}), cm, sim_options{}.with_trace());
  // p→d1: 0–2 (1 s latency + 1 s), q→d2 waits for d0→sw: 2–4.
  CHECK(r.makespan == doctest::Approx(4.0));
  CHECK(op_event(r, g, "x").start == doctest::Approx(2.0));
  std::size_t transfer_events = 0;
  for (const auto& e : r.events) transfer_events += e.what == trace_event::kind::transfer;
  CHECK(transfer_events == 4);  // 2 transfers × 2 links
}

TEST_CASE("streams run independent ops of one device concurrently") {
  auto g = make_graph({syn("a", {}, 1e12, 8), syn("b", {}, 1e12, 8), syn("c", {}, 1e12, 8)});
  auto c = mesh(1, 1e12, 1e10, 0);
  auto p = place(g, {{"a", 0}, {"b", 0}, {"c", 0}});
  CHECK(simulate(g, c, p, cm).makespan == doctest::Approx(3.0));
  auto r2 = simulate(g, c, p, cm, sim_options{}.with_streams(2));
  CHECK(r2.makespan == doctest::Approx(2.0));
  CHECK(r2.busy[0] == doctest::Approx(2.0));  // time with at least one op running
  CHECK(simulate(g, c, p, cm, sim_options{}.with_streams(3)).makespan == doctest::Approx(1.0));
  CHECK_THROWS_AS(simulate(g, c, p, cm, sim_options{}.with_streams(0)), error);
}

TEST_CASE("the order priority decides which ready op runs first") {
  auto g = make_graph({syn("x", {}, 1e12, 8), syn("y", {}, 1e12, 8), syn("z", {"y"}, 1e12, 8)});
  auto c = mesh(2, 1e12, 1e10, 0);
  auto opt = sim_options{}.with_trace();
  auto fifo = simulate(g, c, place(g, {{"x", 0}, {"y", 0}, {"z", 1}}), cm, opt);
  CHECK(op_event(fifo, g, "x").start == 0);  // FIFO of readiness: index order at t = 0
  CHECK(op_event(fifo, g, "y").start == doctest::Approx(1.0));
  CHECK(fifo.makespan == doctest::Approx(3.0));
  auto prio = simulate(g, c, place(g, {{"x", 0}, {"y", 0}, {"z", 1}}, {"y", "z", "x"}), cm, opt);
  CHECK(op_event(prio, g, "y").start == 0);
  CHECK(op_event(prio, g, "x").start == doctest::Approx(1.0));
  CHECK(prio.makespan == doctest::Approx(2.0));
  // The simple model is the paper's: FIFO by ready time, ties by op index; the order does not matter.
  auto simple = simulate(g, c, place(g, {{"x", 0}, {"y", 0}, {"z", 1}}, {"y", "z", "x"}), cm,
                         sim_options{}.with_model(sim_model::simple).with_trace());
  CHECK(op_event(simple, g, "x").start == 0);
  CHECK(simple.makespan == doctest::Approx(3.0));
}

TEST_CASE("simple model: ties in exact arithmetic stay ties in floating point") {
  // y is ready at 0.1 + 0.2 (a on gpu1, then a 0.2 s transfer), z at 0.3 (b on gpu0): equal in exact
  // arithmetic, 0.30000000000000004 vs 0.3 in doubles. The paper breaks the tie by op index: y first.
  auto g = make_graph({syn("a", {}, 1e11, 2e9), syn("b", {}, 3e11, 8), syn("y", {"a"}, 1e11, 8),
                       syn("z", {"b"}, 1e11, 8)});
  auto c = mesh(2, 1e12, 1e10, 0);
  auto r = simulate(g, c, place(g, {{"a", 1}, {"b", 0}, {"y", 0}, {"z", 0}}), cm,
                    sim_options{}.with_model(sim_model::simple).with_trace());
  CHECK(op_event(r, g, "y").start < op_event(r, g, "z").start);
  CHECK(r.makespan == doctest::Approx(0.5));
}

TEST_CASE("simple model: a device serves its ready ops first come first served") {
  // gpu0 runs a (0-2 s). "late" (lower op index) is ready at 1 s, "early" at 0.5 s: the paper's
  // queues are FIFO by ready time, so early runs 2-3 and late 3-4 (by index it would be the reverse).
  auto g = make_graph({syn("a", {}, 2e10, 8), syn("p", {}, 1e10, 8), syn("q", {}, 5e9, 8),
                       syn("late", {"p"}, 1e10, 8), syn("early", {"q"}, 1e10, 8)});
  auto c = mesh(3, 1e10, 1e10, 0);
  auto r = simulate(g, c, place(g, {{"a", 0}, {"p", 1}, {"q", 2}, {"late", 0}, {"early", 0}}), cm,
                    sim_options{}.with_model(sim_model::simple).with_trace());
  CHECK(op_event(r, g, "early").start == doctest::Approx(2.0));
  CHECK(op_event(r, g, "late").start == doctest::Approx(3.0));
  CHECK(r.makespan == doctest::Approx(4.0));
}

TEST_CASE("simple model: an op ready at the instant its device frees up was queued first") {
  // At 1 s a ends on gpu0 while b's input (x on gpu1, 0.5 s + a 0.5 s transfer) arrives. The paper
  // handles readiness before completion at equal times: b is queued when a ends and a's consumer c
  // is released, so b runs 1-2 and c 2-3 although c's op index is lower.
  auto g = make_graph({syn("a", {}, 1e10, 8), syn("c", {"a"}, 1e10, 8), syn("x", {}, 5e9, 5e9),
                       syn("b", {"x"}, 1e10, 8)});
  auto c = make_preset("doppler-paper:2");  // 1e10 FLOP/s, 1e10 B/s, no latency
  auto r = simulate(g, c, place(g, {{"a", 0}, {"c", 0}, {"x", 1}, {"b", 0}}), cm,
                    sim_options{}.with_model(sim_model::simple).with_trace());
  CHECK(op_event(r, g, "b").start == doctest::Approx(1.0));
  CHECK(op_event(r, g, "c").start == doctest::Approx(2.0));
  CHECK(r.makespan == doctest::Approx(3.0));
}

TEST_CASE("simple model: with no work at all, an op still waits for its input to arrive") {
  // Every op at 0 FLOPs: the tie grid was 1 s, so v's input (3e9 B, 0.3 s) arriving "at 0" let v
  // start at 0. The grid now counts the transfers too.
  auto g = make_graph({syn("x", {}, 0, 3e9), syn("u", {}, 0, 8), syn("v", {"x"}, 0, 8)});
  auto c = mesh(2, 1e10, 1e10, 0);
  for (sim_model m : {sim_model::simple, sim_model::wc}) {
    auto r = simulate(g, c, place(g, {{"x", 0}, {"u", 1}, {"v", 1}}), cm, sim_options{}.with_model(m).with_trace());
    CHECK(op_event(r, g, "v").start == doctest::Approx(0.3));
    CHECK(r.makespan == doctest::Approx(0.3));
  }
}

TEST_CASE("jitter: off is exact, on is different but deterministic for a seed") {
  auto g = make_graph({syn("a", {}, 1e12, 1e9), syn("b", {"a"}, 1e12, 1e9), syn("c", {"a"}, 1e12, 1e9),
                       syn("d", {"b", "c"}, 1e12, 8)});
  auto c = mesh(2, 1e12, 1e10, 1e-3);
  auto p = place(g, {{"a", 0}, {"b", 1}, {"c", 0}, {"d", 0}});
  double exact = simulate(g, c, p, cm).makespan;
  CHECK(exact == doctest::Approx(3.202));
  CHECK(simulate(g, c, p, cm, sim_options{}.with_jitter(0, 7)).makespan == exact);
  auto a = simulate(g, c, p, cm, sim_options{}.with_jitter(0.3, 7).with_trace());
  auto b = simulate(g, c, p, cm, sim_options{}.with_jitter(0.3, 7).with_trace());
  auto other = simulate(g, c, p, cm, sim_options{}.with_jitter(0.3, 8));
  CHECK(a.makespan != exact);
  CHECK(a.makespan == b.makespan);
  REQUIRE(a.events.size() == b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    CHECK(a.events[i].start == b.events[i].start);
    CHECK(a.events[i].end == b.events[i].end);
  }
  CHECK(other.makespan != a.makespan);
  // Mean of the lognormal factor is 1: over many seeds the mean makespan of a 1-op graph is ~1 s.
  auto one = make_graph({syn("a", {}, 1e12, 8)});
  auto p1 = place(one, {{"a", 0}});
  double sum = 0;
  for (std::uint64_t s = 0; s < 2000; ++s) sum += simulate(one, c, p1, cm, sim_options{}.with_jitter(0.2, s)).makespan;
  CHECK(sum / 2000 == doctest::Approx(1.0).epsilon(0.02));
  CHECK_THROWS_AS(simulate(g, c, p, cm, sim_options{}.with_jitter(-1, 0)), error);
}

TEST_CASE("stragglers multiply op times on their device") {
  auto g = make_graph({syn("a", {}, 1e12, 8), syn("b", {}, 1e12, 8)});
  auto c = mesh(2, 1e12, 1e10, 0);
  auto p = place(g, {{"a", 0}, {"b", 1}});
  CHECK(simulate(g, c, p, cm).makespan == doctest::Approx(1.0));
  auto r = simulate(g, c, p, cm, sim_options{}.with_straggler(1, 2.5));
  CHECK(r.makespan == doctest::Approx(2.5));
  CHECK(r.busy[0] == doctest::Approx(1.0));
  CHECK_THROWS_AS(simulate(g, c, p, cm, sim_options{}.with_straggler(5, 2)), error);
  CHECK_THROWS_AS(simulate(g, c, p, cm, sim_options{}.with_straggler(0, 0)), error);
}

TEST_CASE("bsp waits for each level, wc does not") {
  // dev0: a → c → e (1 s each); dev1: b (3 s). wc: 3 s. bsp: level 0 ends at 3, then c, e: 5 s.
  auto g = make_graph({syn("a", {}, 1e12, 8), syn("b", {}, 3e12, 8), syn("c", {"a"}, 1e12, 8),
                       syn("e", {"c"}, 1e12, 8)});
  auto c = mesh(2, 1e12, 1e10, 0);
  auto p = place(g, {{"a", 0}, {"b", 1}, {"c", 0}, {"e", 0}});
  CHECK(simulate(g, c, p, cm).makespan == doctest::Approx(3.0));
  CHECK(simulate(g, c, p, cm, sim_options{}.with_mode(exec_mode::bsp)).makespan == doctest::Approx(5.0));
  // A level's outgoing transfers are part of it: x (dev0) → y (dev1), 1e10 B at 1e10 B/s.
  auto g2 = make_graph({syn("x", {}, 1e12, 1e10), syn("w", {}, 1e12, 8), syn("y", {"x"}, 1e12, 8),
                        syn("v", {"w"}, 1e12, 8)});
  auto p2 = place(g2, {{"x", 0}, {"w", 1}, {"y", 1}, {"v", 1}});
  // wc: w 0–1, v 1–2 on dev1; x 0–1, transfer 1–2, y 2–3. bsp: level 1 starts at 2: v 2–3, y 3–4.
  CHECK(simulate(g2, c, p2, cm).makespan == doctest::Approx(3.0));
  CHECK(simulate(g2, c, p2, cm, sim_options{}.with_mode(exec_mode::bsp)).makespan == doctest::Approx(4.0));
  CHECK(simulate(g2, c, p2, cm, sim_options{}.with_mode(exec_mode::bsp).with_model(sim_model::simple)).makespan ==
        doctest::Approx(4.0));
}

TEST_CASE("the simple model on a hand example (doppler-paper:2)") {
  auto c = make_preset("doppler-paper:2");  // 1e10 FLOP/s, 1e10 B/s, no latency
  // a (1 s, 2e10 B) on d0 feeds b and c (1 s each) on d1; every edge pays 2 s.
  auto g = make_graph({syn("a", {}, 1e10, 2e10), syn("b", {"a"}, 1e10, 8), syn("c", {"a"}, 1e10, 8)});
  auto p = place(g, {{"a", 0}, {"b", 1}, {"c", 1}});
  auto opt = sim_options{}.with_model(sim_model::simple).with_trace();
  auto r = simulate(g, c, p, cm, opt);
  CHECK(r.makespan == doctest::Approx(5.0));  // a 0–1; b 3–4; c 4–5
  CHECK(op_event(r, g, "b").start == doctest::Approx(3.0));
  // It ignores efficiencies and streams; the wc model does not.
  cost_model slow;
  slow.set_efficiency(op_kind::synthetic, 0.5);
  CHECK(simulate(g, c, p, slow, opt).makespan == doctest::Approx(5.0));
  CHECK(simulate(g, c, p, slow).makespan == doctest::Approx(8.0));  // a 0–2, xfer 2–4, b 4–6, c 6–8
  CHECK(simulate(g, c, p, cm, sim_options{opt}.with_streams(2)).makespan == doctest::Approx(5.0));
}

namespace {

/// A seeded random DAG: each op takes 0–3 inputs from earlier ops, random FLOPs and bytes.
graph random_dag(std::mt19937_64& rng, int n) {
  graph_builder b("random");
  std::uniform_real_distribution<double> flops(0, 2e12), bytes(1, 4e9);
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> in;
    int k = i == 0 ? 0 : static_cast<int>(rng() % 4);
    for (int j = 0; j < k; ++j) in.push_back("o" + std::to_string(rng() % i));
    std::sort(in.begin(), in.end());
    in.erase(std::unique(in.begin(), in.end()), in.end());
    b.add(syn("o" + std::to_string(i), in, rng() % 5 == 0 ? 0.0 : flops(rng), bytes(rng)));
  }
  return std::move(b).build();
}

/// Checks what every wc/bsp run must satisfy, from its trace.
void check_invariants(const graph& g, const cluster& c, const placement& p, const sim_result& r, int streams) {
  std::vector<const trace_event*> op_ev(g.size(), nullptr);
  for (const auto& e : r.events)
    if (e.what == trace_event::kind::op) op_ev[e.id] = &e;
  for (op_index v = 0; v < g.size(); ++v) {
    REQUIRE(op_ev[v] != nullptr);
    CHECK(op_ev[v]->end <= r.makespan);
    CHECK(op_ev[v]->where == p.device[v]);
  }
  for (op_index v = 0; v < g.size(); ++v)
    for (op_index u : g.preds(v)) {
      if (p.device[u] == p.device[v]) {
        CHECK(op_ev[v]->start >= op_ev[u]->end);
        continue;
      }
      // A transfer of u to v's device, after u ended and before v started, on every route link.
      const auto& links = c.route_between(p.device[u], p.device[v]).links;
      for (link_index l : links) {
        bool found = false;
        for (const auto& e : r.events)
          if (e.what == trace_event::kind::transfer && e.id == u && e.dst == p.device[v] && e.where == l)
            found = found || (e.start >= op_ev[u]->end && e.end <= op_ev[v]->start);
        CHECK_MESSAGE(found, "op " << v << " started before input " << u << " arrived");
      }
    }
  // Concurrency per device ≤ streams; a link carries one transfer at a time.
  std::map<std::pair<int, std::uint32_t>, std::vector<std::pair<double, int>>> sweeps;
  for (const auto& e : r.events) {
    auto key = std::make_pair(static_cast<int>(e.what), e.where);
    sweeps[key].push_back({e.start, +1});
    sweeps[key].push_back({e.end, -1});
  }
  for (auto& [key, pts] : sweeps) {
    std::sort(pts.begin(), pts.end());  // at equal times ends (-1) come first
    int live = 0, peak = 0;
    for (auto [t, d] : pts) peak = std::max(peak, live += d);
    CHECK(peak <= (key.first == static_cast<int>(trace_event::kind::op) ? streams : 1));
  }
}

}  // namespace

TEST_CASE("invariants on random DAGs: dependencies, streams, links, lower bound, determinism") {
  std::mt19937_64 rng(42);
  const cluster clusters[] = {mesh(3, 1e12, 1e10, 1e-4), make_preset("p100x4"), make_preset("dgx1-v100")};
  for (int trial = 0; trial < 24; ++trial) {
    const cluster& c = clusters[trial % 3];
    graph g = random_dag(rng, 20 + static_cast<int>(rng() % 80));
    placement p;
    for (op_index v = 0; v < g.size(); ++v) p.device.push_back(static_cast<device_index>(rng() % c.device_count()));
    if (trial % 2) {  // a random topological order: Kahn with random choices
      std::vector<std::uint32_t> indeg(g.size());
      std::vector<op_index> ready;
      for (op_index v = 0; v < g.size(); ++v)
        if ((indeg[v] = static_cast<std::uint32_t>(g.preds(v).size())) == 0) ready.push_back(v);
      while (!ready.empty()) {
        std::swap(ready[rng() % ready.size()], ready.back());
        op_index v = ready.back();
        ready.pop_back();
        p.order.push_back(v);
        for (op_index s : g.succs(v))
          if (--indeg[s] == 0) ready.push_back(s);
      }
    }
    int streams = 1 + static_cast<int>(rng() % 3);
    auto opt = sim_options{}.with_streams(streams).with_trace();
    CAPTURE(trial);
    auto r = simulate(g, c, p, cm, opt);
    check_invariants(g, c, p, r, streams);
    CHECK(r.makespan >= makespan_lower_bound(g, c, cm, opt) * (1 - 1e-12));
    auto bsp = simulate(g, c, p, cm, sim_options{opt}.with_mode(exec_mode::bsp));
    check_invariants(g, c, p, bsp, streams);
    // bsp: no op of level L+1 starts before every op of level ≤ L has ended.
    auto lv = levels(g);
    std::vector<double> level_end(depth(g), 0.0);
    for (const auto& e : bsp.events)
      if (e.what == trace_event::kind::op) level_end[lv[e.id]] = std::max(level_end[lv[e.id]], e.end);
    for (const auto& e : bsp.events)
      if (e.what == trace_event::kind::op && lv[e.id] > 0) CHECK(e.start >= level_end[lv[e.id] - 1]);
    auto simple = simulate(g, c, p, cm, sim_options{opt}.with_model(sim_model::simple));
    CHECK(simple.makespan >= makespan_lower_bound(g, c, cm, sim_options{}.with_model(sim_model::simple)) * (1 - 1e-12));
    // Same seed, same run; the trace's makespan is the last op's end.
    auto j1 = simulate(g, c, p, cm, sim_options{opt}.with_jitter(0.25, trial));
    auto j2 = simulate(g, c, p, cm, sim_options{opt}.with_jitter(0.25, trial));
    check_invariants(g, c, p, j1, streams);
    CHECK(j1.makespan == j2.makespan);
    CHECK(j1.link_bytes == j2.link_bytes);
    CHECK(j1.busy == j2.busy);
    double last = 0;
    for (const auto& e : r.events) last = std::max(last, e.end);
    CHECK(last == r.makespan);
  }
}

TEST_CASE("simulate rejects an invalid placement") {
  auto g = make_graph({syn("a", {}, 1, 8), syn("b", {"a"}, 1, 8)});
  auto c = mesh(2, 1e12, 1e10, 0);
  placement short_p;
  short_p.device = {0};
  CHECK_THROWS_AS(simulate(g, c, short_p, cm), error);
  auto bad_dev = place(g, {{"a", 0}, {"b", 7}});
  CHECK_THROWS_AS(simulate(g, c, bad_dev, cm), error);
  auto bad_order = place(g, {{"a", 0}, {"b", 1}}, {"b", "a"});
  CHECK_THROWS_AS(simulate(g, c, bad_order, cm), error);
  graph empty = graph_builder("e").build();
  CHECK(simulate(empty, c, placement{}, cm).makespan == 0);
}

TEST_CASE("simulate range-checks streams and jitter") {
  auto g = make_graph({syn("a", {}, 1e9, 8), syn("b", {"a"}, 1e9, 8)});
  auto c = mesh(2, 1e12, 1e10, 0);
  auto p = place(g, {{"a", 0}, {"b", 1}});
  auto code_of = [&](sim_options o) {
    try {
      simulate(g, c, p, cm, o);
    } catch (const error& e) {
      return e.code();
    }
    return errc::internal;
  };
  CHECK(code_of(sim_options{}.with_streams(0)) == errc::bad_argument);
  CHECK(code_of(sim_options{}.with_streams(max_streams + 1)) == errc::bad_argument);
  CHECK(code_of(sim_options{}.with_streams(1000000000)) == errc::bad_argument);
  CHECK(code_of(sim_options{}.with_jitter(-0.1, 0)) == errc::bad_argument);
  CHECK(code_of(sim_options{}.with_jitter(max_jitter * 1.01, 0)) == errc::bad_argument);
  CHECK(code_of(sim_options{}.with_jitter(1e300, 0)) == errc::bad_argument);
  CHECK(code_of(sim_options{}.with_jitter(std::nan(""), 0)) == errc::bad_argument);
  CHECK_THROWS_AS(makespan_lower_bound(g, c, cm, sim_options{}.with_streams(max_streams + 1)), error);
  // The limits themselves are fine.
  CHECK(simulate(g, c, p, cm, sim_options{}.with_streams(max_streams)).makespan > 0);
  CHECK(std::isfinite(simulate(g, c, p, cm, sim_options{}.with_jitter(max_jitter, 3)).makespan));
}

TEST_CASE("an op or transfer that would take forever is an error naming the op and device") {
  // The slowest device a cluster accepts (1 FLOP/s, cluster_limits), slowed down 10x: 1e308 FLOPs
  // take 1e309 s = inf.
  auto g = make_graph({syn("a", {}, 1e9, 8), syn("slow-op", {"a"}, 1e308, 8)});
  std::vector<device> ds{{"fast", device_kind::gpu, 1e12, 1e12, "h"}, {"tiny", device_kind::gpu, 1, 1e12, "h"}};
  cluster c("tiny-flops", ds, {}, {{"fast", "tiny", 1e10, 0, true}});
  auto p = place(g, {{"a", 0}, {"slow-op", 1}});
  for (auto model : {sim_model::wc, sim_model::simple}) {
    try {
      simulate(g, c, p, cm, sim_options{}.with_model(model).with_straggler(1, 10));
      FAIL("expected an error");
    } catch (const error& e) {
      CHECK(e.code() == errc::bad_value);
      CHECK(e.reason().find("slow-op") != std::string::npos);
      CHECK(e.reason().find("tiny") != std::string::npos);
    }
  }
  // Finite but past what a trace holds (microseconds past the largest double): the simulation runs,
  // its trace is an error rather than a file with "dur": inf that no JSON reader takes.
  auto huge = make_graph({syn("a", {}, 1e9, 8), syn("slow-op", {"a"}, 1e303, 8)});
  auto r = simulate(huge, c, p, cm, sim_options{}.with_trace());
  CHECK(r.makespan == doctest::Approx(1e303));
  CHECK_THROWS_WITH_AS(chrome_trace(huge, c, r, "simulator"), doctest::Contains("does not fit a trace"), error);
  // 1e308 B there and back at 1 B/s: the graph's total bytes overflow a double, so it is refused
  // when it is built, before the simulator's own check that a sum of transfers is finite.
  CHECK_THROWS_WITH_AS(make_graph({syn("a", {}, 1e9, 1e308), syn("b", {"a"}, 1e9, 1e308), syn("c", {"b"}, 1e9, 8)}),
                       doctest::Contains("past the largest double"), error);
  // With finite totals: a's 9e307 B cross the 1 B/s link d0 -> d1 twice under wc (for b on d1 and,
  // forwarded, for c on d2): each transfer is finite, their sequence is not.
  cluster line3("line3",
                {{"d0", device_kind::gpu, 1e12, 1e12, "h"}, {"d1", device_kind::gpu, 1e12, 1e12, "h"},
                 {"d2", device_kind::gpu, 1e12, 1e12, "h"}},
                {}, {{"d0", "d1", 1, 0, true}, {"d1", "d2", 1, 0, true}});
  auto wide = make_graph({syn("a", {}, 1e9, 9e307), syn("b", {"a"}, 1e9, 8), syn("c", {"a"}, 1e9, 8)});
  CHECK_THROWS_WITH_AS(simulate(wide, line3, place(wide, {{"a", 0}, {"b", 1}, {"c", 2}}), cm),
                       doctest::Contains("not finite"), error);
}

TEST_CASE("chrome trace: one process per device and link, ops and transfers as complete events") {
  auto g = make_graph({syn("a", {}, 1e12, 1e9), syn("b", {"a"}, 1e12, 2e9), syn("c", {"a"}, 1e12, 8),
                       syn("d", {"b", "c"}, 1e12, 8)});
  auto c = mesh(2, 1e12, 1e10, 1e-3);
  auto p = place(g, {{"a", 0}, {"b", 1}, {"c", 0}, {"d", 0}});
  auto r = simulate(g, c, p, cm, sim_options{}.with_trace().with_streams(2));
  auto j = nlohmann::json::parse(chrome_trace(g, c, r, "simulator"));
  CHECK(j["otherData"]["source"] == "simulator");
  CHECK(j["otherData"]["makespan_s"].get<double>() == r.makespan);
  std::map<int, std::string> names;
  int ops = 0, transfers = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") names[e["pid"].get<int>()] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    CHECK(e["ts"].get<double>() >= 0);
    CHECK(e["dur"].get<double>() >= 0);
    CHECK(e["args"].contains("op"));
    CHECK(e["args"].contains("kind"));
    if (e["cat"] == "op") {
      ++ops;
      if (e["args"]["op"] == "d") CHECK(e["ts"].get<double>() == doctest::Approx(2.302e6));
    } else {
      ++transfers;
      CHECK(names[e["pid"].get<int>()].rfind("link ", 0) == 0);
    }
  }
  CHECK(ops == 4);
  CHECK(transfers == 2);
  // Every link has its process, a link that carried nothing too: on 3 devices a and b use one of 6.
  {
    auto c3 = mesh(3, 1e12, 1e10, 1e-3);
    auto g2 = make_graph({syn("a", {}, 1e12, 8), syn("b", {"a"}, 1e12, 8)});
    auto r3 = simulate(g2, c3, place(g2, {{"a", 0}, {"b", 1}}), cm, sim_options{}.with_trace());
    auto j3 = nlohmann::json::parse(chrome_trace(g2, c3, r3, "simulator"));
    int device_rows = 0, link_rows = 0;
    for (const auto& e : j3["traceEvents"])
      if (e["ph"] == "M" && e["name"] == "process_name")
        ++(e["args"]["name"].get<std::string>().rfind("link ", 0) == 0 ? link_rows : device_rows);
    CHECK(device_rows == 3);
    CHECK(link_rows == static_cast<int>(c3.links().size()));
    CHECK(c3.links().size() == 6);
  }
  // Viewers nest the events of one thread: events on one (pid, tid) must not overlap.
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X")
      tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
          {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  for (auto& [track, spans] : tracks) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].first >= spans[i - 1].second - 1e-6);
  }
  CHECK(tracks.size() == 4);  // nothing overlaps here: one thread per device and per link
  // Three concurrent ops on one device go to three threads.
  auto wide = make_graph({syn("x", {}, 1e12, 8), syn("y", {}, 1e12, 8), syn("z", {}, 1e12, 8)});
  auto rw = simulate(wide, c, place(wide, {{"x", 0}, {"y", 0}, {"z", 0}}), cm,
                     sim_options{}.with_trace().with_streams(3));
  std::set<int> tids;
  auto jw = nlohmann::json::parse(chrome_trace(wide, c, rw, "simulator"));
  for (const auto& e : jw["traceEvents"])
    if (e["ph"] == "X") tids.insert(e["tid"].get<int>());
  CHECK(tids.size() == 3);
  CHECK(names.size() == 4);  // 2 devices + the 2 directed links used
  CHECK(names[1] == "d0 (gpu)");
}
