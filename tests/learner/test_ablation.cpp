// Head ablations of the dual policy (issue 5): sel-only (PLC replaced by the cp teacher's device
// rule) and plc-only (SEL replaced by cp's bottom-level order). Checked against a replay in the
// environment, plus log-prob consistency, a few training episodes, checkpoints and refusals.
#include <doppler/learner/curriculum.hpp>
#include <doppler/learner/doppler_placer.hpp>
#include <doppler/learner/env.hpp>
#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::paper;
using learner_fixtures::temp_path;

namespace {

policy_options small(policy_ablation a) {
  return policy_options().with_ablation(a).with_hidden(16).with_steps(2).with_proj(8).with_mlp(16).with_seed(3);
}

/// Replays `p` in a fresh environment; per step, whether the op was the first of the teacher's ops
/// and whether the device was the first of the teacher's devices for that op.
struct replay_result {
  std::size_t teacher_op = 0, teacher_dev = 0, steps = 0;
};
replay_result replay(const problem& pb, const placement& p) {
  assignment_env env(pb.g(), pb.c(), pb.cm(), pb.features(), pb.respect_memory(), pb.transfers(), pb.teacher());
  const std::size_t n_dev = pb.c().device_count();
  std::vector<float> feat(n_dev * device_feature_count);
  std::vector<std::uint8_t> valid(n_dev);
  std::vector<op_index> ops;
  std::vector<device_index> devs;
  replay_result r;
  for (op_index v : p.order) {
    env.teacher_ops(ops);
    r.teacher_op += !ops.empty() && ops.front() == v;
    env.device_features(v, feat, valid);
    env.teacher_devices(v, devs);
    r.teacher_dev += !devs.empty() && devs.front() == p.device[v];
    env.assign(v, p.device[v]);
    ++r.steps;
  }
  return r;
}

}  // namespace

TEST_CASE("ablations parse and print, refused for kinds other than dual") {
  CHECK(parse_policy_ablation("none") == policy_ablation::none);
  CHECK(parse_policy_ablation("sel-only") == policy_ablation::sel_only);
  CHECK(parse_policy_ablation("plc-only") == policy_ablation::plc_only);
  CHECK(policy_ablation_name(policy_ablation::plc_only) == "plc-only");
  CHECK_THROWS_AS(parse_policy_ablation("sel_only"), error);
  CHECK_THROWS_AS(parse_policy_ablation(""), error);
  for (auto k : {policy_kind::joint, policy_kind::placeto, policy_kind::gdp})
    CHECK_THROWS_AS(policy(small(policy_ablation::sel_only).with_kind(k)), error);
  CHECK_NOTHROW(policy(small(policy_ablation::none).with_kind(policy_kind::joint)));
}

TEST_CASE("sel-only puts every op on the teacher device for the order SEL chose, plc-only follows the cp order") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  policy sel(small(policy_ablation::sel_only)), plc(small(policy_ablation::plc_only));
  policy dual(small(policy_ablation::none));
  std::size_t sel_off_order = 0, plc_off_device = 0, dual_off_device = 0;
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    auto ro = rollout_options::sample(seed, 2.0, 0.2);
    ro.teacher = true;
    auto es = sel.rollout(pb, ro);
    REQUIRE(es.steps() == g.size());
    CHECK_NOTHROW(check_placement(es.result, g, c));
    CHECK(es.result.method == "doppler-sel-only");
    auto rs = replay(pb, es.result);
    CHECK(rs.teacher_dev == rs.steps);
    CHECK(es.plc_agree == es.steps());
    sel_off_order += rs.steps - rs.teacher_op;
    CHECK(sel.recompute_log_prob(pb, es) == doctest::Approx(es.log_prob).epsilon(1e-4));

    auto ep = plc.rollout(pb, ro);
    REQUIRE(ep.steps() == g.size());
    CHECK_NOTHROW(check_placement(ep.result, g, c));
    CHECK(ep.result.method == "doppler-plc-only");
    auto rp = replay(pb, ep.result);
    CHECK(rp.teacher_op == rp.steps);
    CHECK(ep.sel_agree == ep.steps());
    plc_off_device += rp.steps - rp.teacher_dev;
    CHECK(plc.recompute_log_prob(pb, ep) == doctest::Approx(ep.log_prob).epsilon(1e-4));

    auto ed = dual.rollout(pb, ro);
    dual_off_device += replay(pb, ed.result).steps - replay(pb, ed.result).teacher_dev;
  }
  // The learned head really chooses (an untrained one sampled at T = 2 leaves the teacher's rule).
  CHECK(sel_off_order > 0);
  CHECK(plc_off_device > 0);
  CHECK(dual_off_device > 0);
  // plc-only's order is cp's whatever the weights: equal across differently seeded policies.
  policy plc2(small(policy_ablation::plc_only).with_seed(11));
  CHECK(plc2.place(pb).order == plc.place(pb).order);
}

