// The single-policy ablation (policy_kind::joint) through the same Torch-free API and placer as
// DOPPLER's dual policy: valid complete episodes, cache consistency, a few training episodes,
// checkpoint round trip, the `doppler-joint` placer.
#include <doppler/learner/doppler_placer.hpp>
#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::paper;
using learner_fixtures::temp_path;

namespace {

policy_options joint_small() {
  return policy_options().with_kind(policy_kind::joint).with_hidden(16).with_steps(2).with_proj(8).with_mlp(16).with_seed(3);
}

}  // namespace

TEST_CASE("policy kinds parse and print") {
  CHECK(parse_policy_kind("dual") == policy_kind::dual);
  CHECK(parse_policy_kind("joint") == policy_kind::joint);
  CHECK(policy_kind_name(policy_kind::joint) == "joint");
  CHECK_THROWS_AS(parse_policy_kind("placet"), error);
}

TEST_CASE("joint: only ready ops on valid devices, complete episodes, log-probs match the batched form") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  policy pol(joint_small());
  // No SEL head: fewer parameters than the dual policy of the same sizes.
  CHECK(pol.parameter_count() < policy(joint_small().with_kind(policy_kind::dual)).parameter_count());
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    auto ep = pol.rollout(pb, rollout_options::sample(seed, 2.0, 0.2));
    REQUIRE(ep.steps() == g.size());
    CHECK_NOTHROW(check_placement(ep.result, g, c));
    CHECK(ep.result.method == "doppler-joint");
    CHECK(ep.pair_valid.size() == ep.ready.size() * c.device_count());
    for (std::size_t t = 0; t < ep.steps(); ++t) {
      op_index v = ep.result.order[t];
      auto first = ep.ready.begin() + ep.ready_off[t], last = ep.ready.begin() + ep.ready_off[t + 1];
      CHECK(std::find(first, last, v) != last);
      CHECK(ep.dev_valid[t * c.device_count() + ep.result.device[v]] == 1);
    }
    CHECK(std::isfinite(ep.log_prob));
    CHECK(pol.recompute_log_prob(pb, ep) == doctest::Approx(ep.log_prob).epsilon(1e-4));
  }
  auto a = pol.place(pb), b = pol.place(pb);
  CHECK(a.device == b.device);
}

TEST_CASE("joint: a few phase I and II episodes train, checkpoint round trip, the doppler-joint placer") {
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  policy pol(joint_small().with_seed(5));
  const episode before = pol.rollout(pb, rollout_options::sample(9, 1.0, 0.0));  // under the initial weights
  train_options o;
  o.with_il(8).with_rl(8).with_batch(4).with_seed(2).with_model(sim_model::simple);
  auto r = train(pol, pb, o);
  REQUIRE(r.curve.size() == 16);
  // The updates moved the joint network: the same episode is now more or less likely.
  CHECK(std::abs(pol.recompute_log_prob(pb, before) - before.log_prob) > 1e-3);
  CHECK(r.curve.front().phase == "il");
  CHECK(r.curve.back().phase == "rl");
  for (const auto& row : r.curve) CHECK(std::isfinite(row.loss));
  CHECK(r.final_agreement >= 0);
  CHECK(r.lower_bound <= r.best_makespan);
  CHECK_NOTHROW(check_placement(r.best, g, c));

  const std::string path = temp_path("joint.pt");
  pol.save(path);
  policy back = policy::load(path);
  CHECK(back.options().kind == policy_kind::joint);
  CHECK(back.parameter_count() == pol.parameter_count());
  auto p1 = pol.place(pb);
  CHECK(back.place(pb).device == p1.device);
  auto placer = make_doppler_placer(path);
  CHECK(placer->name() == "doppler-joint");
  auto p2 = placer->place(g, c, cm, placer_options{});
  CHECK(p2.device == p1.device);
  CHECK(p2.method == "doppler-joint");
  std::filesystem::remove(path);
}
