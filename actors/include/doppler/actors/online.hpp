#pragma once
/// Online learning during deployment (no CAF, no Torch in this header): every run the engine executes
/// asks the learner actor for a placement — greedy, or exploring while within the user's budget —,
/// runs it on the actor runtime, and reports the measured makespan to the learner (`observe`), which
/// updates before the next run. With `explore = 1` and DOPPLER's learner this is phase III (REINFORCE
/// on measured makespans) driven entirely by messages.
///
///   doppler::engine e(doppler::make_preset("cpu:4"));
///   auto learner = e.spawn_learner(doppler::make_learner("doppler", cfg));
///   doppler::online_learning ol(e, learner, graph, doppler::online_options{}.with_explore(0.1));
///   for (int k = 0; k < 20; ++k) std::cout << ol.step().makespan << "\n";

#include <doppler/actors/engine.hpp>
#include <doppler/runtime/learner.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace doppler {

/// A learner actor in an engine's actor system, seen through blocking calls. Copies share the actor.
/// Errors the learner throws come back as the same `doppler::error`. Must not outlive its engine.
class learner_client {
 public:
  struct impl;
  explicit learner_client(std::shared_ptr<impl> i) : impl_(std::move(i)) {}

  /// The learner's registry name.
  std::string name() const;
  /// A placement of g on the engine's cluster: greedy, or exploring (with seed).
  placement place(std::shared_ptr<const graph> g, bool explore = false, std::uint64_t seed = 0) const;
  /// Reports a measured makespan; returns once the learner has updated, with what it did.
  learner_update observe(std::shared_ptr<const graph> g, const placement& p, double makespan) const;
  /// `episodes` episodes of training in the simulator.
  learner_train_report train(std::shared_ptr<const graph> g, int episodes) const;
  void save(const std::string& path) const;
  void load(const std::string& path) const;
  /// A client of the same learner actor whose placements are for cluster `c` (one learner serving
  /// problems on several clusters, e.g. phase III of `doppler train --graph a b --cluster c1 c2`).
  learner_client on(std::shared_ptr<const cluster> c) const;

 private:
  std::shared_ptr<impl> impl_;
};

struct online_options {
  /// Exploration budget: after any n runs at most ceil(explore × n) of them tried a non-greedy
  /// placement (`may_explore`, learner.hpp); the first run is always greedy. In [0, 1].
  double explore = 0.1;
  bool learn = true;         ///< report each measured makespan to the learner (false: deploy only)
  std::uint64_t seed = 0;    ///< exploration seeds derive from it
  run_options run = run_options{}.with_trace(false);  ///< how each run executes (repeat > 1: mean)

  online_options& with_explore(double f) { explore = f; return *this; }
  online_options& with_learn(bool on) { learn = on; return *this; }
  online_options& with_seed(std::uint64_t s) { seed = s; return *this; }
  online_options& with_run(run_options r) { run = std::move(r); return *this; }
};

/// One deployment run.
struct online_step {
  int run = 0;                 ///< 1-based
  bool explored = false;       ///< the placement was an exploring one
  double makespan = 0;         ///< measured (seconds; the mean when run.repeat > 1)
  double best = 0;             ///< best measured makespan so far
  double greedy = 0;           ///< measured makespan of the latest greedy run
  placement used;              ///< the placement that ran
  learner_update update;       ///< what the learner's observe did (nothing when learn is off)
  /// The engine's failovers in this run (run_result::failovers; `engine_options::failover`): ops were
  /// re-placed on surviving devices, so the makespan is not `used`'s. Such a run is reported, and
  /// neither told to the learner nor counted as the best or the latest greedy makespan.
  std::vector<std::string> failovers;
};

/// Runs a graph again and again for the user, learning between runs.
class online_learning {
 public:
  /// Throws `errc::bad_argument` for an exploration fraction outside [0, 1].
  online_learning(engine& e, learner_client l, std::shared_ptr<const graph> g, online_options opt = {});

  /// One run: place (greedy or exploring), run, observe.
  online_step step();
  int runs() const noexcept { return runs_; }
  int explored() const noexcept { return explored_; }
  double best_makespan() const noexcept { return best_; }
  /// The best measured placement so far (empty before the first run).
  const placement& best() const noexcept { return best_p_; }
  const learner_client& learner() const noexcept { return l_; }

 private:
  engine* e_;
  learner_client l_;
  std::shared_ptr<const graph> g_;
  online_options opt_;
  int runs_ = 0, explored_ = 0;
  double best_ = std::numeric_limits<double>::infinity(), greedy_ = 0;
  placement best_p_;
};

}  // namespace doppler
