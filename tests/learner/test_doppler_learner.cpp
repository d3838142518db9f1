// DOPPLER's policy behind the learner interface (doppler_learner.hpp): registered by name, save/load
// round trips that keep placements identical, exploring placements that are valid, and phase-III
// steps taken from observed makespans (here the simulator stands in for the runtime's measurement).
#include <doppler/learner/doppler_learner.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placer.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <utility>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::paper;
using learner_fixtures::temp_path;

namespace {

doppler_learner_options small() {
  doppler_learner_options o;
  o.policy = policy_options().with_hidden(16).with_steps(2).with_proj(8).with_mlp(16);
  o.online_lr = 1e-2;
  return o;
}

/// The simulated (`simple` model) makespan: the stand-in for the runtime's measurement.
double simulated(const graph& g, const cluster& c, const placement& p) {
  sim_options so;
  so.model = sim_model::simple;
  return simulate(g, c, p, cost_model{}, so).makespan;
}

/// A small learner set up for measured model selection with this margin: large steps, the
/// policy's own greedy placements.
doppler_learner_options selecting(double margin) {
  auto o = small();
  o.online_lr = 0.05;
  o.select_measured = true;
  o.select_margin = margin;
  o.exploit_measured = false;
  return o;
}

}  // namespace

TEST_CASE("the doppler learner is registered by name, a missing policy file is an error naming it") {
  register_doppler_learner();
  CHECK(has_learner("doppler"));
  auto l = make_learner("doppler");
  CHECK(l->name() == "doppler");
  auto missing = temp_path("no_such_policy.pt");
  try {
    make_learner("doppler", learner_config{}.with_policy(missing));
    FAIL("a missing checkpoint must throw");
  } catch (const error& e) {
    CHECK(e.code() == errc::io);
    CHECK(std::string(e.what()).find(missing) != std::string::npos);
  }
}

TEST_CASE("doppler learner: train, save, load: the same greedy placements") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  learner_config cfg;
  cfg.seed = 5;
  cfg.sim.model = sim_model::simple;
  auto l = make_doppler_learner(cfg, small());
  auto rep = l->train(g, c, 16);
  CHECK(rep.episodes == 16);
  CHECK(rep.greedy_makespan > 0);
  placement p = l->place(g, c, false, 0);
  check_placement(p, g, c);
  CHECK(l->place(g, c, false, 0).device == p.device);  // greedy is deterministic

  auto file = temp_path("learner_roundtrip.pt");
  l->save(file);
  auto fresh = make_doppler_learner(learner_config(cfg).with_policy(file), small());
  placement q = fresh->place(g, c, false, 0);
  CHECK(q.device == p.device);
  CHECK(q.order == p.order);
  auto other = make_doppler_learner(learner_config(cfg).with_seed(99), small());
  other->load(file);
  CHECK(other->place(g, c, false, 0).device == p.device);
  std::filesystem::remove(file);
}

TEST_CASE("doppler learner online: exploring placements are valid, their observations are REINFORCE steps") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  auto l = make_doppler_learner(learner_config{}.with_seed(1), small());
  auto measure = [&](const placement& p) { return simulated(g, c, p); };
  placement greedy = l->place(g, c, false, 0);
  l->observe(g, c, greedy, measure(greedy));  // greedy observations move the baseline only
  CHECK(stats_of(*l).observed == 1);
  CHECK(stats_of(*l).updates == 0);
  for (std::uint64_t k = 0; k < 6; ++k) {
    placement p = l->place(g, c, true, k);
    check_placement(p, g, c);
    l->observe(g, c, p, measure(p));
  }
  CHECK(stats_of(*l).observed == 7);
  CHECK(stats_of(*l).updates == 6);
  // A placement the learner did not make is counted, not trained on.
  placement rr = make_placer("round-robin")->place(g, c, cost_model{}, placer_options{});
  l->observe(g, c, rr, measure(rr));
  CHECK(stats_of(*l).updates == 6);
  CHECK_THROWS_AS(stats_of(*make_learner("cp")), error);
}

