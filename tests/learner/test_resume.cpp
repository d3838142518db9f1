// Stopping and resuming train(): a training stopped after any batch and resumed from its saved state
// (train_state through a doppler-train-state/1 file and policy::deserialize) gives the same curve,
// parameters and result as one that ran straight through; bad state files are refused by name.
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/placer.hpp>

#include "learner_fixtures.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace doppler;
using namespace doppler::learner;
using learner_fixtures::paper;
using learner_fixtures::temp_path;

namespace {

policy_options small_net() { return policy_options().with_hidden(16).with_steps(2).with_seed(5); }

/// One paper graph on its cluster, as the problem list train() and stop_and_resume take.
struct one_problem {
  graph g;
  cluster c;
  cost_model cm;
  problem pb;
  std::vector<const problem*> pbs;
  one_problem(const char* file, const char* preset) : g(paper(file)), c(make_preset(preset)), pb(g, c, cm), pbs{&pb} {}
};

train_options settings(bool ppo) {
  train_options o;
  o.with_il(12).with_rl(24).with_batch(4).with_seed(5).with_model(sim_model::simple);
  o.self_imitation = 1;
  o.self_imitation_gate = true;
  o.eval_every = 2;
  o.ppo = ppo;
  return o;
}

/// The same training in every respect that matters: each row, the greedy placement, the counters.
void check_same(const train_result& a, const train_result& b, policy& pa, policy& pb,
                const std::vector<const problem*>& pbs) {
  REQUIRE(a.curve.size() == b.curve.size());
  for (std::size_t i = 0; i < a.curve.size(); ++i) {
    CAPTURE(i);
    CHECK(a.curve[i].episode == b.curve[i].episode);
    CHECK(a.curve[i].phase == b.curve[i].phase);
    CHECK(a.curve[i].makespan == b.curve[i].makespan);
    CHECK(a.curve[i].best == b.curve[i].best);
    CHECK(a.curve[i].loss == b.curve[i].loss);
    CHECK(a.curve[i].problem == b.curve[i].problem);
  }
  CHECK(a.greedy_makespan == b.greedy_makespan);
  CHECK(a.last_greedy_makespan == b.last_greedy_makespan);
  CHECK(a.best_makespan == b.best_makespan);
  CHECK(same_placement(a.best, b.best));
  CHECK(a.initial_greedy_makespan == b.initial_greedy_makespan);
  CHECK(a.final_agreement == b.final_agreement);
  CHECK(a.rl_updates == b.rl_updates);
  CHECK(a.self_imitation_updates == b.self_imitation_updates);
  CHECK(a.ppo_epochs_mean == b.ppo_epochs_mean);
  for (const problem* q : pbs) CHECK(same_placement(pa.place(*q), pb.place(*q)));
}

/// Trains with `o`, stopping at the `stops`-th polls (1-based, ascending) and resuming each time
/// from the state file the stop wrote; returns the final result and leaves the policy in `out`.
train_result stop_and_resume(const std::vector<const problem*>& pbs, train_options o, std::vector<int> stops,
                             std::optional<policy>& out, std::vector<int>* phases = nullptr,
                             const policy_options& net = small_net()) {
  const std::string file = temp_path("resume_state.cbor");
  int polls = 0;
  std::size_t next = 0;
  o.stop = [&] { return next < stops.size() && ++polls == stops[next]; };
  o.on_checkpoint = [&](const train_state& s) {
    if (phases) phases->push_back(s.phase);
    save_train_state(file, s, R"({"run": "test"})");
  };
  out.emplace(net);
  train_result r = train(*out, std::span<const problem* const>(pbs), o);
  train_state st;
  while (r.stopped) {
    ++next;
    std::string settings;
    st = load_train_state(file, settings);
    CHECK(settings == R"({"run":"test"})");
    out.emplace(policy::deserialize(st.policy, file));
    o.resume = &st;
    r = train(*out, std::span<const problem* const>(pbs), o);
  }
  CHECK(next == stops.size());
  std::filesystem::remove(file);
  return r;
}

}  // namespace

