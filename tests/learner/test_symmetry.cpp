// Interchangeable parts (find_symmetry) and a teacher placement that relabels them
// (assignment_env with a teacher symmetry, problem::with_teacher(t, true)).
#include <doppler/learner/env.hpp>
#include <doppler/learner/policy.hpp>
#include <doppler/learner/symmetry.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/workloads.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::synth;

namespace {

/// x feeds two branches a_i -> b_i that meet in y; `b2_flops` makes the second branch differ.
graph two_branches(double b2_flops = 1e10) {
  graph_builder b("two-branches");
  b.add(synth("x", {}, 1e10, 1e9));
  b.add(synth("a1", {"x"}, 2e10, 1e9));
  b.add(synth("a2", {"x"}, 2e10, 1e9));
  b.add(synth("b1", {"a1"}, 1e10, 1e9));
  b.add(synth("b2", {"a2"}, b2_flops, 1e9));
  b.add(synth("y", {"b1", "b2"}, 1e10, 1e9));
  return std::move(b).build();
}

op_index id(const graph& g, const char* name) { return *g.find(name); }

/// Swapping parts p and q (op for counterpart, every other op fixed) maps every op's producers
/// onto its image's producers: the swap is an automorphism of the DAG.
bool swap_is_automorphism(const graph& g, const op_symmetry& s, int p, int q) {
  std::vector<op_index> img(g.size());
  for (op_index v = 0; v < g.size(); ++v)
    img[v] = s.part[v] == p ? s.counterpart(v, q) : s.part[v] == q ? s.counterpart(v, p) : v;
  for (op_index v = 0; v < g.size(); ++v) {
    if (g[v].kind != g[img[v]].kind || g[v].flops != g[img[v]].flops || g[v].bytes != g[img[v]].bytes) return false;
    std::set<op_index> mapped, theirs(g.preds(img[v]).begin(), g.preds(img[v]).end());
    for (op_index u : g.preds(v)) mapped.insert(img[u]);
    if (mapped != theirs) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("symmetry: two identical branches are two parts of one kind and the rest is fixed") {
  graph g = two_branches();
  auto s = find_symmetry(g);
  REQUIRE(s.part_ops.size() == 2);
  CHECK(s.kinds == 1);
  CHECK(s.part[id(g, "x")] == -1);
  CHECK(s.part[id(g, "y")] == -1);
  CHECK(s.part[id(g, "a1")] == s.part[id(g, "b1")]);
  CHECK(s.part[id(g, "a2")] == s.part[id(g, "b2")]);
  CHECK(s.part[id(g, "a1")] != s.part[id(g, "a2")]);
  const int p1 = s.part[id(g, "a1")], p2 = s.part[id(g, "a2")];
  CHECK(s.counterpart(id(g, "a1"), p2) == id(g, "a2"));
  CHECK(s.counterpart(id(g, "b2"), p1) == id(g, "b1"));
  CHECK(swap_is_automorphism(g, s, p1, p2));
}

TEST_CASE("symmetry: branches with different costs or a chain have no parts") {
  auto s = find_symmetry(two_branches(3e10));
  CHECK(s.part_ops.empty());
  CHECK(std::all_of(s.part.begin(), s.part.end(), [](int p) { return p == -1; }));
  graph_builder b("chain");
  b.add(synth("a", {}, 1e10, 1e9));
  b.add(synth("b", {"a"}, 1e10, 1e9));
  b.add(synth("c", {"b"}, 1e10, 1e9));
  CHECK(find_symmetry(std::move(b).build()).part_ops.empty());
}

TEST_CASE("symmetry: the generated Llama block's attention shards are interchangeable") {
  workload_params p;
  graph g = make_workload("llama-block", p);
  auto s = find_symmetry(g);
  // One kind of part, one part per shard, each holding that shard's projections and attention.
  CHECK(s.kinds == 1);
  REQUIRE(s.part_ops.size() == 4);
  for (const auto& ops : s.part_ops) CHECK(ops.size() == 27);  // weights included
  for (int q = 1; q < 4; ++q) CHECK(swap_is_automorphism(g, s, 0, q));
  // Ops shared by every shard (the normed input, the block's output) stay fixed.
  CHECK(s.part[g.size() - 1] == -1);
}

TEST_CASE("teacher symmetry: the first op of a branch may take either branch's device, then the branch follows") {
  graph g = two_branches();
  cluster c = make_preset("doppler-paper:2");
  cost_model cm;
  auto f = compute_features(g, c, cm);
  auto s = find_symmetry(g);
  // The teacher: x, a2, b2, y on device 0, branch 1 on device 1.
  placement teacher;
  teacher.device.assign(g.size(), 0);
  teacher.device[id(g, "a1")] = teacher.device[id(g, "b1")] = 1;
  teacher.order = {id(g, "x"), id(g, "a1"), id(g, "a2"), id(g, "b1"), id(g, "b2"), id(g, "y")};
  assignment_env sym(g, c, cm, f, true, nullptr, &teacher, nullptr, &s), fixed(g, c, cm, f, true, nullptr, &teacher);
  std::vector<float> feat(2 * device_feature_count);
  std::vector<std::uint8_t> valid(2);
  std::vector<device_index> devs;
  auto devices = [&](assignment_env& env, const char* name) {
    env.device_features(id(g, name), feat, valid);
    env.teacher_devices(id(g, name), devs);
    std::sort(devs.begin(), devs.end());
    return devs;
  };
  auto both = [&](const char* name, device_index d) {
    for (auto* env : {&sym, &fixed}) {
      env->device_features(id(g, name), feat, valid);
      env->assign(id(g, name), d);
    }
  };
  both("x", 0);
  // a2 first, to device 1: the fixed teacher says 0 (a2's own device); the symmetric one accepts
  // either branch's device.
  CHECK(devices(fixed, "a2") == std::vector<device_index>{0});
  CHECK(devices(sym, "a2") == std::vector<device_index>{0, 1});
  both("a2", 1);
  // Branch 2 now stands for the teacher's branch 1 (device 1) and branch 1 for its branch 2.
  CHECK(devices(sym, "b2") == std::vector<device_index>{1});
  CHECK(devices(sym, "a1") == std::vector<device_index>{0});
  CHECK(devices(fixed, "b2") == std::vector<device_index>{0});
  CHECK(devices(fixed, "a1") == std::vector<device_index>{1});
  // SEL: the teacher runs a1 (its branch-1 op) right after x; a2 stood for it, so after a2 the next
  // op on device 1 is b1's stand-in b2, and a1 stands for a2, next on device 0.
  std::vector<op_index> ops;
  sym.teacher_ops(ops);
  std::sort(ops.begin(), ops.end());
  CHECK(ops == std::vector<op_index>{id(g, "a1"), id(g, "b2")});
}

TEST_CASE("teacher symmetry: a symmetry of a graph of another size is refused and with_teacher computes one only when asked") {
  graph g = two_branches();
  cluster c = make_preset("doppler-paper:2");
  cost_model cm;
  auto f = compute_features(g, c, cm);
  placement teacher;
  teacher.device.assign(g.size(), 0);
  auto shorter = find_symmetry(two_branches(3e10));
  shorter.part.pop_back();
  CHECK_THROWS_AS(assignment_env(g, c, cm, f, true, nullptr, &teacher, nullptr, &shorter), error);
  graph_builder b("chain6");  // as many ops, one edge fewer
  b.add(synth("o0", {}, 1e10, 1e9));
  for (int i = 1; i < 6; ++i) b.add(synth("o" + std::to_string(i), {"o" + std::to_string(i - 1)}, 1e10, 1e9));
  const auto chain = find_symmetry(std::move(b).build());
  REQUIRE(chain.part.size() == g.size());
  CHECK_THROWS_AS(assignment_env(g, c, cm, f, true, nullptr, &teacher, nullptr, &chain), error);
  problem pb(g, c, cm);
  pb.with_teacher(std::make_shared<const placement>(teacher));
  CHECK(pb.teacher_symmetry() == nullptr);
  pb.with_teacher(std::make_shared<const placement>(teacher), true);
  REQUIRE(pb.teacher_symmetry() != nullptr);
  CHECK(pb.teacher_symmetry()->part_ops.size() == 2);
  pb.with_teacher(nullptr, true);  // no teacher: nothing to relabel
  CHECK(pb.teacher_symmetry() == nullptr);
}

TEST_CASE("teacher symmetry: a placement with its shards permuted is followed step for step") {
  // The 6.50 us placement of the small block on the DGX-1 offloads shard 0 to gpu1 and part of shard
  // 3 to gpu4 and gpu2; the same placement with the shards rotated (s0 -> s1 -> s2 -> s3 -> s0)
  // simulates the same, and a symmetric teacher accepts every step of it. The fixed one does not.
  workload_params wp;
  graph g = make_workload("llama-block", wp);
  cluster c = make_preset("dgx1-v100");
  cost_model cm;
  auto f = compute_features(g, c, cm);
  const placement teacher =
      load_placement(std::string(DOPPLER_TEST_DATA_DIR) + "/placements/llama-block-dgx1-v100-anneal.json", g, c);
  auto s = find_symmetry(g);
  REQUIRE(s.part_ops.size() == 4);
  REQUIRE(s.kinds == 1);
  // The rotation: op v of part k stands where its counterpart in part k+1 stands in the teacher.
  auto rotate = [&](op_index v) {
    return s.part[v] < 0 ? v : s.counterpart(v, (s.part[v] + 1) % 4);
  };
  std::vector<op_index> inverse(g.size());
  for (op_index v = 0; v < g.size(); ++v) inverse[rotate(v)] = v;
  placement rotated;
  rotated.device.resize(g.size());
  for (op_index v = 0; v < g.size(); ++v) rotated.device[v] = teacher.device[rotate(v)];
  for (op_index w : teacher.order) rotated.order.push_back(inverse[w]);
  sim_options so;
  so.model = sim_model::wc;
  CHECK(simulate(g, c, rotated, cm, so).makespan == doctest::Approx(simulate(g, c, teacher, cm, so).makespan));
  CHECK(rotated.device != teacher.device);
  auto follow = [&](const op_symmetry* sym) {
    assignment_env env(g, c, cm, f, true, nullptr, &teacher, nullptr, sym);
    std::vector<float> feat(c.device_count() * device_feature_count);
    std::vector<std::uint8_t> valid(c.device_count());
    std::vector<op_index> ops;
    std::vector<device_index> devs;
    std::size_t sel = 0, plc = 0;
    for (op_index v : rotated.order) {
      env.teacher_ops(ops);
      sel += std::find(ops.begin(), ops.end(), v) != ops.end();
      env.device_features(v, feat, valid);
      env.teacher_devices(v, devs);
      plc += std::find(devs.begin(), devs.end(), rotated.device[v]) != devs.end();
      env.assign(v, rotated.device[v]);
    }
    return std::pair{sel, plc};
  };
  const auto [sel_sym, plc_sym] = follow(&s);
  CHECK(sel_sym == g.size());
  CHECK(plc_sym == g.size());
  const auto [sel_fixed, plc_fixed] = follow(nullptr);
  MESSAGE("the rotated placement under the fixed teacher: SEL " << sel_fixed << ", PLC " << plc_fixed << " of " << g.size());
  CHECK(sel_fixed < g.size());
  CHECK(plc_fixed < g.size());
}
