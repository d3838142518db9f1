// Planned transfers: the comm planner as the simulator's transfer planner (multicast.hpp,
// transfer_plan.hpp). Hand-checkable: links of 1 MB/s without latency, so a 1 MB chunk takes 1 s a hop.
#include "../runtime/sim_fixtures.hpp"
#include "comm_fixtures.hpp"

#include <doppler/comm/multicast.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/sim.hpp>
#include <doppler/runtime/transfer_plan.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>

using namespace doppler;
using namespace comm_fixtures;

namespace {

op_spec synth(std::string id, std::vector<std::string> inputs, double bytes) {
  return op_spec{std::move(id), op_kind::synthetic, std::move(inputs), {}, {}, 1.0, bytes, ""};
}

/// `a` (4 MB output) on gpu0, consumed by b, c, d on gpu1, gpu2, gpu3.
struct fan_out {
  graph g;
  placement p;
  fan_out() {
    graph_builder b("fan-out");
    b.add(synth("a", {}, 4 * mb));
    b.add(synth("b", {"a"}, 1));
    b.add(synth("c", {"a"}, 1));
    b.add(synth("d", {"a"}, 1));
    g = std::move(b).build();
    p.device = {0, 1, 2, 3};
    p.method = "hand";
  }
};

link_index link_between(const cluster& c, node_index a, node_index b) {
  for (link_index l = 0; l < c.links().size(); ++l)
    if (c.links()[l].src == a && c.links()[l].dst == b) return l;
  FAIL("no link");
  return 0;
}

std::shared_ptr<comm::multicast_planner> planner(const cluster& c, comm::multicast_options o = {}) {
  return std::make_shared<comm::multicast_planner>(std::make_shared<const cluster>(c), o);
}

}  // namespace

TEST_CASE("a tensor consumed on three devices of a line crosses the first link once, in pipelined chunks") {
  cluster c = line(4);
  fan_out f;
  auto mp = planner(c, comm::multicast_options{}.with_chunk_bytes(mb).with_max_chunks(8));
  sim_result direct = simulate(f.g, c, f.p, cost_model{}, sim_options{});
  sim_result planned = simulate(f.g, c, f.p, cost_model{}, sim_options{}.with_transfers(mp).with_trace());
  const link_index l01 = link_between(c, 0, 1), l12 = link_between(c, 1, 2), l23 = link_between(c, 2, 3);
  // direct: three copies of 4 MB start on gpu0 → gpu1
  CHECK(direct.link_bytes[l01] == doctest::Approx(12 * mb));
  CHECK(direct.makespan == doctest::Approx(12.0).epsilon(1e-3));
  // planned: each link carries the tensor once; 4 chunks pipelined over 3 hops: 4 + 2 epochs
  CHECK(planned.link_bytes[l01] == doctest::Approx(4 * mb));
  CHECK(planned.link_bytes[l12] == doctest::Approx(4 * mb));
  CHECK(planned.link_bytes[l23] == doctest::Approx(4 * mb));
  CHECK(planned.makespan == doctest::Approx(6.0).epsilon(1e-3));
  CHECK(planned.makespan <= 0.9 * direct.makespan);
  // the trace has one event per hop: 4 chunks × 3 links
  std::size_t hops = 0;
  for (const auto& e : planned.events) hops += e.what == trace_event::kind::transfer ? 1 : 0;
  CHECK(hops == 12);
  // b, c and d start only once all four chunks of a are on their device (the 4th reaches gpu1 at 4 s)
  std::size_t consumers = 0;
  for (const auto& e : planned.events) {
    if (e.what != trace_event::kind::op || e.where == 0) continue;
    ++consumers;
    double last_chunk = 0;
    for (const auto& t : planned.events)
      if (t.what == trace_event::kind::transfer && c.links()[t.where].dst == e.where)
        last_chunk = std::max(last_chunk, t.end);
    CHECK(last_chunk >= 4.0 - 1e-9);
    CHECK(e.start >= last_chunk);
  }
  CHECK(consumers == 3);
  // each hop moves one chunk: the trace's bytes add up to the links' (it said 4 MB per hop)
  double traced = 0;
  for (const auto& e : planned.events)
    if (e.what == trace_event::kind::transfer) traced += e.bytes;
  CHECK(traced == doctest::Approx(12 * mb));
  const auto doc = nlohmann::json::parse(chrome_trace(f.g, c, planned, "simulator"));
  double in_json = 0;
  for (const auto& ev : doc["traceEvents"])
    if (ev.value("cat", "") == "transfer") in_json += ev["args"]["bytes"].get<double>();
  CHECK(in_json == doctest::Approx(12 * mb));

  // the plan itself: every chunk leaves gpu0 once, toward gpu1; gpu1 and gpu2 forward
  device_index dsts[] = {1, 2, 3};
  auto tp = mp->plan(0, dsts, 4 * mb);
  REQUIRE(tp);
  CHECK(tp->chunks == 4);
  for (device_index d : dsts) CHECK(tp->chunks_reaching(d) == 4);
  for (const auto& leg : tp->legs) {
    CHECK(leg.to == leg.from + 1);
    CHECK((leg.after < 0) == (leg.from == 0));
  }
  CHECK(mp->hits() >= 1);  // the simulator's request is cached
  CHECK(mp->plan(0, dsts, 4 * mb) == tp);
}

