// 04 — plug your own learner into online learning: a greedy bandit over a few candidate placements,
// registered by name and served by the same learner actor as DOPPLER's policy. Nothing else changes:
// the engine runs the graph, online learning asks the actor for a placement each run (exploring in
// at most 30% of the runs), reports the measured makespan, and the bandit keeps the best arm.
//
//     x [64,256] ─┬─ x·A0 ─ silu ─ ·B0 ─┐
//                 ├─ x·A1 ─ silu ─ ·B1 ─┤
//                 ├─ x·A2 ─ silu ─ ·B2 ─┼─ reduce_sum ─ y      (4 experts, 4 CPU devices)
//                 └─ x·A3 ─ silu ─ ·B3 ─┘
//
// Build and run:  cmake --build --preset release --target example_04_custom_learner
//                 ./build/release/examples/example_04_custom_learner

#include <doppler/actors/online.hpp>
#include <doppler/runtime/learner.hpp>
#include <doppler/runtime/placer.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

/// A researcher's learner: arms are placements from a few placers; greedy = best mean measured
/// makespan (untried arms wait for exploration); exploring = the least-tried arm.
class bandit final : public doppler::learner_interface {
 public:
  std::string_view name() const noexcept override { return "bandit"; }

  doppler::placement place(const doppler::graph& g, const doppler::cluster& c, bool explore,
                           std::uint64_t) override {
    if (arms_.empty()) {  // candidates: two list schedulers, round-robin and two random seeds
      for (const char* m : {"cp", "heft", "round-robin", "random", "random"}) {
        doppler::placer_options po;
        po.seed = arms_.size();
        arms_.push_back({doppler::make_placer(m)->place(g, c, doppler::cost_model{}, po), 0, 0});
        arms_.back().p.method = std::string(m) + "#" + std::to_string(arms_.size() - 1);
      }
    }
    std::size_t pick = 0;
    for (std::size_t a = 1; a < arms_.size(); ++a) {
      const arm &x = arms_[a], &y = arms_[pick];
      bool better = explore ? x.n < y.n : x.n > 0 && (y.n == 0 || x.mean() < y.mean());
      if (better) pick = a;
    }
    return arms_[pick].p;
  }

  void observe(const doppler::graph&, const doppler::cluster&, const doppler::placement& p, double ms) override {
    for (auto& a : arms_)
      if (a.p.method == p.method) {
        a.sum += ms;
        ++a.n;
      }
  }

  void save(const std::string&) const override {}  // nothing worth keeping across runs here
  void load(const std::string&) override {}

 private:
  struct arm {
    doppler::placement p;
    double sum;
    int n;
    double mean() const { return sum / n; }
  };
  std::vector<arm> arms_;
};

}  // namespace

int main() {
  using namespace doppler;
  graph_builder b("experts");
  b.input("x", {64, 256});
  std::vector<std::string> outs;
  for (int e = 0; e < 4; ++e) {
    std::string s = std::to_string(e);
    std::string a = b.input("a" + s, {256, 256}), w = b.input("b" + s, {256, 256});  // copies: ids
    std::string xa = b.matmul("xa" + s, "x", a);
    std::string h = b.unary(op_kind::silu, "h" + s, xa);
    outs.push_back(b.matmul("o" + s, h, w));
  }
  b.reduce_sum("y", outs);
  auto g = std::make_shared<const graph>(std::move(b).build());

  // 1. Register the learner by name (like a placer); 2. serve it by the learner actor; 3. deploy.
  register_learner("bandit", "greedy bandit over cp/heft/round-robin/random placements",
                   [](const learner_config&) { return std::make_unique<bandit>(); });
  engine e(make_preset("cpu:4"));
  learner_client learner = e.spawn_learner(make_learner("bandit"));
  online_learning ol(e, learner, g, online_options{}.with_explore(0.3).with_run(run_options{}.with_trace(false).with_repeat(2)));

  // Unmeasured warm-up runs, as the measured ones run (`doppler run --warmup`): the process's first
  // runs pay thread start-up and page faults, up to 100x a later one's time, and would stick to the
  // bandit's first arm. On a small, shared host the arms' ms differ by noise: which one the bandit
  // ends on varies from run to run; the example shows the protocol, not a winner.
  for (int w = 0; w < 3; ++w) (void)e.run(g, learner.place(g), run_options{}.with_trace(false).with_repeat(2));

  std::printf("run  explored  placement       makespan   best so far\n");
  for (int k = 0; k < 20; ++k) {
    online_step s = ol.step();
    std::printf("%3d  %-8s  %-14s  %7.3f ms  %7.3f ms\n", s.run, s.explored ? "yes" : "no", s.used.method.c_str(),
                1e3 * s.makespan, 1e3 * s.best);
  }
  std::printf("%d of %d runs explored; the bandit now deploys %s\n", ol.explored(), ol.runs(),
              learner.place(g).method.c_str());
  return 0;
}
