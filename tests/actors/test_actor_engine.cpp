// End-to-end: placed runs on the actor runtime give the single-device reference outputs, in wc and
// bsp, for several placers on every workload generator; the run's report is consistent.
#include <doppler/actors/engine.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/sim.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

using namespace doppler;

namespace {

workload_params small_params() {
  workload_params p;
  p.dim = 32;
  p.heads = 4;
  p.ffn = 48;
  p.seq = 8;
  p.shards = 2;
  p.experts = 4;
  p.top_k = 2;
  p.matrices = 4;
  p.layers = 2;
  return p;
}

placement place(const std::string& method, const graph& g, const cluster& c) {
  placer_options o;
  o.seed = 7;
  return make_placer(method)->place(g, c, cost_model{}, o);
}

/// Largest |a - b| over every op output, relative to max(1, |reference|).
double worst_diff(const std::vector<tensor>& got, const std::vector<tensor>& ref) {
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    double d = max_abs_diff(got[i], ref[i]);
    double scale = 1;
    for (float v : ref[i].values()) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    worst = std::max(worst, d / scale);
  }
  return worst;
}

}  // namespace

TEST_CASE("every workload, three placers, wc and bsp: outputs equal the reference run") {
  cluster c = make_preset("cpu:4");
  engine e(c, engine_options{}.with_streams(2));
  for (const auto& name : workload_names()) {
    graph g = make_workload(name, small_params());
    auto ref = execute_reference(g, 42);
    for (const char* method : {"cp", "round-robin", "random"}) {
      placement p = place(method, g, c);
      for (exec_mode mode : {exec_mode::wc, exec_mode::bsp}) {
        CAPTURE(name);
        CAPTURE(method);
        CAPTURE(mode == exec_mode::wc ? "wc" : "bsp");
        auto r = e.run(g, p, run_options{}.with_mode(mode).with_seed(42).keep_all());
        REQUIRE(r.outputs.size() == g.size());
        CHECK(worst_diff(r.outputs, ref) <= 1e-5);
        REQUIRE(r.runs.size() == 1);
        CHECK(r.runs[0].makespan > 0);
        CHECK(e.bytes_held() == 0);
      }
    }
  }
}

TEST_CASE("a different seed gives different outputs (the comparison can fail)") {
  cluster c = make_preset("cpu:2");
  engine e(c);
  graph g = make_workload("chainmm", small_params());
  placement p = place("round-robin", g, c);
  auto r = e.run(g, p, run_options{}.with_seed(1).keep_all());
  CHECK(worst_diff(r.outputs, execute_reference(g, 2)) > 1e-3);
  CHECK(worst_diff(r.outputs, execute_reference(g, 1)) <= 1e-5);
}

TEST_CASE("the sharing scheduler computes the same outputs, an unknown scheduler is refused") {
  cluster c = make_preset("cpu:3");
  engine e(c, engine_options{}.with_scheduler("sharing").with_streams(2));
  graph g = make_workload("moe-layer", small_params());
  auto r = e.run(g, place("random", g, c), run_options{}.with_seed(8).keep_all());
  CHECK(worst_diff(r.outputs, execute_reference(g, 8)) <= 1e-5);
  CHECK_THROWS_AS(engine(c, engine_options{}.with_scheduler("fifo")), doppler::error);
}

TEST_CASE("streams outside [1, max_streams] are refused before any worker thread starts") {
  cluster c = make_preset("cpu:2");
  for (int s : {0, -1, max_streams + 1, 1 << 30}) {
    CAPTURE(s);
    CHECK_THROWS_WITH_AS(engine(c, engine_options{}.with_streams(s)), doctest::Contains("streams must be in [1, 256]"),
                         doppler::error);
  }
  graph g = make_workload("ffnn", small_params());
  engine e(c, engine_options{}.with_streams(max_streams));  // the largest accepted count runs
  auto r = e.run(g, place("round-robin", g, c), run_options{}.with_seed(3).keep_all());
  CHECK(worst_diff(r.outputs, execute_reference(g, 3)) <= 1e-5);
}

TEST_CASE("exits only: outputs of the exits, empty tensors elsewhere") {
  cluster c = make_preset("cpu:3");
  engine e(c);
  graph g = make_workload("llama-block", small_params());
  placement p = place("round-robin", g, c);
  auto r = e.run(g, p, run_options{}.with_seed(3));
  auto ref = execute_reference(g, 3);
  for (op_index i = 0; i < g.size(); ++i) {
    CAPTURE(g[i].id);
    if (g.succs(i).empty()) {
      CHECK(bitwise_equal(r.outputs[i], ref[i]));
    } else {
      CHECK(r.outputs[i].empty());
    }
  }
}