TEST_CASE("bsp mode waits for planned transfers at the barrier") {
  cluster c = line(4);
  fan_out f;
  auto mp = planner(c, comm::multicast_options{}.with_chunk_bytes(mb));
  sim_result r =
      simulate(f.g, c, f.p, cost_model{}, sim_options{}.with_mode(exec_mode::bsp).with_transfers(mp).with_trace());
  CHECK(r.makespan == doctest::Approx(6.0).epsilon(1e-3));
  // The makespan alone would not tell bsp from wc (the last chunk arrives at 6 either way): under wc
  // b starts on gpu1 when its 4th chunk is there (4), under bsp after the level's last arrival (6).
  sim_result wc = simulate(f.g, c, f.p, cost_model{}, sim_options{}.with_transfers(mp).with_trace());
  auto start_of_b = [&](const sim_result& res) {
    for (const auto& e : res.events)
      if (e.what == trace_event::kind::op && f.g[e.id].id == "b") return e.start;
    FAIL("no event of op b");
    return -1.0;
  };
  CHECK(start_of_b(wc) == doctest::Approx(4.0).epsilon(1e-3));
  CHECK(start_of_b(r) >= 6.0 - 1e-6);
}

TEST_CASE("planned hops are copies for host-core sharing too") {
  cluster c = line(4);
  fan_out f;
  auto mp = planner(c, comm::multicast_options{}.with_chunk_bytes(mb));
  // ops of 1 FLOP on 1e12 FLOP/s devices: the copies alone decide; with one host core, ops that
  // overlap a copy slow down, and the run still completes with every op (the copy count balances)
  cost_model one_core;
  one_core.set_host_cores(1);
  sim_result shared = simulate(f.g, c, f.p, one_core, sim_options{}.with_transfers(mp).with_trace());
  sim_result free = simulate(f.g, c, f.p, cost_model{}, sim_options{}.with_transfers(mp));
  std::size_t ops = 0;
  for (const auto& e : shared.events) ops += e.what == trace_event::kind::op ? 1 : 0;
  CHECK(ops == 4);
  CHECK(shared.makespan >= free.makespan);
  CHECK(shared.makespan == doctest::Approx(6.0).epsilon(1e-3));  // the ops are tiny next to the hops
}

TEST_CASE("a plan no faster than direct copies is not used") {
  cluster c = line(4);
  fan_out f;
  // one chunk: store-and-forward takes 3 hops = 3 × 4 s, no better than 3 copies on the first link
  auto mp = planner(c, comm::multicast_options{}.with_chunk_bytes(8 * mb));
  device_index dsts[] = {1, 2, 3};
  CHECK(mp->plan(0, dsts, 4 * mb) == nullptr);
  CHECK(mp->failures() == 0);
  auto kept = planner(c, comm::multicast_options{}.with_chunk_bytes(8 * mb).with_keep_slower());
  auto tp = kept->plan(0, dsts, 4 * mb);
  REQUIRE(tp);
  CHECK(tp->chunks == 1);
}