TEST_CASE("resume: a training stopped in phase I or II and resumed equals the uninterrupted one") {
  const one_problem one("ffnn_192nodes.txt", "doppler-paper:4");
  const problem& pb = one.pb;
  const auto& pbs = one.pbs;
  for (bool ppo : {false, true}) {
    CAPTURE(ppo);
    policy straight(small_net());
    const train_result want = train(straight, pb, settings(ppo));
    REQUIRE(want.curve.size() == 36);
    // Polls come after every batch but the last of each phase: 2 in phase I (after episodes 4 and
    // 8), then phase II's 5 (after 16, 20, 24, 28, 32).
    for (const auto& stops : std::vector<std::vector<int>>{{1}, {3}, {5}, {1, 4}}) {
      CAPTURE(stops.size());
      CAPTURE(stops.front());
      std::optional<policy> resumed;
      const train_result got = stop_and_resume(pbs, settings(ppo), stops, resumed);
      CHECK_FALSE(got.stopped);
      check_same(want, got, straight, *resumed, pbs);
    }
  }
}

TEST_CASE("resume: dynamic SEL with self-imitation, its episode's SEL features kept in the state") {
  const one_problem one("8gpu_transformer_block.txt", "doppler-paper:8");
  const problem& pb = one.pb;
  const auto& pbs = one.pbs;
  auto net = small_net();
  net.dynamic_sel = true;
  train_options o = settings(false);
  o.self_imitation_gate = false;  // self-imitation after every update: the saved episode is used
  policy straight(net);
  const train_result want = train(straight, pb, o);
  REQUIRE(want.self_imitation_updates > 0);
  for (int stop : {3, 5}) {  // in phase II, with a self-imitation episode saved
    CAPTURE(stop);
    std::optional<policy> resumed;
    const train_result got = stop_and_resume(pbs, o, {stop}, resumed, nullptr, net);
    CHECK_FALSE(got.stopped);
    check_same(want, got, straight, *resumed, pbs);
  }
}

TEST_CASE("resume: two problems taking turns resume on the right problem and baseline") {
  graph a = paper("ffnn_192nodes.txt"), b = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pa(a, c, cm), pb(b, c, cm);
  const std::vector<const problem*> pbs{&pa, &pb};
  train_options o = settings(false);
  o.with_il(8).with_rl(12).with_batch(2);
  policy straight(small_net());
  const train_result want = train(straight, std::span<const problem* const>(pbs), o);
  std::optional<policy> resumed;
  // Stopped after phase II's third batch: the next batch is problem 1's.
  const train_result got = stop_and_resume(pbs, o, {6}, resumed);
  check_same(want, got, straight, *resumed, pbs);
  REQUIRE(got.per_problem.size() == 2);
  CHECK(got.per_problem[1].greedy_makespan == want.per_problem[1].greedy_makespan);
}

TEST_CASE("resume: periodic checkpoints and the one after phase II") {
  const one_problem one("ffnn_192nodes.txt", "doppler-paper:4");
  const problem& pb = one.pb;
  const auto& pbs = one.pbs;
  train_options o = settings(false);
  o.checkpoint_every = 8;
  std::vector<int> phases;
  std::optional<policy> pol;
  const train_result r = stop_and_resume(pbs, o, {}, pol, &phases);
  // After episodes 8 (phase I), 16, 24, 32 (phase II), and after phase II's model selection.
  CHECK(phases == std::vector<int>{1, 2, 2, 2, 3});
  // The state after phase II resumes to the same result without another episode.
  const std::string file = temp_path("resume_after_ii.cbor");
  train_state last;
  o.on_checkpoint = [&](const train_state& s) { last = s; };
  policy again(small_net());
  (void)train(again, pb, o);
  REQUIRE(last.phase == 3);
  save_train_state(file, last, "{}");
  std::string settings_text;
  train_state st = load_train_state(file, settings_text);
  policy from_state = policy::deserialize(st.policy, file);
  train_options cont = o;
  cont.resume = &st;
  cont.on_checkpoint = nullptr;
  const train_result r2 = train(from_state, pb, cont);
  CHECK(r2.curve.size() == r.curve.size());
  CHECK(r2.greedy_makespan == r.greedy_makespan);
  CHECK(same_placement(from_state.place(pb), pol->place(pb)));
  std::filesystem::remove(file);
}

