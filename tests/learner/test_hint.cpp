// Hint placements (policy_options::hint): the two hint device features against hand-worked values,
// what a hinted policy can imitate that an unhinted one cannot, checkpoints and refusals.
#include <doppler/learner/curriculum.hpp>
#include <doppler/learner/doppler_placer.hpp>
#include <doppler/learner/env.hpp>
#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/sim.hpp>
#include <doppler/runtime/workloads.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::diamond;
using learner_fixtures::paper;
using learner_fixtures::synth;
using learner_fixtures::temp_path;

namespace {

sim_options simple() {
  sim_options so;
  so.model = sim_model::simple;
  return so;
}

}  // namespace

TEST_CASE("hint features: the hint group's work per device and the matched device, hand-worked") {
  graph g = diamond();
  cluster c = make_preset("doppler-paper:2");
  cost_model cm;
  auto f = compute_features(g, c, cm);
  REQUIRE(f.time_scale == doctest::Approx(8));
  placement hint{{0, 1, 1, 0}, {0, 1, 2, 3}, "hand"};  // groups {a, d} and {b, c}
  assignment_env env(g, c, cm, f, true, nullptr, nullptr, &hint), plain(g, c, cm, f);
  std::vector<float> feat(2 * device_feature_count), plain_feat(2 * device_feature_count);
  std::vector<std::uint8_t> valid(2);
  auto same = [&](int d) { return feat[d * device_feature_count + static_cast<int>(device_feature::hint_same)]; };
  auto match = [&](int d) { return feat[d * device_feature_count + static_cast<int>(device_feature::hint_match)]; };
  auto step = [&](op_index v, device_index d) {
    env.device_features(v, feat, valid);
    plain.device_features(v, plain_feat, valid);
    // The other columns do not depend on the hint; without one the hint columns are 0.
    const int hint_cols[] = {static_cast<int>(device_feature::hint_same), static_cast<int>(device_feature::hint_match)};
    for (int dev = 0; dev < 2; ++dev) {
      for (int k = 0; k < device_feature_count; ++k)
        if (k != hint_cols[0] && k != hint_cols[1])
          CHECK(feat[dev * device_feature_count + k] == plain_feat[dev * device_feature_count + k]);
      for (int k : hint_cols) CHECK(plain_feat[dev * device_feature_count + k] == 0.0f);
    }
    return std::pair{d, v};
  };
  // a: nothing matched yet; device 0 is a's hint device itself, device 1 another free one.
  step(0, 1);
  CHECK(same(0) == 0.0f);
  CHECK(same(1) == 0.0f);
  CHECK(match(0) == 0.5f);
  CHECK(match(1) == 0.25f);
  env.assign(0, 1);  // matches hint device 0 to device 1
  plain.assign(0, 1);
  // b (group 1): device 1 is taken by group 0, device 0 is free (not b's own hint device).
  step(1, 0);
  CHECK(match(0) == 0.25f);
  CHECK(match(1) == 0.0f);
  CHECK(same(0) == 0.0f);
  env.assign(1, 0);  // matches hint device 1 to device 0
  plain.assign(1, 0);
  // c (group 1): its group has b's 1 s on device 0, and device 0 is its match.
  step(2, 1);
  CHECK(same(0) == doctest::Approx(1.0 / 8));
  CHECK(same(1) == 0.0f);
  CHECK(match(0) == 1.0f);
  CHECK(match(1) == 0.0f);
  env.assign(2, 1);  // against the hint: c's 3 s of group 1 land on device 1
  plain.assign(2, 1);
  // d (group 0): a's 2 s on device 1, its match.
  step(3, 0);
  CHECK(same(0) == 0.0f);
  CHECK(same(1) == doctest::Approx(2.0 / 8));
  CHECK(match(0) == 0.0f);
  CHECK(match(1) == 1.0f);
  // A hint for another graph is refused.
  placement short_one{{0, 1}, {0, 1}, "hand"};
  CHECK_THROWS_AS(assignment_env(g, c, cm, f, true, nullptr, nullptr, &short_one), error);
  problem pb(g, c, cm);
  CHECK_THROWS_AS(pb.with_hint(std::make_shared<const placement>(short_one)), error);
}

