// PPO (policy::ppo_update, train_options::ppo): one epoch is one REINFORCE step, the clipped
// update finds a tiny graph's optimum, and the kinds it does not serve are refused.
#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::brute_force_optimum;
using learner_fixtures::fast_slow;
using learner_fixtures::paper;
using learner_fixtures::two_ops;

namespace {

policy_options small() { return policy_options().with_hidden(16).with_steps(2).with_proj(8).with_mlp(16).with_seed(4); }

std::vector<episode> sampled(policy& pol, const problem& pb, int n) {
  std::vector<episode> eps;
  for (int i = 0; i < n; ++i) eps.push_back(pol.rollout(pb, rollout_options::sample(100 + static_cast<std::uint64_t>(i))));
  return eps;
}

}  // namespace

TEST_CASE("ppo: one epoch is exactly one REINFORCE step, more epochs move the policy further") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  policy a(small()), b(small()), k(small());
  auto eps = sampled(a, pb, 4);
  const std::vector<double> adv = {1.0, -0.5, 0.25, -0.75};
  a.reinforce_update(pb, eps, adv, 0.99, 0.01);
  b.ppo_update(pb, eps, adv, 0.99, 0.01, 0.2, 1);
  // r = 1 at the first epoch: the surrogate's gradient is REINFORCE's (the loss values differ: the
  // one sums A·r, the other A·log π), so the step and every later log-probability are the same.
  for (const auto& ep : eps)
    CHECK(b.recompute_log_prob(pb, ep) == doctest::Approx(a.recompute_log_prob(pb, ep)).epsilon(1e-5));
  // Four epochs raise the log-probability of the best episode (largest advantage) more than one.
  const double before = k.recompute_log_prob(pb, eps[0]);
  k.ppo_update(pb, eps, adv, 0.99, 0.0, 0.2, 4);
  const double one = a.recompute_log_prob(pb, eps[0]) - before, four = k.recompute_log_prob(pb, eps[0]) - before;
  CAPTURE(one);
  CAPTURE(four);
  CHECK(one > 0);
  CHECK(four > one);
}

TEST_CASE("ppo: a target KL stops the epochs once the policy has moved that far") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  policy one(small()), tiny(small()), loose(small()), plain(small());
  CHECK(plain.last_ppo_epochs() == 0);
  auto eps = sampled(one, pb, 4);
  const std::vector<double> adv = {1.0, -0.5, 0.25, -0.75};
  one.ppo_update(pb, eps, adv, 0.99, 0.01, 0.2, 1);
  CHECK(one.last_ppo_epochs() == 1);
  // A target no step can stay under: only the first epoch (whose KL is 0 by definition) runs, so
  // the result is the one-epoch update's, log-probability for log-probability.
  tiny.ppo_update(pb, eps, adv, 0.99, 0.01, 0.2, 4, 1e-12);
  CHECK(tiny.last_ppo_epochs() == 1);
  for (const auto& ep : eps)
    CHECK(tiny.recompute_log_prob(pb, ep) == doctest::Approx(one.recompute_log_prob(pb, ep)).epsilon(1e-5));
  // A target no step reaches changes nothing: all four epochs, the same parameters as without one.
  loose.ppo_update(pb, eps, adv, 0.99, 0.01, 0.2, 4, 100.0);
  plain.ppo_update(pb, eps, adv, 0.99, 0.01, 0.2, 4);
  CHECK(loose.last_ppo_epochs() == 4);
  CHECK(plain.last_ppo_epochs() == 4);
  for (const auto& ep : eps) {
    CHECK(loose.recompute_log_prob(pb, ep) == doctest::Approx(plain.recompute_log_prob(pb, ep)).epsilon(1e-6));
    CHECK(loose.recompute_log_prob(pb, ep) != doctest::Approx(one.recompute_log_prob(pb, ep)).epsilon(1e-6));
  }
  CHECK_THROWS_AS(plain.ppo_update(pb, eps, adv, 0.99, 0.01, 0.2, 4, -1.0), doppler::error);
  CHECK_THROWS_AS(plain.ppo_update(pb, eps, adv, 0.99, 0.01, 0.2, 4, std::nan("")), doppler::error);
}