TEST_CASE("resume: bad state files and mismatched resumes are refused by name") {
  graph g = paper("ffnn_192nodes.txt"), b = paper("chain_mm_112nodes.txt");
  cluster c = make_preset("doppler-paper:4");
  cost_model cm;
  problem pb(g, c, cm), other(b, c, cm);
  train_options o = settings(false);
  train_state saved;
  int polls = 0;
  o.stop = [&] { return ++polls == 3; };  // in phase II, after episode 16
  o.on_checkpoint = [&](const train_state& s) { saved = s; };
  policy pol(small_net());
  REQUIRE(train(pol, pb, o).stopped);
  REQUIRE(saved.phase == 2);
  const std::string file = temp_path("bad_state.cbor");
  save_train_state(file, saved, "{}");
  const std::string good = read_file(file);
  std::string text;
  // Truncated, not CBOR, another format: errors name the file.
  write_file_atomic(file, good.substr(0, good.size() / 2));
  CHECK_THROWS_WITH_AS(load_train_state(file, text), doctest::Contains(file.c_str()), error);
  write_file_atomic(file, "{\"format\": \"doppler-train-state/1\"}");
  CHECK_THROWS_WITH_AS(load_train_state(file, text), doctest::Contains(file.c_str()), error);
  std::string other_format = good;
  const auto at = other_format.find("doppler-train-state/1");
  REQUIRE(at != std::string::npos);
  other_format[at + 20] = '9';
  write_file_atomic(file, other_format);
  try {
    (void)load_train_state(file, text);
    FAIL("a state of another format loaded");
  } catch (const error& e) {
    CHECK(e.code() == errc::bad_format_tag);
    CHECK(std::string(e.what()).find(file) != std::string::npos);
  }
  write_file_atomic(file, good);
  train_state st = load_train_state(file, text);
  CHECK(st.done == 16 - 12);
  CHECK(st.curve.size() == 16);
  // A state for one problem does not resume two, nor a phase II shorter than it has run.
  train_options cont = settings(false);
  cont.resume = &st;
  policy a = policy::deserialize(st.policy, file);
  const problem* two[] = {&pb, &other};
  CHECK_THROWS_AS(train(a, std::span<const problem* const>(two), cont), error);
  cont.with_rl(2);
  CHECK_THROWS_WITH_AS(train(a, pb, cont), doctest::Contains("episode counts"), error);
  // A damaged policy inside the state: refused naming the file.
  CHECK_THROWS_WITH_AS(policy::deserialize(st.policy.substr(0, st.policy.size() / 2), file), doctest::Contains(file.c_str()), error);
  // Damaged fields, each refused by its path: phase II would have read a per-problem array out of
  // bounds; NaN or negative makespans; a curve row out of sequence or of an unknown phase.
  auto refused = [&](const std::function<void(train_state&)>& damage, const char* field) {
    train_state d = st;
    damage(d);
    save_train_state(file, d, "{}");
    CAPTURE(field);
    CHECK_THROWS_WITH_AS(load_train_state(file, text), doctest::Contains(field), error);
  };
  refused([](train_state& d) { d.phase = 1, d.cost_n.clear(); }, "$.cost_sum");  // in phase I too
  refused([](train_state& d) { d.self_episode.emplace_back(); }, "$.cost_sum");
  refused([](train_state& d) { d.best_makespan = std::nan(""); }, "$.best_makespan");
  refused([](train_state& d) { d.best_makespan = -5; }, "$.best_makespan");
  refused([](train_state& d) { d.ema[0] = -1; }, "$.ema");
  refused([](train_state& d) { d.curve[3].episode = 9; }, "$.curve[3]");
  refused([](train_state& d) { d.curve[3].phase = "xx"; }, "$.curve[3]");
  refused([](train_state& d) { d.curve[3].problem = 1; }, "$.curve");
  // A state whose progress disagrees with its curve (done 0, 16 rows) is refused before any episode.
  train_state behind = st;
  behind.done = 0;
  train_options again = settings(false);
  again.resume = &behind;
  policy b2 = policy::deserialize(st.policy, file);
  CHECK_THROWS_WITH_AS(train(b2, pb, again), doctest::Contains("16 curve rows"), error);
  std::filesystem::remove(file);
}
