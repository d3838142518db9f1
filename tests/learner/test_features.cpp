// Learner features and the assignment environment against hand-worked values and the cp teacher.
#include <doppler/learner/env.hpp>
#include <doppler/learner/features.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placer.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace doppler;
using namespace doppler::learner;

namespace {

using learner_fixtures::diamond;
using learner_fixtures::synth;

double raw(const graph_features& f, op_index v, node_feature k) {
  return f.raw[v * node_feature_count + static_cast<int>(k)];
}

}  // namespace

TEST_CASE("features of a hand-worked diamond") {
  graph g = diamond();
  cluster c = make_preset("doppler-paper:2");
  cost_model cm;
  auto f = compute_features(g, c, cm);
  REQUIRE(f.ops == 4);
  // compute, bottom level, top level, Σ comm of predecessors, out-degree × comm
  const double want[4][5] = {{2, 8, 0, 0, 2}, {1, 5, 3, 1, 3}, {3, 5, 3, 1, 1}, {1, 1, 7, 4, 0}};
  for (op_index v = 0; v < 4; ++v)
    for (int k = 0; k < node_feature_count; ++k)
      CHECK(raw(f, v, static_cast<node_feature>(k)) == doctest::Approx(want[v][k]));
  // Every column z-scored: mean 0, population σ 1; compute (2, 1, 3, 1): mean 1.75, σ √0.6875.
  for (int k = 0; k < node_feature_count; ++k) {
    double mean = 0, var = 0;
    for (op_index v = 0; v < 4; ++v) mean += f.z[v * node_feature_count + k];
    mean /= 4;
    for (op_index v = 0; v < 4; ++v) var += std::pow(f.z[v * node_feature_count + k] - mean, 2);
    CHECK(mean == doctest::Approx(0).epsilon(1e-6));
    CHECK(var / 4 == doctest::Approx(1).epsilon(1e-5));
  }
  CHECK(f.z[0] == doctest::Approx((2 - 1.75) / std::sqrt(0.6875)).epsilon(1e-6));
  // Bidirectional edges: 4 forward (comm of source 1, 1, 3, 1 z-scored, +1) then 4 reverse (−1).
  REQUIRE(f.msg_src.size() == 8);
  CHECK(f.msg_src[0] == 0);
  CHECK(f.msg_dst[0] == 1);
  CHECK(f.msg_src[4] == 1);
  CHECK(f.msg_dst[4] == 0);
  const double sd = std::sqrt(0.75);  // comm (1, 1, 3, 1): mean 1.5, σ² 0.75
  for (int e = 0; e < 8; ++e) {
    double comm = g[f.msg_src[e < 4 ? e : e - 4]].bytes / 1e10;
    CHECK(f.msg_feat[e * edge_feature_count] == doctest::Approx((comm - 1.5) / sd).epsilon(1e-6));
    CHECK(f.msg_feat[e * edge_feature_count + 1] == (e < 4 ? 1.0f : -1.0f));
  }
  // Longest paths: a → b (tie with c, first successor) → d; d ← b (tie, first predecessor) ← a.
  CHECK(f.down_next[0] == 1);
  CHECK(f.down_next[1] == 3);
  CHECK(f.down_next[3] == 3);
  CHECK(f.up_prev[3] == 1);
  CHECK(f.up_prev[2] == 0);
  CHECK(f.up_prev[0] == 0);
  CHECK(f.max_path_ops == 3);
  CHECK(f.time_scale == doctest::Approx(8));
}

TEST_CASE("z_score of a constant column is zero") {
  std::vector<float> out;
  z_score({3, 3, 3}, out);
  CHECK(out == std::vector<float>{0, 0, 0});
  z_score({}, out);
  CHECK(out.empty());
}

