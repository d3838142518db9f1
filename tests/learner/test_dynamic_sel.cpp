// Dynamic SEL (policy_options::dynamic_sel): the per-step features against hand-worked values, the
// rollout's logits against the batched recomputation, checkpoints, imitation, and the refusals.
#include <doppler/learner/curriculum.hpp>
#include <doppler/learner/env.hpp>
#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::paper;
using learner_fixtures::synth;
using learner_fixtures::temp_path;

namespace {

float col(const std::vector<float>& s, std::size_t i, sel_feature k) {
  return s[i * sel_feature_count + static_cast<int>(k)];
}

}  // namespace

TEST_CASE("SEL features: each ready op's lags behind the ready set's first and whether it follows the last op, hand-worked") {
  // a (2 s, output 1 s to send) -> b (1 s); c (1 s) independent. On doppler-paper:2 the critical
  // path is a, its transfer, b: 4 s, the features' time unit.
  graph_builder gb("lag");
  gb.add(synth("a", {}, 2e10, 1e10));
  gb.add(synth("b", {"a"}, 1e10, 1e10));
  gb.add(synth("c", {}, 1e10, 1e10));
  graph g = std::move(gb).build();
  cluster c = make_preset("doppler-paper:2");
  cost_model cm;
  auto f = compute_features(g, c, cm);
  REQUIRE(f.time_scale == doctest::Approx(4.0));
  assignment_env env(g, c, cm, f);
  std::vector<float> s(3 * sel_feature_count, -1.0f);

  env.sel_features(s);  // ready a, c: nothing placed, both could start at 0
  REQUIRE(env.ready().size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(col(s, i, sel_feature::est_lag) == 0.0f);
    CHECK(col(s, i, sel_feature::ready_lag) == 0.0f);
    CHECK(col(s, i, sel_feature::follows_last) == 0.0f);
  }
  env.assign(0, 0);  // a on device 0, 0 .. 2 s
  env.sel_features(s);  // ready b (index 1), c (index 2)
  REQUIRE(env.ready().size() == 2);
  REQUIRE(env.ready()[0] == 1);
  // b: on device 0 at 2 s, on device 1 at 2 + 1 s; its input is done at 2 s. c: device 1 at 0 s.
  CHECK(col(s, 0, sel_feature::est_lag) * 4.0 == doctest::Approx(2.0));
  CHECK(col(s, 0, sel_feature::ready_lag) * 4.0 == doctest::Approx(2.0));
  CHECK(col(s, 0, sel_feature::follows_last) == 1.0f);
  CHECK(col(s, 1, sel_feature::est_lag) == 0.0f);
  CHECK(col(s, 1, sel_feature::ready_lag) == 0.0f);
  CHECK(col(s, 1, sel_feature::follows_last) == 0.0f);
  env.assign(2, 1);  // c on device 1, 0 .. 1 s
  env.sel_features(s);  // only b: no lag; it does not consume c
  REQUIRE(env.ready().size() == 1);
  CHECK(col(s, 0, sel_feature::est_lag) == 0.0f);
  CHECK(col(s, 0, sel_feature::ready_lag) == 0.0f);
  CHECK(col(s, 0, sel_feature::follows_last) == 0.0f);
  std::vector<float> small(0);
  CHECK_THROWS_AS(env.sel_features(small), error);

  // An op without producers starts on the first free device it fits on: x (100 MB) does not fit
  // on the slow device, which is free; the fast one is busy with y until 1/3 s. Time unit: 1 s (x).
  graph_builder eb("entries");
  eb.add(synth("x", {}, 3e10, 1e8));
  eb.add(synth("y", {}, 1e10, 1e6));
  eb.add(synth("z", {}, 1e10, 1e6));
  graph ge = std::move(eb).build();
  cluster fs = learner_fixtures::fast_slow();
  auto fe = compute_features(ge, fs, cm);
  REQUIRE(fe.time_scale == doctest::Approx(1.0));
  assignment_env e2(ge, fs, cm, fe);
  e2.assign(1, 0);  // y on the fast device, 0 .. 1/3 s
  e2.sel_features(s);  // ready x, z
  CHECK(col(s, 0, sel_feature::est_lag) == doctest::Approx(1.0 / 3.0));
  CHECK(col(s, 1, sel_feature::est_lag) == 0.0f);
  assignment_env e3(ge, fs, cm, fe, false);  // memory not respected: x may start on the slow device at 0
  e3.assign(1, 0);
  e3.sel_features(s);
  CHECK(col(s, 0, sel_feature::est_lag) == 0.0f);
}

