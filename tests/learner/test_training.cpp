// Training phases on small paper graphs (seeded): imitation reaches the teacher, REINFORCE improves
// on its initial policy, the curve files are well formed.
#include <doppler/learner/curve.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placer.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <string>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::paper;
using learner_fixtures::temp_path;

namespace {

double mean(const std::vector<train_row>& rows, std::size_t from, std::size_t to) {
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += rows[i].makespan;
  return s / static_cast<double>(to - from);
}

/// FFNN on doppler-paper:4 and metis's placement of it (a teacher placement); built in place, as the
/// problem refers to the graph, cluster and cost model.
struct ffnn_metis {
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  placer_options po;
  std::shared_ptr<const placement> metis = std::make_shared<const placement>(make_placer("metis")->place(g, c, cm, po));
  problem pb{g, c, cm};
};

}  // namespace

TEST_CASE("phase I: imitation drives agreement with cp to >= 95%") {
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  policy pol(policy_options().with_seed(1));
  auto before = teacher_agreement(pol, pb);
  train_options o;
  o.with_il(100).with_rl(0).with_seed(1).with_model(sim_model::simple);
  auto r = train(pol, pb, o);
  CHECK(before.both < 0.6);
  CHECK(r.final_agreement >= 0.95);
  CHECK(r.final_sel_agreement >= 0.95);
  CHECK(r.final_plc_agreement >= 0.95);
  REQUIRE(r.curve.size() == 100);
  CHECK(r.curve.front().phase == "il");
  CHECK(r.curve.back().agreement > r.curve.front().agreement);
  // Following the teacher gives cp's makespan (ties aside) on this graph.
  CHECK(r.greedy_makespan <= 1.05 * r.cp_makespan);
  CHECK(r.greedy_makespan < r.initial_greedy_makespan);
  CHECK(r.lower_bound <= r.best_makespan);
}