TEST_CASE("environment: device features, readiness and errors on the diamond") {
  graph g = diamond();
  cluster c = make_preset("doppler-paper:2");
  cost_model cm;
  auto f = compute_features(g, c, cm);
  assignment_env env(g, c, cm, f);
  REQUIRE(env.ready().size() == 1);
  CHECK(env.ready()[0] == 0);
  CHECK_THROWS_AS(env.assign(1, 0), error);  // b is not ready
  env.assign(0, 0);                          // a on device 0: runs 0..2
  CHECK(env.ready().size() == 2);
  env.assign(2, 1);  // c on device 1: starts at 2 + 1 (a's transfer), ends at 6
  std::vector<float> feat(2 * device_feature_count);
  std::vector<std::uint8_t> valid(2);
  CHECK(env.device_features(1, feat, valid) == 2);  // b: pred a on 0 (0..2)
  auto at = [&](int d, device_feature k) { return feat[d * device_feature_count + static_cast<int>(k)] * 8.0; };
  CHECK(at(0, device_feature::load) == doctest::Approx(2));
  CHECK(at(1, device_feature::load) == doctest::Approx(3));
  CHECK(at(0, device_feature::pred_compute) == doctest::Approx(2));
  CHECK(at(1, device_feature::pred_compute) == doctest::Approx(0));
  CHECK(at(0, device_feature::pred_start) == doctest::Approx(0));
  CHECK(at(0, device_feature::pred_end) == doctest::Approx(2));
  CHECK(at(0, device_feature::est) == doctest::Approx(2));  // device 0 free at 2, a local
  CHECK(at(1, device_feature::est) == doctest::Approx(6));  // device 1 busy until 6
  CHECK(at(0, device_feature::est_gap) == doctest::Approx(0));
  CHECK(at(1, device_feature::est_gap) == doctest::Approx(4));
  CHECK(at(0, device_feature::est_rank) == doctest::Approx(0));
  CHECK(at(1, device_feature::est_rank) == doctest::Approx(0.5 * 8));  // a fraction, not a time
  std::vector<device_index> devs;
  env.teacher_devices(1, devs);
  CHECK(devs == std::vector<device_index>{0});
  env.assign(1, 0);
  env.assign(3, 0);
  CHECK(env.done());
  CHECK_NOTHROW(check_placement(env.result(), g, c));
  CHECK(env.schedule_end() == doctest::Approx(6 + 1 + 1));  // d waits for c's transfer (1 s), runs 1 s
}

TEST_CASE("environment teacher equals cp_place's tie sets along cp's own trajectory") {
  for (const char* name : {"chain_mm_112nodes.txt", "ffnn_192nodes.txt", "transformer_block_215nodes.txt"}) {
    CAPTURE(name);
    graph g = load_graph(std::string(DOPPLER_PAPER_DIR) + "/" + name);
    cluster c = make_preset("doppler-paper:4");
    cost_model cm;
    std::vector<cp_decision> dec;
    placement cp = cp_place(g, c, cm, 7, &dec);
    auto f = compute_features(g, c, cm);
    assignment_env env(g, c, cm, f);
    std::vector<op_index> ops;
    std::vector<device_index> devs;
    std::vector<float> feat(c.device_count() * device_feature_count);
    std::vector<std::uint8_t> valid(c.device_count());
    for (const auto& d : dec) {
      env.teacher_ops(ops);
      CHECK(ops == d.tied_ops);
      env.device_features(d.op, feat, valid);
      env.teacher_devices(d.op, devs);
      CHECK(devs == d.tied_devices);
      for (device_index k : devs)  // cp's choices have zero gap and rank
        CHECK(feat[k * device_feature_count + static_cast<int>(device_feature::est_rank)] == 0.0f);
      env.assign(d.op, d.device);
    }
    CHECK(env.done());
    CHECK(env.result().device == cp.device);
    CHECK(env.result().order == cp.order);
  }
}

namespace {

/// Follows a teacher placement's labels (the first tied op, the first tied device) to the end.
placement follow_teacher(const graph& g, const cluster& c, const cost_model& cm, const placement& t) {
  auto f = compute_features(g, c, cm);
  assignment_env env(g, c, cm, f, true, nullptr, &t);
  std::vector<op_index> ops;
  std::vector<device_index> devs;
  std::vector<float> feat(c.device_count() * device_feature_count);
  std::vector<std::uint8_t> valid(c.device_count());
  while (!env.done()) {
    env.teacher_ops(ops);
    REQUIRE(!ops.empty());
    env.device_features(ops.front(), feat, valid);
    env.teacher_devices(ops.front(), devs);
    REQUIRE(!devs.empty());
    env.assign(ops.front(), devs.front());
  }
  return env.result();
}

}  // namespace

