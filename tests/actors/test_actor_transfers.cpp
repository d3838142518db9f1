// Planned transfers on the actor runtime: the comm-planner actor, and a tensor consumed on three
// devices of a line that moves chunk by chunk through the middle devices, arriving intact.
#include <doppler/actors/comm_planner.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/comm/demand.hpp>
#include <doppler/comm/schedule.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include "../fan_out.hpp"

#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

using namespace doppler;
using doppler::testing::cpu_line;
using doppler::testing::fan_out;
using doppler::testing::planned;

namespace {

link_index link_between(const cluster& c, node_index a, node_index b) {
  for (link_index l = 0; l < c.links().size(); ++l)
    if (c.links()[l].src == a && c.links()[l].dst == b) return l;
  FAIL("no link");
  return 0;
}

}  // namespace

TEST_CASE("a tensor for three devices of a line moves through the middle devices once, in chunks, intact") {
  cluster c = cpu_line();
  fan_out f;
  auto ref = execute_reference(f.g, 3);
  const double x_bytes = 64 * 256 * 4;
  engine direct(c);
  engine plan(c, engine_options{}.with_transfers(planned()));
  for (exec_mode mode : {exec_mode::wc, exec_mode::bsp}) {
    CAPTURE(static_cast<int>(mode));
    auto rd = direct.run(f.g, f.p, run_options{}.with_mode(mode).with_seed(3).keep_all());
    auto rp = plan.run(f.g, f.p, run_options{}.with_mode(mode).with_seed(3).keep_all());
    for (op_index i = 0; i < f.g.size(); ++i) {
      CAPTURE(f.g[i].id);
      CHECK(max_abs_diff(rp.outputs[i], ref[i]) <= 1e-6);
      CHECK(max_abs_diff(rd.outputs[i], ref[i]) <= 1e-6);
    }
    CHECK(rp.planned_tensors == 1);
    CHECK(rd.planned_tensors == 0);
    const link_index l01 = link_between(c, 0, 1), l12 = link_between(c, 1, 2);
    CHECK(rd.runs[0].link_bytes[l01] == doctest::Approx(3 * x_bytes));  // three copies leave cpu0
    CHECK(rp.runs[0].link_bytes[l01] == doctest::Approx(x_bytes));      // the tensor crosses once
    CHECK(rp.runs[0].link_bytes[l12] == doctest::Approx(x_bytes));
    // x reaches three devices (planned), and b, c, d come back to cpu0 directly
    CHECK(rp.transfers[0] == 6);
    CHECK(plan.bytes_held() == 0);
  }
}

TEST_CASE("a comm planner that fails falls back to direct copies, outputs unchanged") {
  cluster c = cpu_line();
  fan_out f;
  auto ref = execute_reference(f.g, 5);
  engine e(c, engine_options{}.with_transfers(planned("ring")));  // ring plans allgathers only
  auto r = e.run(f.g, f.p, run_options{}.with_seed(5).keep_all());
  CHECK(r.planned_tensors == 0);
  for (op_index i = 0; i < f.g.size(); ++i) CHECK(max_abs_diff(r.outputs[i], ref[i]) <= 1e-6);
  CHECK(r.runs[0].link_bytes[link_between(c, 0, 1)] == doctest::Approx(3 * 64 * 256 * 4));
}

TEST_CASE("a comm planner slower than the run's wait: direct copies, a warning, no hang") {
  if (!comm::have_solvers()) return;  // needs a solver method that cannot answer within 1 ms
  cluster c = make_preset("dgx1-v100");  // the CPU backend runs it; the topology makes multicasts
  workload_params wp;
  wp.dim = 64;
  wp.heads = 8;
  wp.ffn = 96;
  wp.seq = 8;
  wp.shards = 8;
  graph g = make_workload("llama-layer", wp);
  placement p = make_placer("round-robin")->place(g, c, cost_model{}, placer_options{});
  transfer_options t = planned("telp");  // an LP per tensor: milliseconds each
  t.wait = std::chrono::milliseconds(1);
  t.time_limit = 0.5;
  engine e(c, engine_options{}.with_transfers(t));
  auto ref = execute_reference(g, 9);
  std::ostringstream err;  // the engine's warning goes to stderr
  std::streambuf* was = std::cerr.rdbuf(err.rdbuf());
  run_result r;
  try {
    r = e.run(g, p, run_options{}.with_seed(9).keep_all());
  } catch (...) {
    std::cerr.rdbuf(was);
    throw;
  }
  std::cerr.rdbuf(was);
  CHECK(err.str().find("warning: the comm planner did not answer") != std::string::npos);
  CHECK(r.planned_tensors == 0);  // the answer came too late: every tensor was copied directly
  for (op_index i = 0; i < g.size(); ++i) {
    CAPTURE(g[i].id);
    CHECK(max_abs_diff(r.outputs[i], ref[i]) <= 1e-5);
  }
}