TEST_CASE("SEL features leave the episode alone: the same steps with and without them give the same schedule") {
  // assign() reuses the EST of the op device_features saw last; sel_features computes others' ESTs
  // in between. Two environments take the same (op, device) steps, one computing SEL's features
  // between device_features and assign at every step (a rollout computes them before both).
  graph g = paper("8gpu_transformer_block.txt");
  cluster c = make_preset("doppler-paper:8");
  cost_model cm;
  auto f = compute_features(g, c, cm);
  assignment_env plain(g, c, cm, f), probed(g, c, cm, f);
  const std::size_t nd = c.device_count();
  std::vector<float> fa(nd * device_feature_count), fb(fa.size()), s;
  std::vector<std::uint8_t> va(nd), vb(nd);
  std::vector<device_index> ta, tb;
  std::size_t step = 0;
  while (!plain.done()) {
    const op_index v = plain.ready()[step % plain.ready().size()];
    plain.device_features(v, fa, va);
    probed.device_features(v, fb, vb);
    CHECK(fa == fb);
    plain.teacher_devices(v, ta);
    probed.teacher_devices(v, tb);
    CHECK(ta == tb);
    s.resize(probed.ready().size() * sel_feature_count);
    probed.sel_features(s);  // between device_features and assign
    const auto d = static_cast<device_index>(step % nd);
    plain.assign(v, va[d] ? d : ta.front());
    probed.assign(v, va[d] ? d : ta.front());
    ++step;
  }
  CHECK(plain.result().device == probed.result().device);
  CHECK(plain.schedule_end() == probed.schedule_end());
}

TEST_CASE("a dynamic-SEL policy: rollout and batched recomputation agree, and it starts as the static SEL") {
  graph g = paper("8gpu_transformer_block.txt");
  cluster c = make_preset("doppler-paper:8");
  cost_model cm;
  problem pb(g, c, cm);
  auto base = policy_options{}.with_hidden(16).with_steps(2).with_seed(4);
  auto with = base;
  with.dynamic_sel = true;
  policy plain(base), dynamic(with);
  CHECK(dynamic.parameter_count() == plain.parameter_count() + static_cast<std::size_t>(base.mlp * sel_feature_count));
  // W_s starts at 0 and every other weight as the static policy's: the same log-probabilities.
  auto a = plain.rollout(pb, rollout_options::sample(7));
  auto b = dynamic.rollout(pb, rollout_options::sample(7));
  CHECK(b.result.order == a.result.order);
  CHECK(b.log_prob == doctest::Approx(a.log_prob).epsilon(1e-4));
  CHECK_FALSE(a.dynamic_sel);
  CHECK(a.sel_feat.empty());
  // Sparse: only the entries with a non-zero feature are listed, ascending; on this graph some are.
  REQUIRE(b.dynamic_sel);
  CHECK(b.sel_feat.size() == b.sel_rows.size() * sel_feature_count);
  CHECK(b.sel_rows.size() > 0);
  CHECK(b.sel_rows.size() < b.ready.size());
  CHECK(std::is_sorted(b.sel_rows.begin(), b.sel_rows.end()));
  for (std::size_t k = 0; k < b.sel_rows.size(); ++k) {
    const float* f = &b.sel_feat[k * sel_feature_count];
    CHECK(std::any_of(f, f + sel_feature_count, [](float x) { return x != 0.0f; }));
  }
  for (auto abl : {policy_ablation::none, policy_ablation::sel_only}) {
    auto o = with;
    o.ablation = abl;
    policy pol(o);
    train_options t;  // a few updates, so W_s is no longer 0
    t.il_episodes = 3;
    t.rl_episodes = 4;
    t.batch = 2;
    train(pol, pb, t);
    for (std::uint64_t seed : {1, 2}) {
      auto ep = pol.rollout(pb, rollout_options::sample(seed));
      CHECK_NOTHROW(check_placement(ep.result, g, c));
      const double lp = pol.recompute_log_prob(pb, ep);
      CHECK(lp == doctest::Approx(ep.log_prob).epsilon(1e-5));
      // The features matter to the recomputation: the same episode with them zeroed is another one.
      auto zeroed = ep;
      std::fill(zeroed.sel_feat.begin(), zeroed.sel_feat.end(), 0.0f);
      CHECK(std::abs(pol.recompute_log_prob(pb, zeroed) - lp) > 1e-3);
      // A row outside the ready entries (a damaged episode) is refused, not read out of bounds.
      REQUIRE_FALSE(ep.sel_rows.empty());
      auto damaged = ep;
      damaged.sel_rows.back() = static_cast<std::uint32_t>(damaged.ready.size());
      CHECK_THROWS_WITH_AS(pol.recompute_log_prob(pb, damaged), doctest::Contains("do not match"), error);
    }
    // An episode recorded without SEL features cannot be recomputed by this policy.
    auto foreign = plain.rollout(pb, rollout_options::sample(3));
    CHECK_THROWS_WITH_AS(pol.recompute_log_prob(pb, foreign), doctest::Contains("no SEL features"), error);
  }
  // With active-search offsets too (added to the per-step logit).
  auto as = with;
  as.active_search = 0.05;
  policy searched(as);
  train_options t;
  t.il_episodes = 2;
  t.rl_episodes = 4;
  t.batch = 2;
  train(searched, pb, t);
  REQUIRE(searched.offset_problems() == 1);
  auto ep = searched.rollout(pb, rollout_options::sample(5));
  CHECK(searched.recompute_log_prob(pb, ep) == doctest::Approx(ep.log_prob).epsilon(1e-4));
}