TEST_CASE("ppo: train reports the epochs per update and refuses a negative target KL") {
  graph g = two_ops();
  cluster c = fast_slow();
  cost_model cm;
  problem pb(g, c, cm);
  train_options o;
  o.with_il(0).with_rl(32).with_batch(8).with_seed(1).with_model(sim_model::simple);
  o.ppo = true;
  policy a(small().with_seed(2));
  CHECK(train(a, pb, o).ppo_epochs_mean == doctest::Approx(4.0));
  o.ppo_target_kl = 1e-12;
  policy b(small().with_seed(2));
  const double stopped = train(b, pb, o).ppo_epochs_mean;
  CHECK(stopped >= 1.0);
  CHECK(stopped < 4.0);
  o.ppo_target_kl = -1;
  policy d(small().with_seed(2));
  CHECK_THROWS_AS(train(d, pb, o), doppler::error);
  o.ppo = false;  // REINFORCE: no PPO epochs, the field stays 0 (and ppo_target_kl is not checked)
  policy r(small().with_seed(2));
  CHECK(train(r, pb, o).ppo_epochs_mean == 0);
}

TEST_CASE("ppo: finds the optimal placement of a tiny graph") {
  graph g = two_ops();
  cluster c = fast_slow();
  cost_model cm;
  problem pb(g, c, cm);
  train_options o;
  o.with_il(0).with_rl(64).with_batch(8).with_seed(1).with_model(sim_model::simple);
  o.ppo = true;
  const double optimum = brute_force_optimum(g, c, cm, o.sim);
  policy pol(small().with_seed(2));
  auto r = train(pol, pb, o);
  CHECK(r.initial_greedy_makespan > optimum + 0.2);
  CHECK(r.greedy_makespan == doctest::Approx(optimum).epsilon(1e-9));
  for (const auto& row : r.curve) CHECK(std::isfinite(row.loss));
}

TEST_CASE("ppo: an action sampled by epsilon at a tiny old probability does not overflow the ratio") {
  // T = 0.001 makes log-probability gaps 1000x; an ε-sampled action then reached log r > 88 in a
  // later epoch, exp overflowed, the gradient became NaN and Adam wrote NaN into every parameter:
  // from the ninth row on every loss was NaN and every episode placed all ops on one device.
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  train_options o;
  o.with_il(0).with_rl(24).with_batch(4).with_seed(0).with_model(sim_model::simple);
  o.ppo = true;
  o.rl_epsilon = 0.2;
  o.temperature = 0.001;
  o.eval_every = 0;
  policy pol(policy_options().with_seed(0));
  auto r = train(pol, pb, o);
  REQUIRE(r.curve.size() == 24);
  for (const auto& row : r.curve) {
    CAPTURE(row.episode);
    CHECK(std::isfinite(row.loss));
  }
  CHECK(std::isfinite(pol.rollout(pb, rollout_options()).log_prob));
}

TEST_CASE("ppo: baselines, zero epochs and a non-positive clip are refused") {
  graph g = two_ops();
  cluster c = fast_slow();
  cost_model cm;
  problem pb(g, c, cm);
  policy gdp(small().with_kind(policy_kind::gdp));
  auto eps = sampled(gdp, pb, 2);
  CHECK_THROWS_AS(gdp.ppo_update(pb, eps, std::vector<double>{1, -1}, 0.99, 0.01), doppler::error);
  policy dual(small());
  auto deps = sampled(dual, pb, 2);
  CHECK_THROWS_AS(dual.ppo_update(pb, deps, std::vector<double>{1, -1}, 0.99, 0.01, 0.2, 0), doppler::error);
  CHECK_THROWS_AS(dual.ppo_update(pb, deps, std::vector<double>{1, -1}, 0.99, 0.01, 0.0, 2), doppler::error);
  CHECK_THROWS_AS(dual.ppo_update(pb, deps, std::vector<double>{1}, 0.99, 0.01), doppler::error);
  train_options o;
  o.ppo = true;
  o.ppo_epochs = 0;
  CHECK_THROWS_AS(train(dual, pb, o), doppler::error);
}