TEST_CASE("doppler learner deployment: greedy returns the best measured placement once the policy's is known worse") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  auto opt = small();
  opt.online_lr = 0;  // keep the policy fixed: this case is about the bookkeeping
  auto l = make_doppler_learner(learner_config{}.with_seed(2), opt);
  placement greedy = l->place(g, c, false, 0);
  CHECK(l->place(g, c, false, 0).device == greedy.device);  // nothing measured yet: the policy's
  placement other;
  for (std::uint64_t k = 0; k < 8 && (other.device.empty() || other.device == greedy.device); ++k)
    other = l->place(g, c, true, k);
  REQUIRE(other.device != greedy.device);
  l->observe(g, c, other, 1.0);
  CHECK(l->place(g, c, false, 0).device == greedy.device);  // the policy's greedy is not measured yet
  l->observe(g, c, greedy, 2.0);
  placement now = l->place(g, c, false, 0);
  CHECK(now.device == other.device);
  CHECK(now.method == "doppler:best-measured");
  CHECK(stats_of(*l).best_measured == 1);
  l->observe(g, c, other, 5.0);  // mean 3.0: worse than the policy's 2.0 now
  CHECK(l->place(g, c, false, 0).device == greedy.device);

  opt.exploit_measured = false;
  auto plain = make_doppler_learner(learner_config{}.with_seed(2), opt);
  plain->observe(g, c, other, 1.0);
  plain->observe(g, c, greedy, 2.0);
  CHECK(plain->place(g, c, false, 0).device == greedy.device);
}

TEST_CASE("doppler learner online batches: one REINFORCE step per online_batch exploring observations") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  auto opt = small();
  opt.online_batch = 3;
  opt.exploit_measured = false;  // greedy place: the policy's own placement
  auto l = make_doppler_learner(learner_config{}.with_seed(3), opt);
  placement greedy = l->place(g, c, false, 0);
  l->observe(g, c, greedy, 2.0);
  CHECK_FALSE(l->last_update().updated);
  for (std::uint64_t k = 0; k < 2; ++k) {
    placement p = l->place(g, c, true, k);
    l->observe(g, c, p, 1.5 + 0.25 * static_cast<double>(k));
    CHECK_FALSE(l->last_update().updated);
  }
  CHECK(stats_of(*l).pending == 2);
  CHECK(stats_of(*l).updates == 0);
  CHECK(l->place(g, c, false, 0).device == greedy.device);  // nothing learned yet
  placement p = l->place(g, c, true, 7);
  l->observe(g, c, p, 3.0);
  learner_update u = l->last_update();
  CHECK(u.updated);
  CHECK(u.episodes == 3);
  CHECK(std::isfinite(u.loss));
  CHECK(u.loss != 0);
  CHECK(stats_of(*l).updates == 1);
  CHECK(stats_of(*l).pending == 0);
  opt.online_batch = 0;
  CHECK_THROWS_AS(make_doppler_learner(learner_config{}, opt), error);
}

namespace {

/// Exploring observations scored by the simulator (large steps) until the greedy placement differs
/// from `g0`; returns the new one, just handed out (so its next observation evaluates it).
placement step_until_greedy_changes(learner_interface& l, const graph& g, const cluster& c, const placement& g0) {
  placement g1 = g0;
  for (std::uint64_t k = 0; k < 60 && g1.device == g0.device; ++k) {
    placement p = l.place(g, c, true, k);
    l.observe(g, c, p, simulated(g, c, p));
    g1 = l.place(g, c, false, 0);
  }
  REQUIRE(g1.device != g0.device);
  return g1;
}

}  // namespace