TEST_CASE("a planner failure falls back to direct copies with the same result") {
  cluster c = line(4);
  fan_out f;
  // ring applies to allgather only: every request fails, is counted, and copies go direct
  auto mp = planner(c, comm::multicast_options{}.with_method("ring").with_chunk_bytes(mb));
  sim_result direct = simulate(f.g, c, f.p, cost_model{}, sim_options{});
  sim_result fallback = simulate(f.g, c, f.p, cost_model{}, sim_options{}.with_transfers(mp));
  CHECK(mp->failures() == 1);
  CHECK(fallback.makespan == direct.makespan);
  CHECK(fallback.link_bytes == direct.link_bytes);
}

TEST_CASE("through a switch: hops collapse into device-to-device legs") {
  cluster c = star(4);
  auto mp = planner(c, comm::multicast_options{}.with_chunk_bytes(mb).with_keep_slower());
  device_index dsts[] = {1, 2, 3};
  auto tp = mp->plan(0, dsts, 4 * mb);
  REQUIRE(tp);
  for (device_index d : dsts) CHECK(tp->chunks_reaching(d) == tp->chunks);
  for (const auto& leg : tp->legs) {
    CHECK(leg.from < 4);
    CHECK(leg.to < 4);
    CHECK(leg.to != 0);
  }
  for (const auto& h : tp->hops) CHECK(h.toward < 4);
}

TEST_CASE("wants_plan and chunk_count") {
  cluster c = line(4);
  device_index one[] = {1}, far[] = {3}, two[] = {1, 2};
  CHECK_FALSE(wants_plan(c, 0, one));  // a direct link
  CHECK(wants_plan(c, 0, far));        // through gpu1 and gpu2
  CHECK(wants_plan(c, 0, two));
  CHECK(chunk_count(4 * mb, mb, 8) == 4);
  CHECK(chunk_count(4 * mb, mb, 2) == 2);
  CHECK(chunk_count(0.5 * mb, mb, 8) == 1);
  CHECK(chunk_count(0, mb, 8) == 1);
}

TEST_CASE("a bad transfer plan is refused naming the hop") {
  cluster c = line(4);
  transfer_plan tp;
  tp.source = 0;
  tp.destinations = {2};
  tp.chunks = 1;
  tp.hops = {{0, link_between(c, 1, 2), -1, 0}};  // gpu1 does not hold the chunk
  expect_error([&] { tp.finish(c); }, errc::bad_argument, "does not hold chunk 0");
  tp.hops = {{0, link_between(c, 0, 1), -1, 0}};  // never reaches gpu2
  expect_error([&] { tp.finish(c); }, errc::bad_argument, "never reaches gpu2");
  tp.hops = {{0, link_between(c, 0, 1), -1, 0}, {0, link_between(c, 1, 2), 0, 0}};
  CHECK_NOTHROW(tp.finish(c));
  CHECK(tp.legs.size() == 2);
  CHECK(tp.legs[1].after == 0);
  tp.destinations = {0};
  expect_error([&] { tp.finish(c); }, errc::bad_argument, "destinations must be distinct");
  // a schedule sending a chunk from a device that never gets it
  comm::demand d = comm::tensor_demand(c, 0, std::vector<device_index>{2}, mb, 1);
  comm::schedule s;
  s.sends = {{0, 1, 2, 0}};
  expect_error([&] { comm::to_transfer_plan(s, d, c); }, errc::bad_argument, "never holds it");
}

TEST_CASE("the simple model refuses planned transfers") {
  cluster c = line(4);
  fan_out f;
  auto mp = planner(c);
  expect_error([&] { simulate(f.g, c, f.p, cost_model{}, sim_options{}.with_model(sim_model::simple).with_transfers(mp)); },
               errc::bad_argument, "need the wc model");
}