TEST_CASE("phase II: REINFORCE improves makespan over its initial policy") {
  graph g = paper("full_transformer_layer_261nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  policy pol(policy_options().with_hidden(32).with_steps(3).with_seed(2));
  train_options o;
  o.with_il(0).with_rl(240).with_batch(4).with_seed(2).with_model(sim_model::simple);
  o.rl_lr = 1e-2;
  o.entropy = o.entropy_final = 0;
  o.temperature = 0.5;
  o.normalize_advantages = true;
  auto r = train(pol, pb, o);
  REQUIRE(r.curve.size() == 240);
  MESSAGE("greedy makespan " << r.initial_greedy_makespan << " -> " << r.greedy_makespan << "; cp "
          << r.cp_makespan << "; sampled mean first 40 " << mean(r.curve, 0, 40) << ", last 40 "
          << mean(r.curve, 200, 240));
  CHECK(r.greedy_makespan < 0.8 * r.initial_greedy_makespan);
  CHECK(r.best_makespan <= r.greedy_makespan);
  for (std::size_t i = 1; i < r.curve.size(); ++i) CHECK(r.curve[i].best <= r.curve[i - 1].best);
  CHECK(r.curve.back().phase == "rl");

  auto csv = curve_csv(r.curve);
  CHECK(csv.rfind("episode,phase,makespan,best,loss,agreement\n", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 241);
  auto svg = curve_svg(r.curve, r.cp_makespan, r.lower_bound, "t<1>");
  CHECK(svg.find("<svg") == 0);
  CHECK(svg.find("t&lt;1&gt;") != std::string::npos);
  CHECK(svg.find("polyline") != std::string::npos);
}

TEST_CASE("advantages: relative to the baseline, normalized by the batch spread, floored") {
  // No normalization: (baseline − cost) / baseline.
  auto raw = reinforce_advantages({90, 110}, 100, false);
  REQUIRE(raw.size() == 2);
  CHECK(raw[0] == doctest::Approx(0.1));
  CHECK(raw[1] == doctest::Approx(-0.1));
  // A spread above the floor: divided by σ / baseline = 10 / 100.
  auto norm = reinforce_advantages({90, 110}, 100, true, 0.01);
  CHECK(norm[0] == doctest::Approx(1.0));
  CHECK(norm[1] == doctest::Approx(-1.0));
  // Costs 1e-5 relative apart, 5% under the baseline: without the floor the offset is amplified
  // 10^4-fold into same-signed advantages; with it they stay bounded by 5% / 1% = 5.
  std::vector<double> close = {95.0, 95.0 + 95e-5};
  auto unfloored = reinforce_advantages(close, 100, true, 0.0);
  auto floored = reinforce_advantages(close, 100, true, 0.01);
  CHECK(unfloored[0] > 1000);
  CHECK(floored[0] == doctest::Approx(0.05 / 0.01));
  CHECK(floored[1] == doctest::Approx((100 - close[1]) / 100 / 0.01));
  // All-equal costs are left unscaled, one episode is never normalized.
  auto equal = reinforce_advantages({95, 95}, 100, true, 0.01);
  CHECK(equal[0] == doctest::Approx(0.05));
  CHECK(reinforce_advantages({80}, 100, true)[0] == doctest::Approx(0.2));
}

TEST_CASE("schedules: each batch's learning rate stands at its first episode over N - 1, as documented") {
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  for (int batch : {1, 4, 8}) {  // 10 episodes: batches start at 0..9, at 0, 4, 8, and at 0, 8: the last at x = 1, 8/9, 8/9
    CAPTURE(batch);
    const double x = batch == 1 ? 1.0 : 8.0 / 9.0;
    train_options o;
    o.with_il(0).with_rl(10).with_batch(batch).with_seed(3).with_model(sim_model::simple);
    o.eval_every = 0;
    policy rl(policy_options().with_hidden(16).with_steps(2).with_seed(3));
    train(rl, pb, o);
    CHECK(rl.learning_rate() == doctest::Approx(o.rl_lr * (1 + (o.lr_final - 1) * x)));
    o.with_il(10).with_rl(0);
    o.il_lr = 0.05;
    policy il(policy_options().with_hidden(16).with_steps(2).with_seed(3));
    train(il, pb, o);
    CHECK(il.learning_rate() == doctest::Approx(o.il_lr * (1 + (o.lr_final - 1) * x)));
  }
}

TEST_CASE("self-imitation: an episode labelled with its own actions, imitated, gains probability") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  policy pol(policy_options().with_hidden(16).with_steps(2).with_proj(8).with_mlp(16).with_seed(3));
  auto ep = pol.rollout(pb, rollout_options::sample(7, 1.0));
  REQUIRE(pol.place(pb).device != ep.result.device);
  auto lab = self_labelled(ep);
  REQUIRE(lab.teacher_op_off.size() == ep.steps() + 1);
  for (std::size_t t = 0; t < ep.steps(); ++t) {
    CHECK(lab.teacher_ops[t] == ep.result.order[t]);
    CHECK(lab.teacher_devs[t] == ep.result.device[ep.result.order[t]]);
  }
  // The labels are exactly the episode's actions: the imitation loss before the first step is
  // −log π(episode) / steps, the log-probability the rollout recorded (at temperature 1).
  pol.set_learning_rate(1e-2);
  std::vector<episode> one{lab};
  const double first = pol.imitation_update(pb, one);
  CHECK(first == doctest::Approx(-ep.log_prob / static_cast<double>(ep.steps())).epsilon(1e-4));
  double last = first;
  for (int k = 0; k < 150; ++k) last = pol.imitation_update(pb, one);
  CHECK(last < 0.8 * first);
  CHECK(pol.recompute_log_prob(pb, ep) > ep.log_prob);
  // In training: the option runs, and a negative count is refused.
  train_options o;
  o.with_il(8).with_rl(16).with_batch(4).with_seed(1).with_model(sim_model::simple);
  o.self_imitation = 2;
  auto r = train(pol, pb, o);
  for (const auto& row : r.curve) CHECK(std::isfinite(row.loss));
  CHECK(r.rl_updates == 4);
  CHECK(r.self_imitation_updates == 4);  // ungated: after every update
  o.self_imitation = -1;
  CHECK_THROWS_AS(train(pol, pb, o), doppler::error);
  o.self_imitation = 0;
  o.self_imitation_gate = true;  // a gate on nothing
  CHECK_THROWS_AS(train(pol, pb, o), doppler::error);
}

TEST_CASE("self-imitation gate: only while the best sample beats the greedy placement") {
  graph g = paper("chain_mm_112nodes.txt");
  cost_model cm;
  auto run = [&](const cluster& c, bool gate) {
    problem pb(g, c, cm);
    policy pol(policy_options().with_hidden(16).with_steps(2).with_proj(8).with_mlp(16).with_seed(3));
    train_options o;
    o.with_il(0).with_rl(64).with_batch(4).with_seed(1).with_model(sim_model::simple);
    o.self_imitation = 2;
    o.self_imitation_gate = gate;
    o.eval_every = 0;
    return train(pol, pb, o);
  };
  // Four devices: the untrained greedy placement is worse than the first batch's best sample, so
  // the gate opens at least once. (How often after that depends on the trajectory, which differs
  // between CPUs' BLAS kernels; not asserted.)
  const cluster c4 = make_preset("doppler-paper:4");
  auto open4 = run(c4, false);
  auto gated4 = run(c4, true);
  REQUIRE(gated4.rl_updates == 16);
  CHECK(open4.self_imitation_updates == 16);
  CHECK(gated4.self_imitation_updates >= 1);
  // One device: every order of the same ops has the same makespan (up to rounding), so no sample
  // ever beats the greedy placement and the gate never opens; ungated, every update imitates.
  const cluster c1 = make_preset("doppler-paper:1");
  auto open1 = run(c1, false);
  auto gated1 = run(c1, true);
  REQUIRE(gated1.rl_updates == 16);
  CHECK(open1.self_imitation_updates == 16);
  CHECK(gated1.self_imitation_updates == 0);
}

TEST_CASE("several problems: batches take turns, the curve is in units of each cp") {
  graph a = paper("ffnn_192nodes.txt"), b = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pa(a, c, cm), pb(b, c, cm);
  const problem* both[] = {&pa, &pb};
  policy pol(policy_options().with_hidden(16).with_steps(2).with_seed(3));
  train_options o;
  o.with_il(8).with_rl(8).with_batch(2).with_seed(3).with_model(sim_model::simple);
  auto r = train(pol, std::span<const problem* const>(both), o);
  REQUIRE(r.curve.size() == 16);
  REQUIRE(r.per_problem.size() == 2);
  for (std::size_t i = 0; i < r.curve.size(); ++i) {
    CAPTURE(i);
    CHECK(r.curve[i].problem == static_cast<int>((i / 2) % 2));  // batches of 2 alternate
    // makespan / cp: between the lower bound's ratio and a few times cp
    CHECK(r.curve[i].makespan > 0.3);
    CHECK(r.curve[i].makespan < 5);
  }
  for (const auto& q : r.per_problem) {
    CHECK(q.cp_makespan > 0);
    CHECK(q.greedy_makespan > 0);
  }
  CHECK(r.per_problem[1].cp_makespan != doctest::Approx(r.per_problem[0].cp_makespan));  // a different graph
  // The curve's best starts from the best initial greedy placement over the problems, in cp units.
  const double initial = std::min(r.per_problem[0].initial_greedy_makespan / r.per_problem[0].cp_makespan,
                                  r.per_problem[1].initial_greedy_makespan / r.per_problem[1].cp_makespan);
  CHECK(r.curve.front().best <= initial);
  CHECK(r.curve.front().best == doctest::Approx(std::min(initial, r.curve.front().makespan)));
  const auto csv = curve_csv(r.curve, true);
  CHECK(csv.rfind("episode,phase,makespan,best,loss,agreement,graph\n", 0) == 0);
  CHECK(csv.find(",1\n") != std::string::npos);
  // One problem: no graph column (the single-graph CSV is unchanged).
  train_options one = o;
  one.with_rl(0).with_il(2);
  CHECK(curve_csv(train(pol, pa, one).curve).rfind("episode,phase,makespan,best,loss,agreement\n", 0) == 0);
}

TEST_CASE("phase III in the library: measured costs drive REINFORCE, on one problem and on several") {
  graph a = paper("ffnn_192nodes.txt"), b = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pa(a, c, cm), pb(b, c, cm);
  const problem* both[] = {&pa, &pb};
  sim_options sim;
  sim.model = sim_model::simple;
  // The "runtime": the simulator in another unit per problem (x7 and x70), so a row that mixed
  // simulated and measured costs, or one problem's unit with another's, would show.
  const double scale[] = {7.0, 70.0};
  struct call {
    std::size_t problem;
    double cost;
  };
  std::vector<call> calls;
  train_options o;
  o.with_il(4).with_rl(4).with_batch(2).with_seed(5).with_model(sim_model::simple);
  o.eval_every = 0;
  o.real_episodes = 8;
  o.real_batch = 4;
  o.measure = [&](std::size_t k, const placement& p) {
    REQUIRE(k < 2);
    REQUIRE(p.device.size() == both[k]->g().size());  // a placement of that problem's graph
    const double ms = scale[k] * score(*both[k], p, sim);
    calls.push_back({k, ms});
    return ms;
  };

  SUBCASE("one problem: before, 8 episodes, after; rows carry the measured makespans") {
    policy pol(policy_options().with_hidden(16).with_steps(2).with_seed(5));
    auto r = train(pol, pa, o);
    REQUIRE(calls.size() == 10);
    // Phase III continues at phase II's final learning rate, as the learner actor's does (its second
    // batch ran at rl_lr x lerp(1, lr_final, 4/7): phase II's schedule restarted).
    CHECK(pol.learning_rate() == doctest::Approx(o.rl_lr * o.lr_final));
    CHECK(r.real_initial_greedy == doctest::Approx(calls.front().cost));
    CHECK(r.real_final_greedy == doctest::Approx(calls.back().cost));
    CHECK(r.per_problem[0].real_initial_greedy == r.real_initial_greedy);
    CHECK(r.per_problem[0].real_cp == 0);  // one problem: rows in the runtime's own unit
    std::vector<train_row> real;
    for (const auto& row : r.curve)
      if (row.phase == "real") real.push_back(row);
    REQUIRE(real.size() == 8);
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < real.size(); ++i) {
      CAPTURE(i);
      CHECK(real[i].makespan == doctest::Approx(calls[1 + i].cost));
      best = std::min(best, real[i].makespan);
      CHECK(real[i].best == doctest::Approx(best));
      CHECK(std::isfinite(real[i].loss));
    }
    // A measured cost that is not a makespan is an error naming the problem, not a silent update.
    calls.clear();
    o.measure = [](std::size_t, const placement&) { return std::nan(""); };
    CHECK_THROWS_WITH_AS(train(pol, pa, o), doctest::Contains("problem 0"), error);
    o.measure = nullptr;
    CHECK_THROWS_AS(train(pol, pa, o), error);
    CHECK(calls.empty());
  }

  SUBCASE("two problems: batches take turns, rows in units of each problem's measured cp") {
    policy pol(policy_options().with_hidden(16).with_steps(2).with_seed(5));
    auto r = train(pol, std::span<const problem* const>(both), o);
    // measured cp and the greedy placement per problem, 8 episodes, the greedy placement per problem
    REQUIRE(calls.size() == 4 + 8 + 2);
    for (std::size_t k = 0; k < 2; ++k) {
      CAPTURE(k);
      const auto& q = r.per_problem[k];
      CHECK(q.real_cp == doctest::Approx(scale[k] * q.cp_makespan));
      CHECK(q.real_initial_greedy > 0);
      CHECK(q.real_final_greedy > 0);
    }
    std::vector<train_row> real;
    for (const auto& row : r.curve)
      if (row.phase == "real") real.push_back(row);
    REQUIRE(real.size() == 8);
    for (std::size_t i = 0; i < real.size(); ++i) {
      CAPTURE(i);
      const call& m = calls[4 + i];
      CHECK(real[i].problem == static_cast<int>((i / 4) % 2));  // batches of 4 alternate
      CHECK(m.problem == static_cast<std::size_t>(real[i].problem));
      CHECK(real[i].makespan == doctest::Approx(m.cost / r.per_problem[m.problem].real_cp));
      CHECK(real[i].makespan > 0.3);  // the simulator's units cancel: near cp's makespan
      CHECK(real[i].makespan < 5);
    }
  }
}

