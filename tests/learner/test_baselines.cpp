// The Placeto-like and GDP-like baselines (policy_kind::placeto, policy_kind::gdp) through the same
// Torch-free API and placer as DOPPLER's dual policy: ops visited in topological order, masking,
// cache consistency, imitation, checkpoints, and REINFORCE finding a known optimum.
#include <doppler/learner/doppler_placer.hpp>
#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/sim.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::paper;
using learner_fixtures::temp_path;

namespace {

policy_options small(policy_kind k) {
  return policy_options().with_kind(k).with_hidden(16).with_steps(2).with_proj(8).with_mlp(16).with_seed(3);
}

using learner_fixtures::brute_force_optimum;
using learner_fixtures::fast_slow;
using learner_fixtures::two_ops;

}  // namespace

TEST_CASE("placeto and gdp parse, print and name their placer") {
  CHECK(parse_policy_kind("placeto") == policy_kind::placeto);
  CHECK(parse_policy_kind("gdp") == policy_kind::gdp);
  CHECK(policy_kind_name(policy_kind::placeto) == "placeto");
  CHECK(policy_kind_name(policy_kind::gdp) == "gdp");
  CHECK(is_baseline(policy_kind::gdp));
  CHECK_FALSE(is_baseline(policy_kind::joint));
}

TEST_CASE("placeto / gdp: ops in topological order, only valid devices, complete placements, batched = cached") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  for (auto kind : {policy_kind::placeto, policy_kind::gdp}) {
    CAPTURE(policy_kind_name(kind));
    policy pol(small(kind));
    for (std::uint64_t seed = 0; seed < 2; ++seed) {
      auto ep = pol.rollout(pb, rollout_options::sample(seed, 2.0, 0.2));
      REQUIRE(ep.steps() == g.size());
      CHECK_NOTHROW(check_placement(ep.result, g, c));
      CHECK(ep.result.method == "doppler-" + policy_kind_name(kind));
      CHECK(std::equal(ep.result.order.begin(), ep.result.order.end(), g.topo_order().begin(), g.topo_order().end()));
      for (std::size_t t = 0; t < ep.steps(); ++t) {
        CHECK(ep.ready_off[t + 1] - ep.ready_off[t] == 1);
        CHECK(ep.dev_valid[t * c.device_count() + ep.result.device[ep.result.order[t]]] == 1);
      }
      CHECK(std::isfinite(ep.log_prob));
      CHECK(ep.log_prob < 0);
      CHECK(pol.recompute_log_prob(pb, ep) == doctest::Approx(ep.log_prob).epsilon(1e-4));
    }
    auto a = pol.place(pb), b = pol.place(pb);
    CHECK(a.device == b.device);
    CHECK(pol.rollout(pb, rollout_options::sample(5)).result.device !=
          pol.rollout(pb, rollout_options::sample(6)).result.device);
  }
}

TEST_CASE("placeto / gdp never pick a device without room, no room anywhere is infeasible") {
  cluster c("tight", {{"g0", device_kind::gpu, 1e10, 1e15, "h"}, {"g1", device_kind::gpu, 1e10, 1, "h"}}, {},
            {{"g0", "g1", 1e10, 0, true}});
  cluster none("none", {{"g0", device_kind::gpu, 1e10, 1, "h"}, {"g1", device_kind::gpu, 1e10, 1, "h"}}, {},
               {{"g0", "g1", 1e10, 0, true}});
  graph g = paper("chain_mm_112nodes.txt");
  cost_model cm;
  problem pb(g, c, cm), pb2(g, none, cm);
  for (auto kind : {policy_kind::placeto, policy_kind::gdp}) {
    CAPTURE(policy_kind_name(kind));
    policy pol(small(kind));
    for (std::uint64_t seed = 0; seed < 2; ++seed) {
      auto ep = pol.rollout(pb, rollout_options::sample(seed, 10.0, 0.5));
      CHECK(std::all_of(ep.result.device.begin(), ep.result.device.end(), [](device_index d) { return d == 0; }));
    }
    try {
      pol.rollout(pb2);
      FAIL("expected infeasible");
    } catch (const error& e) {
      CHECK(e.code() == errc::infeasible);
    }
  }
}

TEST_CASE("placeto / gdp: imitation raises agreement, checkpoint round trip, the doppler-<kind> placer") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  for (auto kind : {policy_kind::placeto, policy_kind::gdp}) {
    CAPTURE(policy_kind_name(kind));
    policy pol(small(kind).with_seed(5));
    const double before = teacher_agreement(pol, pb).both;
    train_options o;
    o.with_il(32).with_rl(8).with_batch(4).with_seed(2).with_model(sim_model::simple);
    auto r = train(pol, pb, o);
    MESSAGE(policy_kind_name(kind) << ": teacher agreement " << before << " -> " << r.final_agreement
                                   << ", imitation loss " << r.curve.front().loss << " -> " << r.curve[31].loss);
    REQUIRE(r.curve.size() == 40);
    CHECK(r.curve.front().phase == "il");
    CHECK(r.curve.back().phase == "rl");
    for (const auto& row : r.curve) CHECK(std::isfinite(row.loss));
    CHECK(r.final_sel_agreement == 1.0);  // the visited op is the teacher's op by construction
    CHECK(r.final_agreement > before);
    CHECK(r.lower_bound <= r.best_makespan);
    CHECK_NOTHROW(check_placement(r.best, g, c));

    const std::string path = temp_path(policy_kind_name(kind) + ".pt");
    pol.save(path);
    policy back = policy::load(path);
    CHECK(back.options().kind == kind);
    CHECK(back.parameter_count() == pol.parameter_count());
    auto p1 = pol.place(pb);
    CHECK(back.place(pb).device == p1.device);
    auto placer = make_doppler_placer(path);
    CHECK(placer->name() == "doppler-" + policy_kind_name(kind));
    auto p2 = placer->place(g, c, cm, placer_options{});
    CHECK(p2.device == p1.device);
    CHECK(p2.method == "doppler-" + policy_kind_name(kind));
    std::filesystem::remove(path);
  }
}

TEST_CASE("placeto / gdp (and dual): REINFORCE finds the optimal placement of a tiny graph") {
  graph g = two_ops();
  cluster c = fast_slow();
  cost_model cm;
  problem pb(g, c, cm);
  train_options o;
  o.with_il(0).with_rl(96).with_batch(8).with_seed(1).with_model(sim_model::simple);
  const double optimum = brute_force_optimum(g, c, cm, o.sim);
  REQUIRE(optimum == doctest::Approx(1.0));
  for (auto kind : {policy_kind::placeto, policy_kind::gdp, policy_kind::dual}) {
    CAPTURE(policy_kind_name(kind));
    policy pol(small(kind).with_seed(2));  // a seed whose initial greedy placement is not optimal
    auto r = train(pol, pb, o);
    CHECK(r.initial_greedy_makespan > optimum + 0.2);  // there is something to learn (this seed)
    MESSAGE(policy_kind_name(kind) << ": greedy " << r.initial_greedy_makespan << " -> " << r.greedy_makespan
                                   << ", optimum " << optimum);
    CHECK(r.best_makespan == doctest::Approx(optimum).epsilon(1e-9));
    CHECK(r.greedy_makespan == doctest::Approx(optimum).epsilon(1e-9));
    CHECK(score(pb, pol.place(pb), o.sim) == doctest::Approx(optimum).epsilon(1e-9));
  }
}

