// The cost model's optional memory term, per-op overhead and host-core sharing (docs/simulator.md):
// the `doppler-costs/1` fields round-trip, old files keep the FLOP-only model, bad values name their
// field, and the `wc` simulator charges what the fields say.
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/sim.hpp>

#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <string>

using namespace doppler;

namespace {

void expect_bad(const std::string& t, errc code, const std::string& path) {
  CAPTURE(t);
  try {
    cost_model::parse(t, "c.json");
    FAIL("accepted");
  } catch (const error& e) {
    CHECK_MESSAGE(e.code() == code, e.what());
    CHECK_MESSAGE(e.path() == path, e.what());
    CHECK_MESSAGE(std::string(e.what()).find("c.json") != std::string::npos, e.what());
  }
}

/// `n` cpu devices of `flops` FLOP/s on a duplex mesh of `bw` B/s, zero-latency links.
cluster mesh(int n, double flops, double bw = 1e15) {
  std::vector<device> ds;
  for (int i = 0; i < n; ++i) ds.push_back({"d" + std::to_string(i), device_kind::cpu, flops, 1e12, "h"});
  std::vector<link_spec> ls;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) ls.push_back({"d" + std::to_string(i), "d" + std::to_string(j), bw, 0, true});
  return cluster("mesh", std::move(ds), {}, std::move(ls));
}

/// Independent synthetic ops of the given FLOPs, op i on device i.
graph independent(const std::vector<double>& flops) {
  graph_builder b("indep");
  for (std::size_t i = 0; i < flops.size(); ++i)
    b.add(op_spec{"s" + std::to_string(i), op_kind::synthetic, {}, {}, {}, flops[i], 8.0, ""});
  return std::move(b).build();
}

placement one_per_device(std::size_t n) {
  placement p;
  for (std::size_t i = 0; i < n; ++i) p.device.push_back(static_cast<device_index>(i));
  return p;
}

}  // namespace

TEST_CASE("cost model: bandwidth, overhead and host_cores round-trip, old files keep the FLOP-only model") {
  cost_model cm;
  CHECK(cm.overhead() == 0);
  CHECK(cm.host_cores() == 0);
  for (op_kind k : all_op_kinds()) CHECK(cm.bandwidth(k) == 0);

  cm.set_bandwidth(op_kind::slice, 2.5e10).set_bandwidth(op_kind::softmax, 3e9).set_overhead(4e-6).set_host_cores(1.5);
  cost_model back = cost_model::parse(cm.to_json_text());
  for (op_kind k : all_op_kinds()) {
    CHECK(back.bandwidth(k) == cm.bandwidth(k));
    CHECK(back.efficiency(k) == cm.efficiency(k));
  }
  CHECK(back.overhead() == 4e-6);
  CHECK(back.host_cores() == 1.5);
  // The default table writes and reads back as the default table (no memory term anywhere).
  cost_model def = cost_model::parse(cost_model{}.to_json_text());
  for (op_kind k : all_op_kinds()) CHECK(def.bandwidth(k) == 0);
  CHECK(def.overhead() == 0);
  CHECK(def.host_cores() == 0);

  // A file from before these fields: efficiencies only; every op costs what it did.
  cost_model old = cost_model::parse(R"({"format": "doppler-costs/1", "efficiency": {"slice": 1.0, "add": 0.5}})");
  CHECK(old.overhead() == 0);
  CHECK(old.host_cores() == 0);
  device d{"c", device_kind::cpu, 1e10, 1e9, "h"};
  op o;
  o.kind = op_kind::slice;
  o.flops = 0;
  o.bytes = 1e6;
  CHECK(old.op_time(o, d) == 0.0);
  o.kind = op_kind::add;
  o.flops = 1e6;
  CHECK(old.op_time(o, d) == doctest::Approx(1e6 / (1e10 * 0.5)));
}