TEST_CASE("doppler learner measured model selection: save writes the parameters whose greedy measured best") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  // Margin 0: the lowest mean wins (single measurements have no standard error).
  auto l = make_doppler_learner(learner_config{}.with_seed(4), selecting(0));
  placement g0 = l->place(g, c, false, 0);
  l->observe(g, c, g0, 1.0);  // the initial parameters' greedy, measured: an evaluation
  CHECK(stats_of(*l).evaluations == 1);
  CHECK(stats_of(*l).selected_update == 0);
  placement g1 = step_until_greedy_changes(*l, g, c, g0);
  const int after = stats_of(*l).updates;
  l->observe(g, c, g1, 5.0);  // the new parameters' greedy measures worse
  CHECK(stats_of(*l).evaluations == 2);
  CHECK(stats_of(*l).selected_update == 0);
  auto file = temp_path("learner_selected.pt");
  l->save(file);
  auto back = make_doppler_learner(learner_config{}.with_policy(file), small());
  CHECK(back->place(g, c, false, 0).device == g0.device);  // the selected, older parameters
  // Later measurements of g1 replace its evaluating one (the measurement that nominated a placement
  // does not judge it): 0.1 against g0's 1.0, the current parameters win.
  for (int k = 0; k < 6; ++k) l->observe(g, c, g1, 0.1);
  CHECK(stats_of(*l).selected_update == after);
  l->save(file);
  CHECK(make_doppler_learner(learner_config{}.with_policy(file), small())->place(g, c, false, 0).device == g1.device);
  // After another update, an observation evaluates nothing until a greedy place hands out the new
  // parameters' placement; it still moves the means: g0's later 0.05 is the best again.
  const int evals = stats_of(*l).evaluations;
  placement p = l->place(g, c, true, 99);
  l->observe(g, c, p, simulated(g, c, p));
  REQUIRE(stats_of(*l).updates == after + 1);
  l->observe(g, c, g0, 0.05);
  CHECK(stats_of(*l).evaluations == evals);
  CHECK(stats_of(*l).selected_update == 0);
  // Evaluated placements keep their means however many other placements are measured (the learner
  // forgets the 256 oldest of those): g1 at (6 × 0.1 + 10 × 0) / 16 ≈ 0.038 beats g0's 0.05, and
  // stays selected after 300 distinct foreign placements.
  for (int k = 0; k < 10; ++k) l->observe(g, c, g1, 0.0);
  CHECK(stats_of(*l).selected_update == after);
  placer_options po;
  for (std::uint64_t k = 0; k < 300; ++k) {
    po.seed = k;
    l->observe(g, c, make_placer("random")->place(g, c, cost_model{}, po), 2.0);
  }
  CHECK(stats_of(*l).selected_update == after);
  std::filesystem::remove(file);
}

TEST_CASE("doppler learner measured model selection with a margin: the initial parameters stay until others are clearly faster") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  REQUIRE(doppler_learner_options{}.select_margin == 2);  // the default
  auto l = make_doppler_learner(learner_config{}.with_seed(4), selecting(2));
  placement g0 = l->place(g, c, false, 0);
  // The first measurement evaluates g0; the later ones are its statistics: mean 1.067, s.e. 0.033.
  for (double x : {1.0, 1.1, 1.0, 1.1}) l->observe(g, c, g0, x);
  placement g1 = step_until_greedy_changes(*l, g, c, g0);
  const int after = stats_of(*l).updates;
  l->observe(g, c, g1, 0.1);  // evaluates g1: however fast, it nominates, it does not judge
  CHECK(stats_of(*l).selected_update == 0);
  l->observe(g, c, g1, 1.5);  // one later measurement: no standard error yet
  CHECK(stats_of(*l).selected_update == 0);
  for (int k = 0; k < 2; ++k) l->observe(g, c, g1, 0.6);  // mean 0.9, s.e. 0.3: not clearly faster
  CHECK(stats_of(*l).selected_update == 0);
  for (int k = 0; k < 6; ++k) l->observe(g, c, g1, 0.6);
  // mean 0.7, s.e. 0.1: 0.37 faster, more than 2 × 0.105 (the difference's s.e.)
  CHECK(stats_of(*l).selected_update == after);
}

TEST_CASE("doppler learner with several problems: each keeps its own episodes, batch, baseline and measurements") {
  graph a = paper("chain_mm_112nodes.txt"), b = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  auto opt = small();
  opt.online_batch = 2;
  opt.exploit_measured = false;
  auto l = make_doppler_learner(learner_config{}.with_seed(6), opt);
  // Interleaved: a's and b's exploring episodes wait in their own batches; switching problems
  // drops neither (a learner that kept one problem forgot a's episode when b came).
  placement pa = l->place(a, c, true, 1), pb = l->place(b, c, true, 2);
  l->observe(a, c, pa, simulated(a, c, pa));
  l->observe(b, c, pb, simulated(b, c, pb));
  CHECK(stats_of(*l).problems == 2);
  CHECK(stats_of(*l).pending == 2);
  CHECK(stats_of(*l).updates == 0);
  placement pa2 = l->place(a, c, true, 3);
  l->observe(a, c, pa2, simulated(a, c, pa2));
  CHECK(l->last_update().updated);
  CHECK(l->last_update().episodes == 2);  // a's two, b's one still waits
  CHECK(stats_of(*l).pending == 1);
  // b's waiting episode survived a's update: b's next observed episode completes its batch.
  placement pb2 = l->place(b, c, true, 4);
  l->observe(b, c, pb2, simulated(b, c, pb2));
  CHECK(stats_of(*l).updates == 2);
  CHECK(stats_of(*l).pending == 0);
  // Deployment's memory is per problem too: a's best measured placement is never b's greedy.
  opt.exploit_measured = true;
  auto d = make_doppler_learner(learner_config{}.with_seed(6), opt);
  placement ga = d->place(a, c, false, 0), gb = d->place(b, c, false, 0);
  d->observe(a, c, ga, 2.0);
  placement other = d->place(a, c, true, 9);
  REQUIRE(other.device != ga.device);
  d->observe(a, c, other, 1.0);
  d->observe(b, c, gb, 2.0);
  CHECK(d->place(a, c, false, 0).device == other.device);
  CHECK(d->place(b, c, false, 0).device == gb.device);
}