TEST_CASE("a policy with a metis hint imitates metis's FFNN placement, one without cannot") {
  // FFNN's four towers are isomorphic, so without the hint no feature tells which tower a source op
  // belongs to; metis puts each tower on its own device, at the lower bound.
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  train_options t;
  t.il_episodes = 60;
  t.rl_episodes = 0;
  t.batch = 4;
  t.sim = simple();
  auto metis = std::make_shared<const placement>(make_placer("metis")->place(g, c, cm, placer_options{}));
  const double metis_ms = simulate(g, c, *metis, cm, simple()).makespan;
  policy_options small = policy_options{}.with_hidden(16).with_steps(2);
  policy hinted(policy_options(small).with_hint("metis"));
  problem pb(g, c, cm);
  pb.with_teacher(metis);
  REQUIRE(hinted.hint_for(pb) != nullptr);
  CHECK(hinted.hint_for(pb)->device == metis->device);  // the policy's own hint: metis, seed 0
  auto r = train(hinted, pb, t);
  CHECK(r.final_plc_agreement == doctest::Approx(1.0));
  CHECK(r.greedy_makespan == doctest::Approx(metis_ms).epsilon(1e-9));
  policy plain(small);
  problem pb2(g, c, cm);
  pb2.with_teacher(metis);
  auto r2 = train(plain, pb2, t);
  CHECK(r2.final_plc_agreement < 0.9);
  CHECK(r2.greedy_makespan > 1.2 * metis_ms);
  // Batched recomputation equals the rollout's cached log-probability with the hint columns read.
  auto ep = hinted.rollout(pb, rollout_options::sample(3));
  CHECK(hinted.recompute_log_prob(pb, ep) == doctest::Approx(ep.log_prob).epsilon(1e-4));
  // A policy without a hint ignores a problem's hint placement (and hint_for says it reads none).
  problem with_hint(g, c, cm);
  with_hint.with_hint(metis);
  CHECK(plain.hint_for(with_hint) == nullptr);
  CHECK(plain.place(with_hint).device == plain.place(pb2).device);
  // A hint set later replaces the policy's own: the problem gets a new key, nothing stale is kept.
  const auto key = pb.key();
  auto single = std::make_shared<const placement>(make_placer("single")->place(g, c, cm, placer_options{}));
  pb.with_hint(single);
  CHECK(pb.key() != key);
  CHECK(hinted.hint_for(pb) == single.get());
  CHECK(simulate(g, c, hinted.place(pb), cm, simple()).makespan > 1.5 * metis_ms);  // it follows the new hint
}

TEST_CASE("a hinted joint policy: rollouts read the hint columns, the batched recomputation agrees") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  policy pol(policy_options{}.with_hidden(16).with_steps(2).with_kind(policy_kind::joint).with_hint("metis"));
  problem pb(g, c, cm);
  for (std::uint64_t seed : {1, 2}) {
    auto ep = pol.rollout(pb, rollout_options::sample(seed));
    CHECK_NOTHROW(check_placement(ep.result, g, c));
    CHECK(pol.recompute_log_prob(pb, ep) == doctest::Approx(ep.log_prob).epsilon(1e-4));
  }
}

TEST_CASE("hint auto: a graph no candidate can place is an error naming the hint, not a crash") {
  graph_builder b("huge");
  b.add(synth("a", {}, 1e10, 1e18));  // an output larger than any device's memory
  b.add(synth("b", {"a"}, 1e10, 1e3));
  graph g = std::move(b).build();
  cluster c = make_preset("doppler-paper:2");
  cost_model cm;
  policy pol(policy_options{}.with_hidden(8).with_steps(1).with_hint("auto", 50));
  problem pb(g, c, cm);
  try {
    pol.hint_for(pb);
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("hint auto") != std::string::npos);
  }
  policy one(policy_options{}.with_hidden(8).with_steps(1).with_hint("metis"));
  try {
    one.place(pb);
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("hint placer 'metis'") != std::string::npos);
  }
}