TEST_CASE("cost model: op time is overhead + max(FLOP term, bytes / bandwidth)") {
  device d{"c", device_kind::cpu, 1e10, 1e9, "h"};
  cost_model cm;
  cm.set_bandwidth(op_kind::slice, 1e9).set_bandwidth(op_kind::add, 1e9);
  op o;
  o.kind = op_kind::slice;  // 0 FLOPs: the memory term alone
  o.flops = 0;
  o.bytes = 2e6;
  CHECK(cm.op_time(o, d) == doctest::Approx(2e-3));
  o.kind = op_kind::add;  // memory term larger: 1e5 / (1e10 × 0.1) = 1e-4 < 2e-3
  o.flops = 1e5;
  CHECK(cm.op_time(o, d) == doctest::Approx(2e-3));
  o.flops = 1e8;  // FLOP term larger: 1e8 / 1e9 = 0.1 s
  CHECK(cm.op_time(o, d) == doctest::Approx(0.1));
  o.kind = op_kind::transpose;  // no bandwidth set: still free
  o.flops = 0;
  CHECK(cm.op_time(o, d) == 0.0);
  cm.set_overhead(1e-3);
  CHECK(cm.op_time(o, d) == doctest::Approx(1e-3));
  o.kind = op_kind::slice;
  CHECK(cm.op_time(o, d) == doctest::Approx(3e-3));
  cm.set_bandwidth(op_kind::slice, 0);  // 0 removes the term
  CHECK(cm.op_time(o, d) == doctest::Approx(1e-3));

  CHECK_THROWS_AS(cm.set_bandwidth(op_kind::add, -1), error);
  CHECK_THROWS_AS(cm.set_overhead(-1e-6), error);
  CHECK_THROWS_AS(cm.set_host_cores(std::numeric_limits<double>::infinity()), error);
  // Absurdly small values were accepted and overflowed the lower bound's sums (inf, printed null).
  CHECK_THROWS_AS(cm.set_efficiency(op_kind::matmul, 1e-300), error);
  CHECK_THROWS_AS(cm.set_bandwidth(op_kind::slice, 1e-300), error);
  CHECK_THROWS_AS(cm.set_host_cores(1e-300), error);
  CHECK_THROWS_AS(cm.set_overhead(1e300), error);
}

TEST_CASE("cost model: bad optional fields name the error class and the JSON path") {
  const std::string head = R"({"format": "doppler-costs/1", "efficiency": {}, )";
  expect_bad(head + R"("bandwidth": [1]})", errc::bad_type, "bandwidth");
  expect_bad(head + R"("bandwidth": {"conv": 1e9}})", errc::unknown_kind, "bandwidth.conv");
  expect_bad(head + R"("bandwidth": {"slice": "fast"}})", errc::bad_type, "bandwidth.slice");
  expect_bad(head + R"("bandwidth": {"slice": -1e9}})", errc::bad_value, "bandwidth.slice");
  expect_bad(head + R"("overhead": "5us"})", errc::bad_type, "overhead");
  expect_bad(head + R"("overhead": -1e-6})", errc::bad_value, "overhead");
  expect_bad(head + R"("host_cores": -2})", errc::bad_value, "host_cores");
  expect_bad(head + R"("host_cores": null})", errc::bad_type, "host_cores");
  // A misspelt field is refused by name (it silently kept the default).
  expect_bad(head + R"("bandwith": {"add": 1e3}})", errc::bad_value, "bandwith");
  expect_bad(head + R"("overhed": 5})", errc::bad_value, "overhed");
}

TEST_CASE("simulator: a slice costs its bytes over the slice bandwidth, plus the overhead") {
  graph_builder b("slice");
  b.input("x", {256, 256});        // 262144 bytes
  b.slice("y", "x", 1, 0, 128);   // 131072 bytes
  b.slice("z", "y", 0, 0, 64);    // 32768 bytes
  graph g = std::move(b).build();
  cluster c = mesh(1, 1e10);
  placement p = one_per_device(1);
  p.device = {0, 0, 0};
  CHECK(simulate(g, c, p, cost_model{}).makespan == 0.0);  // the default model: slices are free
  cost_model cm;
  cm.set_bandwidth(op_kind::slice, 1e9);
  CHECK(simulate(g, c, p, cm).makespan == doctest::Approx((131072.0 + 32768.0) / 1e9));
  cm.set_overhead(1e-5);
  CHECK(simulate(g, c, p, cm).makespan == doctest::Approx((131072.0 + 32768.0) / 1e9 + 3e-5));
  CHECK(makespan_lower_bound(g, c, cm) <= simulate(g, c, p, cm).makespan * (1 + 1e-12));
}

TEST_CASE("simulator: host_cores shares the cores among the ops running on all devices") {
  cluster c4 = mesh(4, 1e9);
  graph g4 = independent({1e9, 1e9, 1e9, 1e9});  // 1 s each
  placement p4 = one_per_device(4);
  cost_model cm;
  CHECK(simulate(g4, c4, p4, cm).makespan == doctest::Approx(1.0));
  cm.set_host_cores(4);
  CHECK(simulate(g4, c4, p4, cm).makespan == doctest::Approx(1.0));
  cm.set_host_cores(2);  // four 1-s ops on two cores
  CHECK(simulate(g4, c4, p4, cm).makespan == doctest::Approx(2.0));
  CHECK(makespan_lower_bound(g4, c4, cm) == doctest::Approx(2.0));
  // The simple model knows nothing of host cores.
  CHECK(simulate(g4, c4, p4, cm, sim_options{}.with_model(sim_model::simple)).makespan == doctest::Approx(1.0));

  // 1, 2, 3 s ops on 3 devices, 2 cores: all at 2/3 speed until the first ends at 1.5 s; the other
  // two (1 and 2 s left) then run at full speed and end at 2.5 s and 3.5 s.
  cluster c3 = mesh(3, 1e9);
  graph g3 = independent({1e9, 2e9, 3e9});
  auto r = simulate(g3, c3, one_per_device(3), cm, sim_options{}.with_trace());
  CHECK(r.makespan == doctest::Approx(3.5));
  std::vector<double> end(3);
  for (const auto& e : r.events)
    if (e.what == trace_event::kind::op) end[e.id] = e.end;
  CHECK(end[0] == doctest::Approx(1.5));
  CHECK(end[1] == doctest::Approx(2.5));
  CHECK(end[2] == doctest::Approx(3.5));
  for (device_index d = 0; d < 3; ++d) CHECK(r.busy[d] == doctest::Approx(end[d]));
  // The same ops in bsp (one level) end at the same times.
  CHECK(simulate(g3, c3, one_per_device(3), cm, sim_options{}.with_mode(exec_mode::bsp)).makespan ==
        doctest::Approx(3.5));
}