TEST_CASE("phase I with a teacher placement: agreement is measured against it, not cp") {
  ffnn_metis f;
  auto& [g, c, cm, po, metis, pb] = f;
  policy pol(policy_options().with_seed(1));
  train_options o;
  o.with_il(100).with_rl(0).with_seed(1).with_model(sim_model::simple);
  auto cp_trained = train(pol, pb, o);
  REQUIRE(cp_trained.final_agreement >= 0.9);  // cp imitated (as in the phase I test) ...
  pb.with_teacher(metis);
  const double vs_metis = teacher_agreement(pol, pb).both;
  CHECK(vs_metis < 0.7);  // ... is not metis: the agreement is against the teacher placement
  // A fresh policy imitating metis moves towards it.
  policy fresh(policy_options().with_seed(1));
  const auto before = teacher_agreement(fresh, pb);
  auto r = train(fresh, pb, o);
  MESSAGE("agreement with metis: cp-trained " << vs_metis << "; fresh " << before.both << " -> " << r.final_agreement
          << " (SEL " << before.sel << " -> " << r.final_sel_agreement << ", PLC " << before.plc << " -> "
          << r.final_plc_agreement << ")");
  CHECK(r.final_agreement > before.both + 0.05);
  CHECK(r.final_sel_agreement > 0.8);
  // A placement for another graph is refused when it is set.
  graph other = paper("chain_mm_112nodes.txt");
  placement wrong = make_placer("cp")->place(other, c, cm, po);
  CHECK_THROWS_AS(pb.with_teacher(std::make_shared<const placement>(wrong)), error);
}