TEST_CASE("dynamic SEL imitates cp to >= 90%, and its checkpoint keeps the flag and places identically") {
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  auto o = policy_options{}.with_seed(1);
  o.dynamic_sel = true;
  policy pol(o);
  train_options t;
  t.with_il(100).with_rl(0).with_seed(1).with_model(sim_model::simple);
  auto r = train(pol, pb, t);
  CHECK(r.final_sel_agreement >= 0.9);
  CHECK(r.final_agreement >= 0.9);
  const std::string path = temp_path("dynamic-sel.pt");
  pol.save(path);
  policy back = policy::load(path);
  CHECK(back.options().dynamic_sel);
  CHECK(back.place(pb).order == pol.place(pb).order);
  CHECK(back.place(pb).device == pol.place(pb).device);
  std::filesystem::remove(path);
}

TEST_CASE("dynamic SEL needs SEL's head: refused for other kinds and plc-only, in the policy and the curriculum") {
  for (auto kind : {policy_kind::joint, policy_kind::placeto, policy_kind::gdp}) {
    policy_options o;
    o.kind = kind;
    o.dynamic_sel = true;
    CHECK_THROWS_WITH_AS(policy{o}, doctest::Contains("dynamic SEL"), error);
  }
  policy_options plc;
  plc.ablation = policy_ablation::plc_only;
  plc.dynamic_sel = true;
  CHECK_THROWS_WITH_AS(policy{plc}, doctest::Contains("plc-only"), error);
  auto cur = parse_curriculum(R"({"format": "doppler-curriculum/1", "policy": {"dynamic_sel": true}})");
  CHECK(cur.policy.dynamic_sel);
  CHECK_FALSE(parse_curriculum(R"({"format": "doppler-curriculum/1"})").policy.dynamic_sel);
  for (const char* bad : {R"({"format": "doppler-curriculum/1", "policy": {"dynamic_sel": 1}})",
                          R"({"format": "doppler-curriculum/1", "policy": {"dynamic_sel": true, "kind": "joint"}})",
                          R"({"format": "doppler-curriculum/1", "policy": {"dynamic_sel": true, "ablation": "plc-only"}})"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_curriculum(bad, "c.json"), doctest::Contains("policy.dynamic_sel"), error);
  }
}