TEST_CASE("under wc on the DGX-1, a hinted policy copies search's placement: the same devices and makespan") {
  // The DGX-1's eight identical GPUs differ in their links, so the copy must keep the hint's own
  // device labels (not merely a relabelling), and wc's queues follow SEL's order (the rank input).
  workload_params wp;
  wp.dim = 128;
  wp.seq = 64;
  graph g = make_workload("llama-block", wp);
  cluster c = make_preset("dgx1-v100");
  cost_model cm;
  policy pol(policy_options{}.with_hidden(16).with_steps(2).with_hint("search", 300, sim_model::wc));
  problem pb(g, c, cm);
  const placement hint = *pol.hint_for(pb);
  pb.with_teacher(std::make_shared<const placement>(hint));
  train_options t;
  t.il_episodes = 80;
  t.rl_episodes = 0;
  t.batch = 4;
  t.sim.model = sim_model::wc;
  auto r = train(pol, pb, t);
  CHECK(r.final_plc_agreement == doctest::Approx(1.0));
  CHECK(r.final_sel_agreement > 0.85);
  placement p = pol.place(pb);
  CHECK(p.device == hint.device);
  sim_options so;
  so.model = sim_model::wc;
  CHECK(simulate(g, c, p, cm, so).makespan == doctest::Approx(simulate(g, c, hint, cm, so).makespan));
}

TEST_CASE("a hinted checkpoint keeps its hint, and placing a new graph computes its own") {
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  policy pol(policy_options{}.with_hidden(16).with_steps(2).with_hint("search", 300, sim_model::wc));
  problem pb(g, c, cm);
  train_options t;
  t.il_episodes = 4;
  t.rl_episodes = 4;
  t.batch = 2;
  t.sim = simple();
  train(pol, pb, t);
  const std::string path = temp_path("hint.pt");
  pol.save(path);
  policy back = policy::load(path);
  CHECK(back.options().hint == "search");
  CHECK(back.options().hint_budget == 300);
  CHECK(back.options().hint_model == sim_model::wc);
  problem pb2(g, c, cm);
  CHECK(back.place(pb2).device == pol.place(pb).device);
  // The doppler placer on another graph and cluster: its hint is search's placement of that graph.
  graph g8 = paper("8gpu_transformer_block.txt");
  cluster c8 = make_preset("doppler-paper:8");
  auto placer = make_doppler_placer(path);
  placer_options po;
  po.sim = simple();
  placement p = placer->place(g8, c8, cm, po);
  CHECK_NOTHROW(check_placement(p, g8, c8));
  CHECK(p.method == "doppler");
  std::filesystem::remove(path);
}

TEST_CASE("hints: unknown placers, baselines and a zero budget are refused, the curriculum names the field") {
  CHECK_THROWS_AS(policy(policy_options{}.with_hint("nosuch")), error);
  CHECK_THROWS_AS(policy(policy_options{}.with_hint("metis").with_kind(policy_kind::placeto)), error);
  CHECK_THROWS_AS(policy(policy_options{}.with_hint("metis").with_kind(policy_kind::gdp)), error);
  CHECK_THROWS_AS(policy(policy_options{}.with_hint("search", 0)), error);
  CHECK_NOTHROW(policy(policy_options{}.with_hint("metis").with_kind(policy_kind::joint)));
  auto cur = parse_curriculum(R"({"format": "doppler-curriculum/1", "policy": {"hint": "heft", "hint_budget": 50}})");
  CHECK(cur.policy.hint == "heft");
  CHECK(cur.policy.hint_budget == 50);
  try {
    parse_curriculum(R"({"format": "doppler-curriculum/1", "policy": {"hint": "nosuch"}})", "c.json");
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("policy.hint") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_curriculum(R"({"format": "doppler-curriculum/1", "policy": {"hint": 3}})"), error);
}