namespace {

/// Exploring observations on a and b in turn, scored by the simulator, until both greedy placements
/// differ from a0 and b0; returns the new ones, just handed out (their next observations evaluate them).
std::pair<placement, placement> step_until_both_change(learner_interface& l, const graph& a, const graph& b,
                                                       const cluster& c, const placement& a0, const placement& b0) {
  placement a1 = a0, b1 = b0;
  for (std::uint64_t k = 0; k < 80 && (a1.device == a0.device || b1.device == b0.device); ++k) {
    const graph& g = k % 2 ? b : a;
    placement p = l.place(g, c, true, k);
    l.observe(g, c, p, simulated(g, c, p));
    a1 = l.place(a, c, false, 0);
    b1 = l.place(b, c, false, 0);
  }
  REQUIRE(a1.device != a0.device);
  REQUIRE(b1.device != b0.device);
  return {a1, b1};
}

}  // namespace

TEST_CASE("doppler learner measured model selection over two problems: parameters are judged on both") {
  graph a = paper("chain_mm_112nodes.txt"), b = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  auto l = make_doppler_learner(learner_config{}.with_seed(4), selecting(0));
  placement a0 = l->place(a, c, false, 0), b0 = l->place(b, c, false, 0);
  l->observe(a, c, a0, 1.0);  // the initial parameters, evaluated on both problems: the incumbent
  l->observe(b, c, b0, 1.0);
  CHECK(stats_of(*l).evaluations == 2);
  CHECK(stats_of(*l).selected_update == 0);
  auto [a1, b1] = step_until_both_change(*l, a, b, c, a0, b0);
  const int after = stats_of(*l).updates;
  // Half a's makespan, measured on a only: not comparable with the incumbent yet.
  l->observe(a, c, a1, 0.5);
  CHECK(stats_of(*l).selected_update == 0);
  // Three times b's: the mean ratio (0.5 + 3) / 2 = 1.75 keeps the incumbent.
  l->observe(b, c, b1, 3.0);
  CHECK(stats_of(*l).selected_update == 0);
  // Later measurements of b1 replace its nominating one: (0.5 + 1.2) / 2 = 0.85 is below 1, but b1
  // is slower than b0 (1.2 against 1.0): a gain on one problem does not pay for a loss on another.
  l->observe(b, c, b1, 1.2);
  CHECK(stats_of(*l).selected_update == 0);
  // b1 at (1.2 + 0.6) / 2 = 0.9: faster on both, mean ratio 0.7, the new parameters win.
  l->observe(b, c, b1, 0.6);
  CHECK(stats_of(*l).selected_update == after);
  auto file = temp_path("learner_two_problems.pt");
  l->save(file);
  auto back = make_doppler_learner(learner_config{}.with_policy(file), small());
  CHECK(back->place(a, c, false, 0).device == a1.device);
  CHECK(back->place(b, c, false, 0).device == b1.device);
  // b1 measured slower again: mean 1.93 on b, (0.5 + 1.93) / 2 > 1, the incumbent's parameters.
  l->observe(b, c, b1, 4.0);
  CHECK(stats_of(*l).selected_update == 0);
  l->save(file);
  back = make_doppler_learner(learner_config{}.with_policy(file), small());
  CHECK(back->place(a, c, false, 0).device == a0.device);
  CHECK(back->place(b, c, false, 0).device == b0.device);
  std::filesystem::remove(file);
}