TEST_CASE("simulator: with host_cores, a copy in progress takes a core from the running ops") {
  // x (0 s) on d0 sends 1e9 bytes to y (1 s) on d1 over a 1e9 B/s link: the copy runs [0, 1]. z (2 s)
  // on d2 shares the one core with the copy, then with y: 0.5 s done by t = 1, y and z at half speed
  // until y ends at 3, z alone for its last 0.5 s: 3.5 s. (Without the copy's share: 3 s.)
  graph_builder b("copy");
  b.add(op_spec{"x", op_kind::synthetic, {}, {}, {}, 0.0, 1e9, ""});
  b.add(op_spec{"y", op_kind::synthetic, {"x"}, {}, {}, 1e9, 8.0, ""});
  b.add(op_spec{"z", op_kind::synthetic, {}, {}, {}, 2e9, 8.0, ""});
  graph g = std::move(b).build();
  cluster c = mesh(3, 1e9, 1e9);
  placement p = one_per_device(3);
  CHECK(simulate(g, c, p, cost_model{}).makespan == doctest::Approx(2.0));  // no sharing: y ends at 2
  cost_model cm;
  cm.set_host_cores(1);
  CHECK(simulate(g, c, p, cm).makespan == doctest::Approx(3.5));
  CHECK(simulate(g, c, p, cm, sim_options{}.with_mode(exec_mode::bsp)).makespan >= 3.5 - 1e-9);
  cm.set_host_cores(3);  // enough cores for two ops and the copy: the old times
  CHECK(simulate(g, c, p, cm).makespan == doctest::Approx(2.0));
}

TEST_CASE("simulator: memory term, overhead and host_cores keep the invariants on random DAGs") {
  std::mt19937_64 rng(42);
  // Three devices of different speeds on a 1e9 B/s mesh with latency: transfers matter.
  std::vector<device> ds{{"a", device_kind::cpu, 1e9, 1e12, "h"}, {"b", device_kind::cpu, 2e9, 1e12, "h"},
                         {"c", device_kind::cpu, 5e8, 1e12, "h"}};
  std::vector<link_spec> ls{{"a", "b", 1e9, 1e-4, true}, {"a", "c", 1e9, 1e-4, true}, {"b", "c", 1e9, 1e-4, true}};
  cluster c("tri", std::move(ds), {}, std::move(ls));
  for (int trial = 0; trial < 40; ++trial) {
    CAPTURE(trial);
    graph_builder b("dag");
    const int n = 30;
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> in;
      for (int j = 0; j < i; ++j)
        if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) in.push_back("o" + std::to_string(j));
      double flops = std::uniform_real_distribution<double>(0, 2e8)(rng);
      double bytes = std::uniform_real_distribution<double>(1, 5e7)(rng);
      b.add(op_spec{"o" + std::to_string(i), op_kind::synthetic, in, {}, {}, flops, bytes, ""});
    }
    graph g = std::move(b).build();
    placement p;
    for (int i = 0; i < n; ++i) p.device.push_back(std::uniform_int_distribution<device_index>(0, 2)(rng));
    cost_model cm;
    cm.set_bandwidth(op_kind::synthetic, 1e9).set_overhead(1e-3);
    const sim_result free_cores = simulate(g, c, p, cm);
    for (double cores : {0.5, 1.0, 1.5, 2.0, 1e6}) {
      CAPTURE(cores);
      cm.set_host_cores(cores);
      for (exec_mode m : {exec_mode::wc, exec_mode::bsp}) {
        sim_result r = simulate(g, c, p, cm, sim_options{}.with_mode(m).with_trace());
        CHECK(r.makespan >= makespan_lower_bound(g, c, cm) * (1 - 1e-9));
        std::size_t ops = 0;
        for (const auto& e : r.events) ops += e.what == trace_event::kind::op;
        CHECK(ops == g.size());
        for (double busy : r.busy) CHECK(busy <= r.makespan * (1 + 1e-12));
        if (cores >= 1e6 && m == exec_mode::wc) CHECK(r.makespan == doctest::Approx(free_cores.makespan));
      }
    }
  }
}