TEST_CASE("bad transfer options are refused") {
  cluster c = cpu_line();
  transfer_options t = planned("no-such-method");
  CHECK_THROWS_AS(engine(c, engine_options{}.with_transfers(t)), doppler::error);
  t = planned();
  t.mode = "sometimes";
  CHECK_THROWS_AS(engine(c, engine_options{}.with_transfers(t)), doppler::error);
}

TEST_CASE("comm-planner actor: cached answers, demand documents, refinement in the background") {
  caf::actor_system_config cfg;
  cfg.set("logger.console", caf::atom("none"));
  cfg.add_message_types<caf::id_block::doppler_actors>();
  caf::actor_system sys{cfg};
  auto c = std::make_shared<const cluster>(cpu_line());
  actors::comm_planner_config pc;
  pc.multicast = comm::multicast_options{}.with_chunk_bytes(16 * 1024).with_time_limit(10);
  if (comm::have_solvers()) pc.refine = "milp";
  auto planner = actors::spawn_comm_planner(sys, c, pc);
  caf::scoped_actor self{sys};
  auto ask = [&](const std::vector<actors::transfer_request>& reqs) {
    actors::transfer_plans out;
    self->request(planner, std::chrono::seconds(30), actors::plan_atom::value, reqs)
        .receive([&](actors::transfer_plans& tp) { out = std::move(tp); },
                 [&](caf::error& err) { FAIL("planner failed: " << sys.render(err)); });
    return out;
  };
  auto stats = [&] {
    std::vector<std::uint64_t> s;
    self->request(planner, std::chrono::seconds(30), actors::stats_atom::value)
        .receive([&](std::vector<std::uint64_t>& v) { s = std::move(v); }, [&](caf::error&) {});
    return s;
  };
  actors::transfer_request req{0, {1, 2, 3}, 65536};
  auto first = ask({req});
  REQUIRE(first.plans.size() == 1);
  REQUIRE(first.plans[0]);
  CHECK(first.plans[0]->method == "greedy");  // answered at once with the fast method
  CHECK(first.plans[0]->chunks == 4);
  auto again = ask({req, actors::transfer_request{0, {1}, 65536}});
  REQUIRE(again.plans.size() == 2);
  CHECK(again.plans[1] == nullptr);  // one destination over a direct link: nothing to plan
  auto s = stats();
  REQUIRE(s.size() == 4);
  CHECK(s[0] >= 1);  // hit
  CHECK(s[1] == 2);  // misses
  CHECK(s[2] == 0);  // failures

  if (comm::have_solvers()) {
    // the MILP replaces the greedy plan (it is at least as fast) once it has solved
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (stats()[3] == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(stats()[3] == 1);
    auto refined = ask({req});
    REQUIRE(refined.plans[0]);
    CHECK(refined.plans[0]->method == "milp");
    CHECK(refined.plans[0]->planned_seconds <= first.plans[0]->planned_seconds);
  }

  // the general service: a demand document in, a schedule document out
  auto d = comm::make_collective(*c, comm::collective::allgather, 1e6);
  std::string sched;
  self->request(planner, std::chrono::seconds(30), actors::plan_atom::value, comm::to_json_text(d, *c))
      .receive([&](std::string& t) { sched = std::move(t); }, [&](caf::error& err) { FAIL(sys.render(err)); });
  comm::schedule parsed = comm::parse_schedule(sched, *c);
  CHECK_FALSE(parsed.sends.empty());
  std::string why;
  self->request(planner, std::chrono::seconds(30), actors::plan_atom::value, std::string("{not json"))
      .receive([&](std::string&) {}, [&](caf::error& err) { why = sys.render(err); });
  CHECK(why.find("comm planner") != std::string::npos);
  self->send_exit(planner, caf::exit_reason::user_shutdown);
}
