// The sibling device feature (policy_options::sibling): its values against hand-worked ones, the
// network reading it in both the rollout and the batched recomputation, checkpoints and refusals.
#include <doppler/learner/curriculum.hpp>
#include <doppler/learner/env.hpp>
#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::diamond;
using learner_fixtures::paper;
using learner_fixtures::synth;
using learner_fixtures::temp_path;

TEST_CASE("sibling feature: the work on each device of the other inputs of v's consumers, hand-worked") {
  // The diamond a -> {b, c} -> d (compute 2, 1, 3, 1 s; critical path 8 s, the features' time unit).
  graph g = diamond();
  cluster c = make_preset("doppler-paper:2");
  cost_model cm;
  auto f = compute_features(g, c, cm);
  assignment_env env(g, c, cm, f);
  std::vector<float> feat(2 * device_feature_count);
  std::vector<std::uint8_t> valid(2);
  auto sib = [&](int d) { return feat[d * device_feature_count + static_cast<int>(device_feature::sibling_work)] * 8.0; };
  env.device_features(0, feat, valid);  // a: its consumers b and c have no other input
  CHECK(sib(0) == 0.0);
  CHECK(sib(1) == 0.0);
  env.assign(0, 0);
  env.device_features(1, feat, valid);  // b: c, d's other input, is not placed yet
  CHECK(sib(0) == 0.0);
  CHECK(sib(1) == 0.0);
  env.assign(2, 1);
  env.device_features(1, feat, valid);  // b: c's 3 s are on device 1
  CHECK(sib(0) == 0.0);
  CHECK(sib(1) == doctest::Approx(3.0));
  env.assign(1, 0);
  env.device_features(3, feat, valid);  // d: no consumers
  CHECK(sib(0) == 0.0);
  CHECK(sib(1) == 0.0);

  // Counted once per shared consumer: u and v both feed x and y.
  graph_builder b("two-consumers");
  b.add(synth("u", {}, 2e10, 1e10));
  b.add(synth("v", {}, 1e10, 1e10));
  b.add(synth("x", {"u", "v"}, 1e10, 1e10));
  b.add(synth("y", {"u", "v"}, 1e10, 1e10));
  graph g2 = std::move(b).build();
  auto f2 = compute_features(g2, c, cm);
  assignment_env env2(g2, c, cm, f2);
  env2.assign(0, 1);
  env2.device_features(1, feat, valid);
  const double scale = f2.time_scale;
  CHECK(feat[1 * device_feature_count + static_cast<int>(device_feature::sibling_work)] * scale ==
        doctest::Approx(2 * 2.0));
  CHECK(feat[0 * device_feature_count + static_cast<int>(device_feature::sibling_work)] == 0.0f);
}

TEST_CASE("a sibling policy reads one more column, in rollouts and in the batched recomputation") {
  graph g = paper("8gpu_transformer_block.txt");
  cluster c = make_preset("doppler-paper:8");
  cost_model cm;
  problem pb(g, c, cm);
  auto base = policy_options{}.with_hidden(16).with_steps(2);
  auto with = base;
  with.sibling = true;
  CHECK(with.device_inputs() == base.device_inputs() + 1);
  CHECK(with.device_columns().back() == static_cast<int>(device_feature::sibling_work));
  policy plain(base), sibling(with);
  CHECK(sibling.parameter_count() == plain.parameter_count() + static_cast<std::size_t>(base.proj));
  for (auto kind : {policy_kind::dual, policy_kind::joint}) {
    auto o = with;
    o.kind = kind;
    policy pol(o);
    for (std::uint64_t seed : {1, 2}) {
      auto ep = pol.rollout(pb, rollout_options::sample(seed));
      CHECK_NOTHROW(check_placement(ep.result, g, c));
      CHECK(pol.recompute_log_prob(pb, ep) == doctest::Approx(ep.log_prob).epsilon(1e-4));
    }
  }
  // With a hint too: all ten columns, the sibling one last.
  auto both = with;
  both.hint = "metis";
  CHECK(both.device_inputs() == device_feature_count);
  policy hinted(both);
  auto ep = hinted.rollout(pb, rollout_options::sample(3));
  CHECK(hinted.recompute_log_prob(pb, ep) == doctest::Approx(ep.log_prob).epsilon(1e-4));
}

TEST_CASE("a sibling checkpoint keeps the feature, places identically, and the curriculum names the field") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  auto o = policy_options{}.with_hidden(16).with_steps(2);
  o.sibling = true;
  policy pol(o);
  problem pb(g, c, cm);
  train_options t;
  t.il_episodes = 4;
  t.rl_episodes = 4;
  t.batch = 2;
  train(pol, pb, t);
  const std::string path = temp_path("sibling.pt");
  pol.save(path);
  policy back = policy::load(path);
  CHECK(back.options().sibling);
  CHECK(back.place(pb).device == pol.place(pb).device);
  std::filesystem::remove(path);

  auto gdp = o;
  gdp.kind = policy_kind::gdp;
  CHECK_THROWS_AS(policy{gdp}, error);
  auto cur = parse_curriculum(R"({"format": "doppler-curriculum/1", "policy": {"sibling": true}})");
  CHECK(cur.policy.sibling);
  try {
    parse_curriculum(R"({"format": "doppler-curriculum/1", "policy": {"sibling": 1}})", "c.json");
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("policy.sibling") != std::string::npos);
  }
  try {
    parse_curriculum(R"({"format": "doppler-curriculum/1", "policy": {"sibling": true, "kind": "placeto"}})", "c.json");
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("policy.sibling") != std::string::npos);
  }
}
