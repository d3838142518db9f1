// The learner actor: its protocol answered for a toy learner, the exploration budget of online
// learning, a researcher's learner registered by name and served by the same actor, the built-in
// baselines, and online learning with a bandit that ends no worse than it started.
//
//   x [16,64] ─┬─ x·W0 ─┐
//              └─ x·W1 ─┴─ reduce_sum ─ silu ─ y
#include <doppler/actors/engine.hpp>
#include <doppler/actors/learner.hpp>
#include <doppler/actors/online.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/learner.hpp>
#include <doppler/runtime/placer.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace doppler;

namespace {

std::shared_ptr<const graph> small_graph() {
  graph_builder b("two-shards");
  b.input("x", {16, 64});
  std::vector<std::string> parts;
  for (int s = 0; s < 2; ++s) {
    std::string w = b.input("w" + std::to_string(s), {64, 64});
    parts.push_back(b.matmul("xw" + std::to_string(s), "x", w));
  }
  b.reduce_sum("sum", parts);
  b.unary(op_kind::silu, "y", "sum");
  return std::make_shared<const graph>(std::move(b).build());
}

/// Records every call; greedy places everything on device 0, exploring on device (seed % devices).
struct toy_learner final : learner_interface {
  int places = 0, explores = 0, observes = 0;
  double last = -1;
  std::string saved;
  std::string_view name() const noexcept override { return "toy"; }
  placement place(const graph& g, const cluster& c, bool explore, std::uint64_t seed) override {
    ++places;
    if (explore) ++explores;
    placement p;
    p.device.assign(g.size(), explore ? static_cast<device_index>(seed % c.device_count()) : 0);
    p.method = "toy";
    return p;
  }
  void observe(const graph&, const cluster&, const placement&, double ms) override {
    ++observes;
    last = ms;
  }
  /// Every second observation "updates", with its makespan as the loss.
  learner_update last_update() const override { return {observes % 2 == 0, last, observes % 2 == 0 ? 2 : 0}; }
  void save(const std::string& path) const override { std::ofstream(path) << "toy " << observes; }
  void load(const std::string& path) override {
    if (!std::filesystem::exists(path)) throw error(errc::io, path, "", "no such file");
    std::ifstream in(path);
    std::getline(in, saved);
  }
};

/// Epsilon-greedy over a few candidate placements: exploring tries the least-tried arm, greedy
/// returns the arm of the best mean measured makespan (cp before anything is measured).
struct bandit_learner final : learner_interface {
  std::vector<placement> arms;
  std::vector<double> sum;
  std::vector<int> n;
  std::vector<int> greedy_arms;  // arm handed out by each greedy place()
  std::vector<double> observed;  // every makespan observe() was told, in order
  std::string_view name() const noexcept override { return "test-bandit"; }
  void init(const graph& g, const cluster& c) {
    if (!arms.empty()) return;
    for (const char* m : {"cp", "round-robin", "single", "random"})
      arms.push_back(make_placer(m)->place(g, c, cost_model{}, placer_options{}));
    sum.assign(arms.size(), 0);
    n.assign(arms.size(), 0);
  }
  int best_arm() const {
    int best = 0;
    for (int a = 1; a < static_cast<int>(arms.size()); ++a)
      if (n[a] > 0 && (n[best] == 0 || sum[a] / n[a] < sum[best] / n[best])) best = a;
    return best;
  }
  placement place(const graph& g, const cluster& c, bool explore, std::uint64_t) override {
    init(g, c);
    if (!explore) {
      greedy_arms.push_back(best_arm());
      return arms[greedy_arms.back()];
    }
    return arms[std::min_element(n.begin(), n.end()) - n.begin()];
  }
  void observe(const graph& g, const cluster& c, const placement& p, double ms) override {
    init(g, c);
    observed.push_back(ms);
    for (std::size_t a = 0; a < arms.size(); ++a)
      if (same_placement(arms[a], p)) {
        sum[a] += ms;
        ++n[a];
        return;
      }
  }
  void save(const std::string&) const override {}
  void load(const std::string&) override {}
};

}  // namespace

