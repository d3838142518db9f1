#pragma once
/// Learners: what the learner actor serves (place, observe, train, save, load), as a plain C++
/// interface, and a registry by name (STYLE habit 4). Torch- and CAF-free: `doppler` (DOPPLER's
/// SEL+PLC policy) lives in learner/ and registers itself there (`register_doppler_learner`), the
/// baselines `cp` and `heft` are built in, and a researcher registers their own class the same way.
///
///   doppler::register_learner("bandit", "my epsilon-greedy bandit",
///                             [](const doppler::learner_config& c) { return std::make_unique<bandit>(c); });
///   auto l = doppler::make_learner("bandit");

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace doppler {

/// What a learner is built with (the CLI and embedding programs fill it).
struct learner_config {
  std::string policy;        ///< checkpoint to start from ("" = fresh; learners without state ignore it)
  cost_model costs;          ///< cost model of the simulator used by placers and `train`
  sim_options sim;           ///< how `train` scores placements in the simulator
  std::uint64_t seed = 0;    ///< weights, tie-breaking, exploration

  learner_config& with_policy(std::string path) { policy = std::move(path); return *this; }
  learner_config& with_costs(cost_model cm) { costs = std::move(cm); return *this; }
  learner_config& with_sim(sim_options s) { sim = std::move(s); return *this; }
  learner_config& with_seed(std::uint64_t s) { seed = s; return *this; }
};

/// What `learner_interface::train` did.
struct learner_train_report {
  std::int32_t episodes = 0;    ///< simulator episodes run
  double best_makespan = 0;     ///< best simulated makespan any episode reached (0: none)
  double greedy_makespan = 0;   ///< simulated makespan of the greedy placement afterwards (0: none)
};

/// What a learner's latest `observe` did (logs: phase III's CSV loss column).
struct learner_update {
  bool updated = false;       ///< the observation completed an update of the learner's parameters
  double loss = 0;            ///< that update's loss (before the step)
  std::int32_t episodes = 0;  ///< observations the update used (its batch)
};

/// A placement policy that can learn from measured makespans. One instance serves one learner actor;
/// the actor calls it from one thread at a time.
class learner_interface {
 public:
  virtual ~learner_interface() = default;
  /// The registry name ("doppler", "cp", ...).
  virtual std::string_view name() const noexcept = 0;
  /// A placement of g on c: greedy (the learner's current best guess) or, with `explore`, one that
  /// tries something else. The caller (online learning) decides how often to explore; `seed` varies
  /// the exploration.
  virtual placement place(const graph& g, const cluster& c, bool explore, std::uint64_t seed) = 0;
  /// The measured makespan (seconds) of placement p of g on c; learners update here, between runs.
  virtual void observe(const graph& g, const cluster& c, const placement& p, double makespan) = 0;
  /// What the latest `observe` did. Default: no update (learners that do not report).
  virtual learner_update last_update() const { return {}; }
  /// Trains `episodes` episodes in the simulator. Default: nothing to train (an empty report).
  virtual learner_train_report train(const graph& g, const cluster& c, int episodes);
  /// Writes the learner's state to `path` atomically; errors name the file.
  virtual void save(const std::string& path) const = 0;
  /// Reads a state written by `save`; errors name the file.
  virtual void load(const std::string& path) = 0;
};

using learner_factory = std::function<std::unique_ptr<learner_interface>(const learner_config&)>;

/// Adds (or replaces) a learner by name. Thread-safe.
void register_learner(const std::string& name, const std::string& description, learner_factory make);
/// True when `name` is registered.
bool has_learner(std::string_view name);
/// The registered names, sorted.
std::vector<std::string> learner_names();
std::string learner_description(std::string_view name);
/// Builds a registered learner; throws `errc::unknown_kind` listing the names for an unknown one.
std::unique_ptr<learner_interface> make_learner(std::string_view name, const learner_config& cfg = {});

/// A fixed placer behind the learner interface (the built-in `cp` and `heft`): it ignores
/// observations; exploring re-places with the given seed (other tie-breaks). Its state file is a small
/// `doppler-learner/1` JSON naming the placer.
std::unique_ptr<learner_interface> make_placer_learner(const std::string& placer_name, const learner_config& cfg = {});

/// The online-learning budget: may run number `run` (1-based) explore when `explored` earlier runs
/// did? True iff run > 1 (the first run is greedy: the baseline) and explored < ceil(fraction × run).
/// So after any n runs at most ceil(fraction × n) explored. Throws `errc::bad_argument` unless
/// 0 <= fraction <= 1.
bool may_explore(int run, int explored, double fraction);

}  // namespace doppler
