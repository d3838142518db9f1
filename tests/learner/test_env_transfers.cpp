// PLC's EST feature with planned transfers (issue 7's joint placement): with a transfer planner the
// environment estimates an input's arrival the way the planner's plan would deliver it.
#include <doppler/learner/env.hpp>
#include <doppler/learner/features.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/transfer_plan.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <vector>

using namespace doppler;

namespace {

constexpr double mb = 1e6;

/// gpu0 - gpu1 - gpu2, duplex, 1 MB/s, no latency: a 1 MB chunk takes 1 s a hop.
cluster line3() {
  std::vector<device> ds;
  for (int i = 0; i < 3; ++i) ds.push_back({"gpu" + std::to_string(i), device_kind::gpu, 1e12, 1e10, "node0"});
  return cluster("line3", ds, {}, {{"gpu0", "gpu1", mb, 0, true}, {"gpu1", "gpu2", mb, 0, true}});
}

link_index link_between(const cluster& c, node_index a, node_index b) {
  for (link_index l = 0; l < c.links().size(); ++l)
    if (c.links()[l].src == a && c.links()[l].dst == b) return l;
  return 0;
}

/// Plans every request gpu0 → gpu2 as four chunks stored and forwarded at gpu1 (others: direct).
class relay_planner final : public transfer_planner {
 public:
  explicit relay_planner(const cluster& c) : c_(c) {}
  std::shared_ptr<const transfer_plan> plan(device_index src, std::span<const device_index> dsts, double) override {
    ++calls;
    if (src != 0 || dsts.size() != 1 || dsts[0] != 2) return nullptr;
    auto p = std::make_shared<transfer_plan>();
    p->source = 0;
    p->destinations = {2};
    p->chunks = 4;
    for (std::uint32_t k = 0; k < 4; ++k) {
      p->hops.push_back({k, link_between(c_, 0, 1), -1, 0});
      p->hops.push_back({k, link_between(c_, 1, 2), static_cast<std::int32_t>(p->hops.size() - 1), 0});
    }
    p->finish(c_);
    return p;
  }
  int calls = 0;

 private:
  const cluster& c_;
};

double est_on(learner::assignment_env& env, op_index v, device_index d, std::size_t devices) {
  std::vector<float> out(devices * learner::device_feature_count);
  std::vector<std::uint8_t> valid(devices);
  env.device_features(v, out, valid);
  return out[d * learner::device_feature_count + static_cast<int>(learner::device_feature::est)];
}

}  // namespace

TEST_CASE("with a planner, the EST of a consumer two hops away is the plan's delivery, not cut-through") {
  cluster c = line3();
  graph_builder b("relay");
  b.add(op_spec{"a", op_kind::synthetic, {}, {}, {}, 1.0, 4 * mb, ""});
  b.add(op_spec{"b", op_kind::synthetic, {"a"}, {}, {}, 1.0, 1.0, ""});
  graph g = std::move(b).build();
  cost_model cm;
  auto f = learner::compute_features(g, c, cm);
  relay_planner planner(c);

  learner::assignment_env direct(g, c, cm, f);
  learner::assignment_env planned(g, c, cm, f, true, &planner);
  for (auto* env : {&direct, &planned}) {
    std::vector<float> out(3 * learner::device_feature_count);
    std::vector<std::uint8_t> valid(3);
    env->device_features(0, out, valid);
    env->assign(0, 0);
  }
  // cut-through: 4 MB over the route at 1 MB/s = 4 s; stored and forwarded in 4 chunks: 4 + 1 = 5 s
  const double e_direct = est_on(direct, 1, 2, 3), e_planned = est_on(planned, 1, 2, 3);
  CHECK(e_planned / e_direct == doctest::Approx(5.0 / 4.0).epsilon(1e-6));
  CHECK(planner.calls >= 1);
  // one hop away nothing is planned: both environments agree on gpu1
  CHECK(est_on(planned, 1, 1, 3) == doctest::Approx(est_on(direct, 1, 1, 3)));
  planned.assign(1, 2);
  direct.assign(1, 2);
  CHECK(planned.done());
}