TEST_CASE("the report: every op and transfer traced once, bytes and busy time consistent") {
  cluster c = make_preset("cpu:4");
  engine e(c, engine_options{}.with_streams(1));
  graph g = make_workload("llama-block", small_params());
  placement p = place("round-robin", g, c);
  auto r = e.run(g, p, run_options{}.with_repeat(3));
  REQUIRE(r.runs.size() == 3);
  CHECK(r.makespans().size() == 3);
  CHECK(r.min_makespan() <= r.mean_makespan());
  CHECK(r.mean_makespan() <= r.max_makespan());
  const auto& run = r.runs.back();
  std::size_t ops = 0, transfers = 0;
  std::vector<int> seen(g.size(), 0);
  for (const auto& ev : run.events) {
    CHECK(ev.start <= ev.end);
    CHECK(ev.end <= run.makespan + 1e-9);
    if (ev.what == trace_event::kind::op) {
      ++ops;
      ++seen[ev.id];
      CHECK(ev.where == p.device[ev.id]);
    } else {
      ++transfers;
      CHECK(ev.dst != p.device[ev.id]);
    }
  }
  CHECK(ops == g.size());
  for (int s : seen) CHECK(s == 1);
  // transfers: one per (producer, distinct remote consumer device)
  std::size_t expected = 0;
  for (op_index i = 0; i < g.size(); ++i) {
    std::vector<device_index> dsts;
    for (op_index s : g.succs(i))
      if (p.device[s] != p.device[i] && std::find(dsts.begin(), dsts.end(), p.device[s]) == dsts.end())
        dsts.push_back(p.device[s]);
    expected += dsts.size();
  }
  CHECK(transfers == expected);
  CHECK(r.transfers.back() == expected);
  CHECK(r.bytes_moved.back() > 0);
  double link_total = 0;
  for (double b : run.link_bytes) link_total += b;
  CHECK(link_total == doctest::Approx(static_cast<double>(r.bytes_moved.back())));
  // busy: the union of the device's op intervals in the trace (round-robin gives every device ops)
  for (device_index d = 0; d < c.device_count(); ++d) {
    std::vector<std::pair<double, double>> spans;
    for (const auto& ev : run.events)
      if (ev.what == trace_event::kind::op && ev.where == d) spans.emplace_back(ev.start, ev.end);
    REQUIRE_FALSE(spans.empty());
    std::sort(spans.begin(), spans.end());
    double covered = 0, lo = spans.front().first, hi = spans.front().first;
    for (auto [a, b] : spans) {
      if (a > hi) {
        covered += hi - lo;
        lo = a;
      }
      hi = std::max(hi, b);
    }
    covered += hi - lo;
    CHECK(covered > 0);
    CHECK(run.busy[d] == doctest::Approx(covered).epsilon(1e-9));
    CHECK(run.busy[d] <= run.makespan + 1e-9);
  }
  auto json = chrome_trace(g, c, run, "cpu");
  CHECK(json.find("\"cpu\"") != std::string::npos);
}

TEST_CASE("bsp: no op of level L+1 starts before every op of level L ended") {
  cluster c = make_preset("cpu:4");
  engine e(c);
  graph g = make_workload("llama-block", small_params());
  placement p = place("cp", g, c);
  auto r = e.run(g, p, run_options{}.with_mode(exec_mode::bsp));
  std::vector<double> start(g.size()), end(g.size());
  for (const auto& ev : r.runs[0].events)
    if (ev.what == trace_event::kind::op) start[ev.id] = ev.start, end[ev.id] = ev.end;
  // level by level
  std::vector<std::uint32_t> lv(g.size(), 0);
  for (op_index i : g.topo_order())
    for (op_index q : g.preds(i)) lv[i] = std::max(lv[i], lv[q] + 1);
  for (op_index a = 0; a < g.size(); ++a)
    for (op_index b = 0; b < g.size(); ++b)
      if (lv[b] == lv[a] + 1) CHECK(end[a] <= start[b]);
}

TEST_CASE("an invalid placement is rejected before anything runs") {
  cluster c = make_preset("cpu:2");
  engine e(c);
  graph g = make_workload("chainmm", small_params());
  placement p = place("round-robin", g, c);
  p.device[0] = 9;
  CHECK_THROWS_AS(e.run(g, p), doppler::error);
  p.device.pop_back();
  CHECK_THROWS_AS(e.run(g, p), doppler::error);
}

TEST_CASE("emulate: kernels and transfers take at least their modeled time") {
  cluster c = make_preset("cpu:4:flops=1e8");  // slow devices: ms-scale ops
  cost_model cm;
  engine e(c, engine_options{}.with_backend("emulate").with_costs(cm));
  workload_params wp = small_params();
  wp.dim = 64;
  graph g = make_workload("llama-block", wp);
  placement p = place("round-robin", g, c);
  auto r = e.run(g, p, run_options{}.with_repeat(2));
  double bound = makespan_lower_bound(g, c, cm);
  REQUIRE(bound > 1e-3);
  for (double m : r.makespans()) CHECK(m >= 0.99 * bound);
  for (const auto& ev : r.runs.back().events) {
    double want = ev.what == trace_event::kind::op ? cm.op_time(g[ev.id], c[ev.where])
                                                   : c.transfer_time(p.device[ev.id], ev.dst, g[ev.id].bytes);
    CHECK(ev.end - ev.start >= 0.99 * want);
  }
}

