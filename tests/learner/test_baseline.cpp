// Phase II's REINFORCE baselines (train_options::baseline): the running mean (the paper's), the
// batch's mean, and the greedy placement's cost (self-critical). The names parse, the curriculum
// refuses an unknown one, the self-critical advantage is zero exactly when a sample costs what the
// greedy placement costs, and each baseline finds a tiny graph's optimum.
#include <doppler/learner/curriculum.hpp>
#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <set>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::brute_force_optimum;
using learner_fixtures::fast_slow;
using learner_fixtures::two_ops;

namespace {

policy_options small() { return policy_options().with_hidden(16).with_steps(2).with_proj(8).with_mlp(16).with_seed(2); }

}  // namespace

TEST_CASE("baselines parse and print, an unknown one is refused naming the choices") {
  for (auto k : {baseline_kind::mean, baseline_kind::batch, baseline_kind::greedy})
    CHECK(parse_baseline(baseline_name(k)) == k);
  CHECK(train_options{}.baseline == baseline_kind::mean);  // the paper's stays the default
  CHECK_THROWS_WITH_AS(parse_baseline("critic"), doctest::Contains("mean, batch, greedy"), error);
  auto c = parse_curriculum(R"({"format": "doppler-curriculum/1", "reinforce": {"baseline": "greedy"}})", "c.json");
  CHECK(c.train.baseline == baseline_kind::greedy);
  CHECK_THROWS_WITH_AS(parse_curriculum(R"({"format": "doppler-curriculum/1", "reinforce": {"baseline": "best"}})", "c.json"),
                       doctest::Contains("reinforce.baseline"), error);
}

TEST_CASE("greedy baseline: an episode's update is zero exactly when it costs what the greedy placement costs") {
  // One episode per update, no normalization, no entropy bonus and a learning rate too small to move
  // the policy: the greedy placement stays the initial one, and each row's loss is
  // −Σ_t γ^(T−1−t) log π(a_t) · (greedy − cost) / greedy / T — zero when the sample costs the same,
  // positive when it is faster (log π < 0), negative when slower.
  graph g = two_ops();
  cluster c = fast_slow();
  cost_model cm;
  problem pb(g, c, cm);
  train_options o;
  o.with_il(0).with_rl(40).with_batch(1).with_seed(3).with_model(sim_model::simple);
  o.normalize_advantages = false;
  o.entropy = o.entropy_final = 0;
  o.rl_lr = 1e-12;
  o.eval_every = 0;
  o.baseline = baseline_kind::greedy;
  policy pol(small());
  auto r = train(pol, pb, o);
  const double greedy = r.initial_greedy_makespan;
  std::set<int> signs;
  for (const auto& row : r.curve) {
    CAPTURE(row.makespan);
    if (row.makespan == greedy) {
      CHECK(row.loss == 0.0);
      signs.insert(0);
    } else {
      CHECK(row.loss != 0.0);
      CHECK((row.loss > 0) == (row.makespan < greedy));
      signs.insert(row.makespan < greedy ? 1 : -1);
    }
  }
  CHECK(signs.count(0) == 1);  // the samples included the greedy placement and others
  CHECK(signs.size() >= 2);
  // The running mean instead: the first update's baseline is its own cost (zero), later ones are not
  // the greedy cost, so samples equal to the greedy placement do move the policy.
  o.baseline = baseline_kind::mean;
  policy pol2(small());
  auto r2 = train(pol2, pb, o);
  bool moved_on_greedy = false;
  for (std::size_t i = 1; i < r2.curve.size(); ++i)
    moved_on_greedy |= r2.curve[i].makespan == greedy && r2.curve[i].loss != 0.0;
  CHECK(moved_on_greedy);
}

TEST_CASE("each baseline: REINFORCE finds the optimal placement of a tiny graph") {
  graph g = two_ops();
  cluster c = fast_slow();
  cost_model cm;
  problem pb(g, c, cm);
  for (auto k : {baseline_kind::mean, baseline_kind::batch, baseline_kind::greedy}) {
    CAPTURE(baseline_name(k));
    train_options o;
    o.with_il(0).with_rl(96).with_batch(8).with_seed(1).with_model(sim_model::simple);
    o.baseline = k;
    const double optimum = brute_force_optimum(g, c, cm, o.sim);
    policy pol(small());  // a seed whose initial greedy placement is not optimal
    auto r = train(pol, pb, o);
    CHECK(r.initial_greedy_makespan > optimum + 0.2);
    CHECK(r.last_greedy_makespan == doctest::Approx(optimum).epsilon(1e-9));  // the policy itself, not model selection
    CHECK(r.greedy_makespan == doctest::Approx(optimum).epsilon(1e-9));
    for (const auto& row : r.curve) CHECK(std::isfinite(row.loss));
  }
}