TEST_CASE("doppler learner measured model selection over two problems with a margin: no problem may be clearly slower") {
  graph a = paper("chain_mm_112nodes.txt"), b = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  auto l = make_doppler_learner(learner_config{}.with_seed(4), selecting(2));
  placement a0 = l->place(a, c, false, 0), b0 = l->place(b, c, false, 0);
  // The incumbent: a0 and b0 at 1.0 (s.e. 0.006 each), after the nominating measurements.
  l->observe(a, c, a0, 5.0);
  l->observe(b, c, b0, 5.0);
  for (double x : {0.99, 1.01, 0.99, 1.01}) {
    l->observe(a, c, a0, x);
    l->observe(b, c, b0, x);
  }
  auto [a1, b1] = step_until_both_change(*l, a, b, c, a0, b0);
  const int after = stats_of(*l).updates;
  l->observe(a, c, a1, 9.0);  // nominating measurements
  l->observe(b, c, b1, 9.0);
  // a1 at 0.5, b1 at 1.1 (s.e. 0.006 each): mean ratio 0.8, far below 1 by its standard error,
  // but b1 is slower by 12 standard errors of b's difference: the incumbent stays.
  for (double x : {0.49, 0.51, 0.49, 0.51}) l->observe(a, c, a1, x);
  for (double x : {1.09, 1.11, 1.09, 1.11}) l->observe(b, c, b1, x);
  CHECK(stats_of(*l).selected_update == 0);
  // b1 re-measured at 1.0: now 1.05 ± 0.019, slower by 2.5 standard errors: still kept out.
  for (int k = 0; k < 4; ++k) l->observe(b, c, b1, 1.0);
  CHECK(stats_of(*l).selected_update == 0);
  // ... at 1.0 24 times more: 1.0125 ± 0.006, slower by 1.5 standard errors (within the margin of
  // 2): the mean ratio (0.756) decides, the new parameters win.
  for (int k = 0; k < 24; ++k) l->observe(b, c, b1, 1.0);
  CHECK(stats_of(*l).selected_update == after);
}

namespace {

/// A small MLP block in dtype t under this name: x·w1 → silu → ·w2 → + x.
graph mlp_block(const std::string& name, dtype t) {
  graph_builder b(name, t);
  b.input("x", {256, 256});
  b.input("w1", {256, 512});
  b.input("w2", {512, 256});
  b.matmul("h", "x", "w1");
  b.unary(op_kind::silu, "a", "h");
  b.matmul("o", "a", "w2");
  b.binary(op_kind::add, "y", "o", "x");
  return std::move(b).build();
}

}  // namespace

TEST_CASE("doppler learner problems are told apart by their content not by their names") {
  cluster c = make_preset("doppler-paper:4");
  graph a = mlp_block("block", dtype::f32), half = mlp_block("block", dtype::bf16), renamed = mlp_block("copy", dtype::f32);
  // What used to identify a problem is equal: name, sizes, edges, FLOPs. Only the bytes differ.
  REQUIRE(a.name() == half.name());
  REQUIRE(a.size() == half.size());
  REQUIRE(a.edge_count() == half.edge_count());
  REQUIRE(a.total_flops() == half.total_flops());
  REQUIRE(a[3].bytes == 2 * half[3].bytes);
  auto l = make_doppler_learner(learner_config{}.with_seed(4), small());
  placement ga = l->place(a, c, false, 0);
  CHECK(stats_of(*l).problems == 1);
  placement gh = l->place(half, c, false, 0);
  CHECK(stats_of(*l).problems == 2);
  l->place(renamed, c, false, 0);  // the same content under another name: the same problem
  CHECK(stats_of(*l).problems == 2);
  // A cluster with the same name and size, one device half as fast: another problem.
  std::vector<device> devs(c.devices().begin(), c.devices().end());
  devs[0].flops /= 2;
  cluster slow(c.name(), devs, {c.switches().begin(), c.switches().end()}, {c.link_specs().begin(), c.link_specs().end()});
  l->place(a, slow, false, 0);
  CHECK(stats_of(*l).problems == 3);
  // Measurements stay with their problem: a faster placement measured on the bf16 copy becomes its
  // greedy placement (best measured) and not the f32 graph's. (`other` is not the learner's own, so
  // observing it moves no parameters: only the measured placements can change the greedy answers.)
  l->observe(a, c, ga, 2.0);
  l->observe(half, c, gh, 2.0);
  placement other = gh;
  other.device[3] = (gh.device[3] + 1) % 4;
  l->observe(half, c, other, 1.0);
  CHECK(stats_of(*l).updates == 0);
  CHECK(l->place(half, c, false, 0).device == other.device);
  CHECK(l->place(a, c, false, 0).device == ga.device);
}
