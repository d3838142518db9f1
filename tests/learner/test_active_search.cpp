// Active search (policy_options::active_search): per-problem logit offsets let the greedy policy
// reproduce a placement the shared network cannot fit; they follow the problem's fingerprint
// through snapshots and checkpoints; bad settings are refused.
#include <doppler/learner/curriculum.hpp>
#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <vector>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::paper;
using learner_fixtures::temp_path;

namespace {

policy_options small(double active_search) {
  return policy_options().with_hidden(16).with_steps(2).with_proj(8).with_mlp(16).with_seed(4).with_active_search(active_search);
}

/// A placement far from the greedy one: sampled at a high temperature, labelled with its own actions.
episode far_sample(policy& pol, const problem& pb) {
  return self_labelled(pol.rollout(pb, rollout_options::sample(7, 3.0)));
}

/// `steps` imitation updates towards `target`'s actions.
void imitate(policy& pol, const problem& pb, const episode& target, int steps) {
  for (int i = 0; i < steps; ++i) pol.imitation_update(pb, std::span<const episode>(&target, 1));
}

std::size_t same_devices(const placement& a, const placement& b) {
  std::size_t n = 0;
  for (std::size_t v = 0; v < a.device.size(); ++v) n += a.device[v] == b.device[v];
  return n;
}

}  // namespace

TEST_CASE("active search: offsets let the greedy policy reproduce a sampled placement the network alone does not") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  policy with(small(0.5)), without(small(0));
  const episode target = far_sample(with, pb);
  REQUIRE(target.result.device != with.place(pb).device);  // the test needs a target greedy does not already take
  CHECK(with.offset_problems() == 0);                      // rollouts create no offsets
  imitate(with, pb, target, 40);
  imitate(without, pb, target, 40);
  CHECK(with.offset_problems() == 1);
  CHECK(without.offset_problems() == 0);
  const placement a = with.place(pb), b = without.place(pb);
  CAPTURE(same_devices(b, target.result));
  CHECK(a.device == target.result.device);
  sim_options simple;
  simple.model = sim_model::simple;
  CHECK(score(pb, a, simple) == score(pb, target.result, simple));
  CHECK(b.device != target.result.device);
  // The rollout's cached offsets and the batched recomputation agree.
  const episode greedy = with.rollout(pb);
  CHECK(with.recompute_log_prob(pb, greedy) == doctest::Approx(greedy.log_prob).epsilon(1e-4));
}

TEST_CASE("active search: offsets follow the problem's fingerprint through snapshots and checkpoints") {
  graph g = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4"), c8 = make_preset("doppler-paper:8");
  cost_model cm;
  problem pb(g, c, cm), same(g, c, cm), other(g, c8, cm);
  CHECK(pb.key() != same.key());
  CHECK(pb.fingerprint() == same.fingerprint());
  CHECK(pb.fingerprint() != other.fingerprint());
  policy pol(small(0.5));
  const episode first = far_sample(pol, pb);
  imitate(pol, pb, first, 40);
  REQUIRE(pol.place(pb).device == first.result.device);
  CHECK(pol.place(same).device == first.result.device);  // a new problem object of the same inputs
  const std::string snap = pol.snapshot();
  const placement on_other = pol.place(other);
  CHECK(pol.offset_problems() == 1);  // placing another problem adds none

  // Snapshot and restore: training towards another placement moves greedy, restore brings it back.
  const episode second = self_labelled(pol.rollout(pb, rollout_options::sample(99, 3.0)));
  REQUIRE(second.result.device != first.result.device);
  imitate(pol, pb, second, 40);
  CHECK(pol.place(pb).device != first.result.device);
  pol.restore(snap);
  CHECK(pol.place(pb).device == first.result.device);

  // Checkpoint round trip: the offsets and their rate come back, keyed by fingerprint.
  const std::string path = temp_path("active_search.pt");
  pol.save(path);
  policy back = policy::load(path);
  CHECK(back.options().active_search == 0.5);
  CHECK(back.offset_problems() == 1);
  problem fresh(g, c, cm);
  CHECK(back.place(fresh).device == first.result.device);
  CHECK(back.place(other).device == on_other.device);  // another problem: the network alone, as before saving
  std::remove(path.c_str());
}

TEST_CASE("active search: offsets change nothing until trained and are refused where they do not apply") {
  graph g = paper("ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm);
  // Zero offsets: the first update is the network's own (same seed, same episodes, same loss).
  policy a(small(0.5)), b(small(0));
  CHECK(a.place(pb).device == b.place(pb).device);
  std::vector<episode> eps;
  for (std::uint64_t s = 0; s < 3; ++s) eps.push_back(a.rollout(pb, rollout_options::sample(s)));
  const std::vector<double> adv = {1.0, -0.5, 0.25};
  CHECK(a.reinforce_update(pb, eps, adv, 0.99, 0.01) == doctest::Approx(b.reinforce_update(pb, eps, adv, 0.99, 0.01)));
  CHECK(a.offset_problems() == 1);

  CHECK_THROWS_AS(policy(small(0.1).with_kind(policy_kind::joint)), error);
  CHECK_THROWS_AS(policy(small(0.1).with_kind(policy_kind::gdp)), error);
  CHECK_THROWS_AS(policy(small(-1)), error);
  CHECK_THROWS_AS(policy(small(policy_options::max_active_search * 2)), error);
  policy joint(small(0).with_kind(policy_kind::joint));
  CHECK_THROWS_AS(joint.set_active_search(0.1), error);
  CHECK_NOTHROW(joint.set_active_search(0));
}