TEST_CASE("ablations: with a teacher placement the heuristic head still follows cp's rule, as when it places") {
  // A placement teacher (here every op on gpu0: `single`, which --teacher auto picks where it
  // simulates fastest) sets the imitation labels; it used to replace the ablated head's rule too, so
  // sel-only trained with every op on gpu0 and then placed with cp's minimum-EST devices.
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem plain(g, c, cm), taught(g, c, cm);
  auto all_gpu0 = std::make_shared<placement>();
  all_gpu0->device.assign(g.size(), 0);
  taught.with_teacher(all_gpu0);
  for (auto a : {policy_ablation::sel_only, policy_ablation::plc_only}) {
    CAPTURE(policy_ablation_name(a));
    policy pol(small(a));
    rollout_options greedy;
    greedy.teacher = true;  // labels from the teacher placement, as phase I records them
    const episode trained = pol.rollout(taught, greedy);
    const placement placed = pol.place(plain);
    CHECK(trained.result.device == placed.device);
    CHECK(trained.result.order == placed.order);
  }
  // The teacher placement is one the heuristic heads would not produce: the check can fail.
  policy sel(small(policy_ablation::sel_only));
  const placement placed = sel.place(plain);
  CHECK(std::any_of(placed.device.begin(), placed.device.end(), [](device_index d) { return d != 0; }));
}

TEST_CASE("ablations: the heuristic head adds nothing to the log-probability") {
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  // Same sizes and seed: the same initial weights. Replaying an ablated episode, the dual policy
  // adds the heuristic head's (negative) terms; the ablated one counts only its learned head.
  policy dual(small(policy_ablation::none));
  for (auto a : {policy_ablation::sel_only, policy_ablation::plc_only}) {
    CAPTURE(policy_ablation_name(a));
    policy abl(small(a));
    auto ep = abl.rollout(pb, rollout_options::sample(4, 1.0));
    const double own = abl.recompute_log_prob(pb, ep);
    CHECK(own == doctest::Approx(ep.log_prob).epsilon(1e-4));
    CHECK(dual.recompute_log_prob(pb, ep) < own - 1.0);
  }
  // The losses too: same weights and episodes, the ablated imitation loss (−Σ log π over the
  // teacher's labels) lacks the heuristic head's positive terms, and with zero advantage the
  // REINFORCE loss is −β·entropy of the learned head alone (less negative than dual's).
  for (auto a : {policy_ablation::sel_only, policy_ablation::plc_only}) {
    CAPTURE(policy_ablation_name(a));
    policy abl(small(a)), ref(small(policy_ablation::none));
    auto ro = rollout_options::sample(5, 1.0);
    ro.teacher = true;
    std::vector<episode> eps{abl.rollout(pb, ro)};
    const double l_abl = abl.imitation_update(pb, eps), l_ref = ref.imitation_update(pb, eps);
    CHECK(l_abl > 0);
    CHECK(l_abl < l_ref - 0.1);
    policy abl2(small(a)), ref2(small(policy_ablation::none));
    std::vector<double> zero{0.0};
    const double r_abl = abl2.reinforce_update(pb, eps, zero, 0.99, 1.0),
                 r_ref = ref2.reinforce_update(pb, eps, zero, 0.99, 1.0);
    CHECK(r_abl < 0);
    CHECK(r_abl > r_ref + 0.1);
  }
}

TEST_CASE("ablations train a few episodes, checkpoints keep the ablation, the placer uses the same rule") {
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  for (auto a : {policy_ablation::sel_only, policy_ablation::plc_only}) {
    CAPTURE(policy_ablation_name(a));
    policy pol(small(a).with_seed(5));
    train_options o;
    o.with_il(4).with_rl(4).with_batch(4).with_seed(2).with_model(sim_model::simple);
    auto r = train(pol, pb, o);
    REQUIRE(r.curve.size() == 8);
    for (const auto& row : r.curve) CHECK(std::isfinite(row.loss));
    CHECK_NOTHROW(check_placement(r.best, g, c));
    auto p1 = pol.place(pb);
    auto rr = replay(pb, p1);
    if (a == policy_ablation::sel_only) CHECK(rr.teacher_dev == rr.steps);
    else CHECK(rr.teacher_op == rr.steps);

    const std::string path = temp_path("abl.pt");
    pol.save(path);
    policy back = policy::load(path);
    CHECK(back.options().ablation == a);
    CHECK(back.options().kind == policy_kind::dual);
    auto p2 = back.place(pb);
    CHECK(p2.order == p1.order);
    CHECK(p2.device == p1.device);
    auto placer = make_doppler_placer(path);
    CHECK(placer->name() == "doppler-" + policy_ablation_name(a));
    auto p3 = placer->place(g, c, cm, placer_options{});
    CHECK(p3.device == p1.device);
    std::filesystem::remove(path);
  }
  // A checkpoint without the ablation entry (and a dual one) loads as none.
  policy d(small(policy_ablation::none));
  const std::string path = temp_path("abl_none.pt");
  d.save(path);
  CHECK(policy::load(path).options().ablation == policy_ablation::none);
  std::filesystem::remove(path);
}

TEST_CASE("curriculum: policy.ablation parsed and checked") {
  const std::string path = temp_path("abl_cur.json");
  auto write = [&](const std::string& policy_json) {
    std::ofstream(path) << R"({"format": "doppler-curriculum/1", "policy": )" << policy_json << "}";
  };
  write(R"({"kind": "dual", "ablation": "plc-only"})");
  CHECK(load_curriculum(path).policy.ablation == policy_ablation::plc_only);
  write(R"({"ablation": "sel-only"})");
  CHECK(load_curriculum(path).policy.ablation == policy_ablation::sel_only);
  write(R"({"ablation": "both"})");
  CHECK_THROWS_AS(load_curriculum(path), error);
  write(R"({"kind": "joint", "ablation": "sel-only"})");
  CHECK_THROWS_AS(load_curriculum(path), error);
  std::filesystem::remove(path);
}