TEST_CASE("stragglers: a slowed device's ops take factor x their time, other devices unchanged, bad input refused") {
  // 1e7 FLOP/s: the ops are held for milliseconds each, well above a loaded host's scheduling noise.
  cluster c = make_preset("cpu:2:flops=1e7");
  cost_model cm;
  workload_params wp = small_params();
  wp.dim = 64;
  graph g = make_workload("llama-block", wp);
  placement p = place("round-robin", g, c);
  engine e(c, engine_options{}.with_backend("emulate").with_costs(cm).with_straggler(0, 3.0));
  auto r = e.run(g, p, run_options{}.with_repeat(1));
  std::size_t slowed = 0, plain = 0;
  double plain_took = 0, plain_modeled = 0;
  for (const auto& ev : r.runs.back().events) {
    if (ev.what != trace_event::kind::op) continue;
    const double modeled = cm.op_time(g[ev.id], c[ev.where]);
    // Lower bounds per op (a loaded host makes everything slower, never faster) ...
    if (ev.where == 0) {
      CHECK(ev.end - ev.start >= 0.99 * 3.0 * modeled);
      ++slowed;
    } else {
      CHECK(ev.end - ev.start >= 0.99 * modeled);
      ++plain;
      plain_took += ev.end - ev.start;
      plain_modeled += modeled;
    }
  }
  CHECK(slowed > 0);
  CHECK(plain > 0);
  // ... and the other device, over all its ops, is not slowed (a factor applied to every device would
  // make this 3): its milliseconds of held ops dwarf the host's scheduling noise.
  REQUIRE(plain_modeled > 0);
  MESSAGE("the unslowed device held its ops ", plain_took / plain_modeled, "x their modeled time");
  CHECK(plain_took / plain_modeled < 2.0);
  // Outputs are the inner backend's: a cpu run with a straggler still equals the reference.
  engine cpu(c, engine_options{}.with_straggler(1, 2.0));
  auto out = cpu.run(g, p, run_options{}.keep_all().with_seed(42));
  CHECK(worst_diff(out.outputs, execute_reference(g, 42)) <= 1e-5);
  CHECK_THROWS_AS(engine(c, engine_options{}.with_straggler(2, 2.0)), doppler::error);   // no device 2
  CHECK_THROWS_AS(engine(c, engine_options{}.with_straggler(0, 0.5)), doppler::error);   // faster is not a straggler
  // 1e308 once made the slowed wait's nanoseconds overflow to no wait at all; two factors multiply
  CHECK_THROWS_AS(engine(c, engine_options{}.with_straggler(0, 1e308)), doppler::error);
  CHECK_THROWS_AS(engine(c, engine_options{}.with_straggler(0, 1e4).with_straggler(0, 1e4)), doppler::error);
}

TEST_CASE("null backend: inline ops timed in groups keep per-device order and causality") {
  // bench_dispatch's DAG, smaller: 8 lanes x 40 levels, each op reading its lane's previous op and a
  // neighbour lane's; blocked (2 adjacent lanes per device) and scattered (lane j on device j % 4).
  constexpr int lanes = 8, depth = 40;
  auto id = [](int l, int j) { return "o" + std::to_string(l) + "_" + std::to_string(j); };
  graph_builder b("lanes");
  for (int l = 0; l < depth; ++l)
    for (int j = 0; j < lanes; ++j) {
      op_spec s;
      s.id = id(l, j);
      s.kind = op_kind::synthetic;
      s.flops = 0;
      s.bytes = 4;
      if (l > 0) s.inputs = {id(l - 1, j), id(l - 1, (j + 1) % lanes)};
      b.push(std::move(s));
    }
  graph g = std::move(b).build();
  cluster c = make_preset("cpu:4");
  engine e(c, engine_options{}.with_backend("null"));
  for (bool scattered : {false, true}) {
    CAPTURE(scattered);
    placement p;
    p.device.resize(g.size());
    for (op_index i = 0; i < g.size(); ++i)
      p.device[i] = static_cast<device_index>(scattered ? (i % lanes) % 4 : (i % lanes) / 2);
    auto r = e.run(g, p, run_options{}.keep_all().with_repeat(2));
    REQUIRE(r.runs.size() == 2);
    const auto& run = r.runs.back();
    std::vector<double> start(g.size(), -1), end(g.size(), -1);
    std::vector<std::vector<std::pair<double, double>>> per(c.device_count());
    for (const auto& ev : run.events)
      if (ev.what == trace_event::kind::op) {
        start[ev.id] = ev.start, end[ev.id] = ev.end;
        per[ev.where].emplace_back(ev.start, ev.end);
      }
    for (op_index i = 0; i < g.size(); ++i) {
      CHECK(start[i] >= 0);
      CHECK(start[i] <= end[i]);
      for (op_index q : g.preds(i)) CHECK(end[q] <= start[i] + 1e-12);  // no op starts before its inputs ended
    }
    for (auto& iv : per) {  // one device runs one inline op at a time
      std::sort(iv.begin(), iv.end());
      for (std::size_t k = 1; k < iv.size(); ++k) CHECK(iv[k - 1].second <= iv[k].first + 1e-12);
    }
    CHECK(r.outputs.size() == g.size());
  }
}