TEST_CASE("cp and heft with a transfer planner estimate arrivals by the plan and keep a shared tensor local") {
  // gpu0 - gpu1 - gpu2, links 1 MB/s, gpu1-gpu2 with 0.25 s latency. `a` (4 MB output) feeds c1 (4.5 s),
  // c2 (1.2 s) and e (1 s). Both placers put a and c1 on gpu0 and c2 on gpu1 (arrival 4 s). For e the
  // per-edge EST sees gpu2 at 4.25 s (route time) and sends the tensor there too; but a plan to
  // {gpu1, gpu2} forwards 4 chunks at gpu1 and pays the latency per chunk (gpu2 has them at 6 s), so
  // the planned-aware EST keeps e on gpu0 after c1 (start 4.5 s), which runs faster.
  cluster c("line3-lat", gpus(3), {},
            {{"gpu0", "gpu1", mb, 0, true}, {"gpu1", "gpu2", mb, 0.25, true}});
  graph_builder b("shared-tensor");
  b.add(op_spec{"a", op_kind::synthetic, {}, {}, {}, 1.0, 4 * mb, ""});
  b.add(op_spec{"c1", op_kind::synthetic, {"a"}, {}, {}, 4.5e12, 1, ""});
  b.add(op_spec{"c2", op_kind::synthetic, {"a"}, {}, {}, 1.2e12, 1, ""});
  b.add(op_spec{"e", op_kind::synthetic, {"a"}, {}, {}, 1e12, 1, ""});
  graph g = std::move(b).build();
  const cost_model cm;
  for (const char* method : {"cp", "heft"}) {
    CAPTURE(method);
    auto mp = planner(c, comm::multicast_options{}.with_chunk_bytes(mb).with_max_chunks(8));
    placer_options direct, planned;
    planned.sim.transfers = mp;
    placement pd = make_placer(method)->place(g, c, cm, direct);
    placement pp = make_placer(method)->place(g, c, cm, planned);
    REQUIRE(mp->plan(0, std::vector<device_index>{1, 2}, 4 * mb) != nullptr);
    CHECK(pd.device == std::vector<device_index>{0, 0, 1, 2});  // per-edge: e goes to gpu2
    CHECK(pp.device == std::vector<device_index>{0, 0, 1, 0});  // planned-aware: e stays with its input
    const sim_options run = sim_options{}.with_transfers(mp);
    double md = simulate(g, c, pd, cm, run).makespan, mpl = simulate(g, c, pp, cm, run).makespan;
    CHECK(md == doctest::Approx(7.0).epsilon(1e-6));   // e starts when gpu2 has every chunk (6 s)
    CHECK(mpl == doctest::Approx(5.5).epsilon(1e-6));  // e after c1 on gpu0; c2 ends at 5.2 s
  }
}

TEST_CASE("a tensor too small for the time-expanded network is copied directly, not counted as a failure") {
  // 1 GB/s links with 1 ms latency: 2-byte chunks would make every hop 5e5 epochs (over max_hop_epochs).
  std::vector<link_spec> l{{"gpu0", "gpu1", 1e9, 1e-3, true}, {"gpu1", "gpu2", 1e9, 1e-3, true}};
  cluster c("slow-line3", comm_fixtures::gpus(3), {}, l);
  auto mp = planner(c, comm::multicast_options{}.with_chunk_bytes(mb).with_keep_slower());
  const std::vector<device_index> dsts{1, 2};
  CHECK(mp->plan(0, dsts, 2) == nullptr);
  CHECK(mp->failures() == 0);
  CHECK(mp->plan(0, dsts, 4 * mb) != nullptr);  // large tensors still plan
}

TEST_CASE("the lower bound holds for planned transfers: every placement of a fan-out and join") {
  // a (4 MB) feeds b, c, d, which a sum op joins; on a line of four devices a plan may pipeline a
  // tensor through the middle devices, so the bound counts only what every path into a device pays.
  cluster c = line(4);
  graph_builder b("fan-join");
  b.add(op_spec{"a", op_kind::synthetic, {}, {}, {}, 1e12, 4 * mb, ""});
  for (const char* id : {"b", "c", "d"}) b.add(op_spec{id, op_kind::synthetic, {"a"}, {}, {}, 3e12, mb, ""});
  b.add(op_spec{"sum", op_kind::synthetic, {"b", "c", "d"}, {}, {}, 1e12, 8, ""});
  graph g = std::move(b).build();
  auto mp = planner(c, comm::multicast_options{}.with_chunk_bytes(mb));
  const auto opt = sim_options{}.with_transfers(mp);
  const double bound = makespan_lower_bound(g, c, cost_model{}, opt);
  CHECK(bound <= makespan_lower_bound(g, c, cost_model{}) * (1 + 1e-12));  // planned: a weaker bound
  double best = 1e300;
  std::size_t placements = 0;
  sim_fixtures::each_placement(g, c, [&](const placement& p) {
    best = std::min(best, simulate(g, c, p, cost_model{}, opt).makespan);
    ++placements;
  });
  CHECK(placements == 1024);
  CHECK(best >= bound * (1 - 1e-12));
}