TEST_CASE("the learner actor answers name, place, observe, train, save and load for a toy learner") {
  caf::actor_system_config cfg;
  cfg.set("logger.console", caf::atom("none"));
  cfg.add_message_types<caf::id_block::doppler_actors>();
  caf::actor_system sys{cfg};
  auto toy = std::make_shared<toy_learner>();
  auto a = actors::spawn_learner(sys, toy);
  auto client = actors::make_learner_client(sys, a, std::make_shared<const cluster>(make_preset("cpu:3")));
  auto g = small_graph();

  CHECK(client.name() == "toy");
  placement greedy = client.place(g);
  CHECK(greedy.device == std::vector<device_index>(g->size(), 0));
  placement explore = client.place(g, true, 5);
  CHECK(explore.device == std::vector<device_index>(g->size(), 2));
  CHECK_FALSE(client.observe(g, explore, 0.25).updated);  // observe answers with last_update()
  CHECK(toy->observes == 1);
  CHECK(toy->last == 0.25);
  learner_update u = client.observe(g, explore, 0.5);
  CHECK(u.updated);
  CHECK(u.loss == 0.5);
  CHECK(u.episodes == 2);
  CHECK(client.train(g, 3).episodes == 0);  // the default train: nothing to train

  auto file = (std::filesystem::temp_directory_path() / "doppler_toy_learner.txt").string();
  client.save(file);
  client.load(file);
  CHECK(toy->saved == "toy 2");
  std::filesystem::remove(file);
  // A learner's error comes back as the same doppler::error.
  try {
    client.load(file);
    FAIL("load of a missing file must fail");
  } catch (const error& e) {
    CHECK(e.code() == errc::io);
    CHECK(std::string(e.what()).find(file) != std::string::npos);
  }
  // A placement for another graph is refused before the learner sees it.
  placement bad;
  bad.device = {0};
  CHECK_THROWS_AS(client.observe(g, bad, 1.0), error);
  CHECK(toy->observes == 2);
  CHECK_THROWS_AS(client.observe(g, greedy, -1.0), error);
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_CASE("the exploration budget: at most ceil(fraction x runs) after every run, the first run greedy") {
  for (double f : {0.0, 0.05, 0.1, 0.25, 0.5, 1.0}) {
    int explored = 0;
    for (int run = 1; run <= 20; ++run) {
      bool e = may_explore(run, explored, f);
      if (run == 1) CHECK_FALSE(e);
      explored += e;
      CHECK(explored <= static_cast<int>(std::ceil(f * run - 1e-9)));
    }
    CAPTURE(f);
    CHECK(explored == std::max(0, std::min(19, static_cast<int>(std::ceil(f * 20 - 1e-9)))));
  }
  CHECK_THROWS_AS(may_explore(1, 0, -0.1), error);
  CHECK_THROWS_AS(may_explore(1, 0, 1.5), error);
  CHECK_THROWS_AS(may_explore(1, 0, std::nan("")), error);
}

TEST_CASE("a learner registered by name is served by the engine's learner actor, unknown names are refused") {
  register_learner("test-bandit", "a test bandit", [](const learner_config&) { return std::make_unique<bandit_learner>(); });
  CHECK(has_learner("test-bandit"));
  auto names = learner_names();
  CHECK(std::find(names.begin(), names.end(), "cp") != names.end());
  CHECK(std::find(names.begin(), names.end(), "heft") != names.end());
  try {
    make_learner("no-such-learner");
    FAIL("unknown learner must throw");
  } catch (const error& e) {
    CHECK(e.code() == errc::unknown_kind);
    CHECK(std::string(e.what()).find("test-bandit") != std::string::npos);
  }
  engine e(make_preset("cpu:2"));
  auto client = e.spawn_learner(make_learner("test-bandit"));
  CHECK(client.name() == "test-bandit");
  CHECK_THROWS_AS(e.spawn_learner(nullptr), error);
  CHECK_THROWS_AS(online_learning(e, client, small_graph(), online_options{}.with_explore(2)), error);
}

TEST_CASE("online learning: 20 runs at 10% explore exactly twice, greedy runs use the bandit's current best") {
  auto g = small_graph();
  cluster c = make_preset("cpu:4");
  engine e(c);
  auto bandit = std::make_shared<bandit_learner>();
  online_learning ol(e, e.spawn_learner(bandit), g, online_options{}.with_explore(0.1));
  std::vector<online_step> steps;
  for (int k = 0; k < 20; ++k) steps.push_back(ol.step());
  CHECK(ol.runs() == 20);
  CHECK(ol.explored() == 2);
  CHECK_FALSE(steps[0].explored);
  int explored = 0;
  for (const auto& s : steps) {
    explored += s.explored;
    CHECK(s.makespan > 0);
    CHECK(s.best <= s.makespan);
  }
  CHECK(explored == 2);
  // Every observation reached the bandit: 20 measurements over its arms.
  int total = 0;
  for (int k : bandit->n) total += k;
  CHECK(total == 20);
  CHECK(bandit->greedy_arms.size() == 18);
  // Greedy runs placed what the bandit's greedy place() chose: the arm of the best mean measured
  // makespan at that time (bookkeeping, not wall-clock speed).
  std::size_t j = 0;
  for (const auto& s : steps)
    if (!s.explored) CHECK(s.used.device == bandit->arms[bandit->greedy_arms[j++]].device);
  // The first greedy run had nothing measured: cp.
  CHECK(bandit->greedy_arms.front() == 0);
}

TEST_CASE("online learning with a bandit ends on a placement no worse than its first (by its own means)") {
  auto g = small_graph();
  engine e(make_preset("cpu:4"));
  auto bandit = std::make_shared<bandit_learner>();
  online_learning ol(e, e.spawn_learner(bandit), g, online_options{}.with_explore(0.5).with_seed(3));
  std::vector<online_step> steps{ol.step()};
  const online_step first = steps.front();  // a copy: the vector grows
  for (int k = 0; k < 11; ++k) steps.push_back(ol.step());
  CHECK(ol.explored() == 6);
  int first_arm = -1;
  for (std::size_t a = 0; a < bandit->arms.size(); ++a)
    if (same_placement(bandit->arms[a], first.used)) {
      first_arm = static_cast<int>(a);
      break;
    }
  REQUIRE(first_arm >= 0);
  int best = bandit->best_arm();
  CHECK(bandit->sum[best] / bandit->n[best] <= bandit->sum[first_arm] / bandit->n[first_arm]);
  placement final_p = ol.learner().place(g);  // answered after every observe before it
  CHECK(final_p.device == bandit->arms[best].device);
  CHECK(ol.best_makespan() <= first.makespan);
  // The learner was told each run's own measured makespan, in order (not a constant, not another run's).
  REQUIRE(bandit->observed.size() == steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    CAPTURE(k);
    CHECK(bandit->observed[k] == steps[k].makespan);
  }
}

TEST_CASE("the cp and heft learners place like their placers, ignore observations, and round-trip their state") {
  auto g = small_graph();
  cluster c = make_preset("cpu:3");
  for (const char* name : {"cp", "heft"}) {
    auto l = make_learner(name);
    CHECK(l->name() == name);
    placement p = l->place(*g, c, false, 0);
    CHECK(p.device == make_placer(name)->place(*g, c, cost_model{}, placer_options{}).device);
    l->observe(*g, c, p, 1.0);
    CHECK(l->place(*g, c, false, 0).device == p.device);
    auto file = (std::filesystem::temp_directory_path() / (std::string("doppler_learner_") + name + ".json")).string();
    l->save(file);
    l->load(file);
    auto other = make_learner(std::string(name) == "cp" ? "heft" : "cp");
    CHECK_THROWS_AS(other->load(file), error);
    // A field of the wrong type is a doppler error naming the file and field, not a JSON library's.
    for (const char* text : {R"({"format": 5, "learner": "cp"})", R"({"format": "doppler-learner/1", "learner": 7})",
                             R"({"format": "doppler-learner/1"})", R"([1])"}) {
      std::ofstream(file) << text;
      try {
        l->load(file);
        FAIL("accepted " << text);
      } catch (const error& e) {
        CAPTURE(e.what());
        CHECK(e.file() == file);
        const bool bad_format = std::string(text).find("\"format\": 5") != std::string::npos || text[0] == '[';
        CHECK(e.path() == (bad_format ? "format" : "learner"));
      }
    }
    std::filesystem::remove(file);
    CHECK_THROWS_AS(l->load(file), error);
  }
}