TEST_CASE("a teacher placement's labels reproduce it, up to relabelling interchangeable devices") {
  for (const char* name : {"ffnn_192nodes.txt", "transformer_block_215nodes.txt"}) {
    CAPTURE(name);
    graph g = load_graph(std::string(DOPPLER_PAPER_DIR) + "/" + name);
    cluster c = make_preset("doppler-paper:4");
    cost_model cm;
    placer_options po;
    po.budget = 300;
    for (const char* method : {"heft", "metis", "search"}) {
      CAPTURE(method);
      placement t = make_placer(method)->place(g, c, cm, po);
      // Relabel: teacher device k is device 3 - k here; following must undo nothing it can't see.
      for (auto& d : t.device) d = static_cast<device_index>(3 - d);
      placement got = follow_teacher(g, c, cm, t);
      CHECK_NOTHROW(check_placement(got, g, c));
      // The devices match through one bijection, and each device runs its ops in the teacher's order.
      std::vector<int> map(4, -1);
      bool bijective = true;
      for (op_index v = 0; v < g.size(); ++v) {
        if (map[t.device[v]] < 0) map[t.device[v]] = got.device[v];
        bijective = bijective && map[t.device[v]] == static_cast<int>(got.device[v]);
      }
      CHECK(bijective);
      std::vector<std::vector<op_index>> per_t(4), per_got(4);
      for (op_index v : t.order) per_t[t.device[v]].push_back(v);
      for (op_index v : got.order) per_got[got.device[v]].push_back(v);
      for (device_index d = 0; d < 4; ++d)
        if (map[d] >= 0) CHECK(per_t[d] == per_got[map[d]]);
      sim_options so;
      so.model = sim_model::simple;
      CHECK(simulate(g, c, got, cm, so).makespan == doctest::Approx(simulate(g, c, t, cm, so).makespan));
    }
  }
}

TEST_CASE("a hand-written teacher placement is followed, relabelled, and one for another graph refused") {
  graph g = diamond();
  cluster c = make_preset("doppler-paper:2");
  cost_model cm;
  placement t{{0, 1, 1, 0}, {0, 1, 2, 3}, "hand"};
  placement got = follow_teacher(g, c, cm, t);
  CHECK(got.order == t.order);
  CHECK(got.device == t.device);  // a to 0 (matching 0 -> 0), then b and c to the other device
  placement swapped{{1, 0, 0, 1}, {0, 2, 1, 3}, "hand"};  // c before b on their device
  got = follow_teacher(g, c, cm, swapped);
  CHECK(got.device == swapped.device);  // each teacher device is its own label while it is free
  CHECK(got.order == swapped.order);
  auto f = compute_features(g, c, cm);
  {  // An episode that leaves the teacher relabels: a on device 0 matches teacher device 1 to 0,
     // so b's teacher device 0 (taken) becomes the other free one, 1.
    assignment_env env(g, c, cm, f, true, nullptr, &swapped);
    std::vector<float> feat(2 * device_feature_count);
    std::vector<std::uint8_t> valid(2);
    std::vector<device_index> devs;
    env.device_features(0, feat, valid);
    env.teacher_devices(0, devs);
    CHECK(devs == std::vector<device_index>{1});
    env.assign(0, 0);
    env.device_features(1, feat, valid);
    env.teacher_devices(1, devs);
    CHECK(devs == std::vector<device_index>{1});
    env.assign(1, 1);
    env.device_features(2, feat, valid);
    env.teacher_devices(2, devs);
    CHECK(devs == std::vector<device_index>{1});  // c is with b on teacher device 0, now device 1
  }
  placement short_one{{0, 1}, {0, 1}, "hand"};
  CHECK_THROWS_AS(assignment_env(g, c, cm, f, true, nullptr, &short_one), error);
}

TEST_CASE("a teacher placement without an order: cp's op tie sets, the placement's devices") {
  graph g = load_graph(std::string(DOPPLER_PAPER_DIR) + "/ffnn_192nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  placement t = make_placer("metis")->place(g, c, cm, placer_options{});
  t.order.clear();
  auto f = compute_features(g, c, cm);
  assignment_env with(g, c, cm, f, true, nullptr, &t), plain(g, c, cm, f);
  std::vector<op_index> ops, cp_ops;
  std::vector<device_index> devs;
  std::vector<float> feat(c.device_count() * device_feature_count);
  std::vector<std::uint8_t> valid(c.device_count());
  while (!with.done()) {
    with.teacher_ops(ops);
    plain.teacher_ops(cp_ops);
    REQUIRE(ops == cp_ops);
    with.device_features(ops.front(), feat, valid);
    with.teacher_devices(ops.front(), devs);
    REQUIRE(!devs.empty());
    with.assign(ops.front(), devs.front());
    plain.assign(ops.front(), devs.front());
  }
  // Every op went to the device its teacher device was matched to: one bijection.
  std::vector<int> map(4, -1);
  for (op_index v = 0; v < g.size(); ++v) {
    if (map[t.device[v]] < 0) map[t.device[v]] = with.result().device[v];
    CHECK(map[t.device[v]] == static_cast<int>(with.result().device[v]));
  }
}