TEST_CASE("teacher forcing: a forced rollout is the teacher's placement, and phase I fits PLC on the teacher's states") {
  ffnn_metis f;
  auto& [g, c, cm, po, metis, pb] = f;
  pb.with_teacher(metis);
  sim_options so;
  so.model = sim_model::simple;
  const double teacher_ms = simulate(g, c, *metis, cm, so).makespan;
  // Following the teacher reproduces its devices (the first label is the teacher's own device while
  // it is free), whatever the untrained policy would do; the forced choices add no log-probability.
  policy fresh(policy_options().with_seed(1));
  rollout_options ro;
  ro.teacher = true;
  ro.follow_teacher = true;
  auto ep = fresh.rollout(pb, ro);
  CHECK(ep.result.device == metis->device);
  CHECK(ep.log_prob == 0.0);
  CHECK(ep.sel_agree < ep.steps());  // agreement counts the policy's own choices, not the forced ones
  CHECK(simulate(g, c, ep.result, cm, so).makespan == doctest::Approx(teacher_ms));
  // Phase I on the teacher's own states only (PLC learned, SEL the teacher's order): PLC fits the
  // labels, and no forced episode — each the teacher's placement — counts as the best found.
  policy plc(policy_options().with_seed(1).with_ablation(policy_ablation::plc_only));
  const auto before = teacher_agreement(plc, pb);
  train_options o;
  o.with_il(200).with_rl(0).with_seed(1).with_model(sim_model::simple);
  o.il_teacher_forcing = 1.0;
  auto r = train(plc, pb, o);
  REQUIRE(r.curve.size() == 200);
  REQUIRE(r.curve.front().best > teacher_ms);  // the untrained greedy placement is slower than metis
  for (const auto& row : r.curve) {
    CHECK(row.makespan == doctest::Approx(teacher_ms));
    CHECK(row.best == r.curve.front().best);  // a forced episode is never the best so far
  }
  CHECK(r.best_makespan > teacher_ms);  // the best is a greedy evaluation's, not a forced (metis) episode's
  CHECK(r.best.device != metis->device);
  CHECK(r.curve.back().agreement > r.curve.front().agreement);
  MESSAGE("PLC agreement with metis: " << before.plc << " -> " << r.final_plc_agreement);
  CHECK(r.final_plc_agreement >= 0.7);
  CHECK(r.final_plc_agreement > before.plc + 0.3);
  // Half the episodes forced: every second one.
  policy half(policy_options().with_seed(1));
  o.il_teacher_forcing = 0.5;
  o.with_il(8);
  auto h = train(half, pb, o);
  REQUIRE(h.curve.size() == 8);
  int unforced_elsewhere = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    if (i % 2 == 1) CHECK(h.curve[i].makespan == doctest::Approx(teacher_ms));
    else unforced_elsewhere += h.curve[i].makespan != doctest::Approx(teacher_ms);
  }
  CHECK(unforced_elsewhere > 0);  // the even episodes are the learner's own
  // Refusals: out of range, and a policy without SEL and PLC heads.
  o.il_teacher_forcing = 1.5;
  CHECK_THROWS_AS(train(half, pb, o), error);
  o.il_teacher_forcing = 0.5;
  policy joint(policy_options().with_seed(1).with_kind(policy_kind::joint));
  CHECK_THROWS_AS(train(joint, pb, o), error);
  CHECK_THROWS_AS(joint.rollout(pb, ro), error);
}
