#pragma once
/// DOPPLER's policy behind the runtime's `learner_interface` (runtime/learner.hpp), so the learner
/// actor can serve it (Torch-free header). Registered as `doppler` by `register_doppler_learner()`.
///
/// - place: the policy's greedy SEL+PLC placement, or (explore) a sample at the exploration
///   temperature; every exploring placement it hands out is remembered with its episode.
/// - observe: the measured makespan of one of its placements. Every observation moves the baseline
///   (running mean of the problem's observed costs, the trainer's rule). Observations of exploring
///   placements are phase III's episodes: every `online_batch` of them make one REINFORCE step with
///   the trainer's advantages (`reinforce_advantages`: (baseline − cost) / baseline against the mean
///   of the costs observed before the batch, normalised by the batch's spread when it has ≥ 2),
///   the trainer's discount and entropy weight, Adam at `online_lr`. Placements it did not make only
///   move the baseline. Every observed placement's mean makespan is kept (the 256 most recent).
/// - greedy place with `exploit_measured` (default): the policy's greedy placement, unless it has been
///   measured and another measured placement has a lower mean — then that one (method
///   "doppler:best-measured"): deployment never returns to a placement known to be worse.
/// - measured model selection (`select_measured`, phase III): an observation of the greedy placement
///   of the current parameters (no update since the greedy place) evaluates them on that problem;
///   `save` writes the selected parameters: the first evaluated (the incumbent) unless another's
///   greedy placements have a lower mean measured makespan by more than `select_margin` standard
///   errors of the difference (both measured at least twice; margin 0: simply the lowest mean) —
///   phase II's model selection with noisy measurements instead of simulated makespans. With several
///   problems the comparison is over the problems the incumbent was measured on (others must have
///   been measured on all of them): the mean over them of the ratio of means, its standard error
///   from each problem's difference of means in units of the incumbent's mean (one problem: the rule
///   above), and no problem may be slower by more than `select_margin` standard errors of its own
///   difference (margin 0: slower at all) — a gain on one graph does not pay for a loss on another. Every later measurement of an evaluated placement adds to its statistics. Training
///   continues from the latest parameters; the optimizer state written with selected older
///   parameters is fresh.
/// - several problems: the learner keeps each problem's (graph, cluster: the same content — every
///   op's kind, shape, inputs, FLOPs and bytes, every device and link; names do not count) state apart — its exploring episodes, update batch, baseline and measured placements —
///   for the 16 most recently used; one REINFORCE step takes one problem's batch.
/// - train: phase II (REINFORCE in the simulator, `learner_config::sim`) for that many episodes.
/// - save / load: the policy checkpoint (policy::save / policy::load).

#include <doppler/learner/policy.hpp>
#include <doppler/runtime/learner.hpp>

#include <cstddef>
#include <memory>

namespace doppler::learner {

/// Problems (graph, cluster) whose state a `doppler` learner keeps; a new one beyond that replaces
/// the least recently used.
inline constexpr std::size_t doppler_learner_max_problems = 16;

struct doppler_learner_options {
  policy_options policy;          ///< network sizes of a fresh policy (ignored when loading one)
  double online_lr = 1e-3;        ///< Adam's learning rate of the online (phase III) steps
  double temperature = 1.0;       ///< exploration: sampling temperature
  double gamma = 0.99;            ///< discount of the reward to earlier steps (the trainer's)
  double entropy = 0.001;         ///< entropy bonus of the online steps
  int batch = 4;                  ///< phase II batch in train()
  int online_batch = 1;           ///< exploring observations per phase-III REINFORCE step (>= 1)
  bool normalize_advantages = true;  ///< online_batch >= 2: advantages over the batch's spread ...
  double advantage_floor = 0.01;     ///< ... floored (reinforce_advantages)
  bool exploit_measured = true;   ///< greedy place may return the best measured placement (above)
  bool select_measured = false;   ///< save writes the best-measured evaluated parameters (above)
  double select_margin = 2;       ///< ... replacing the first evaluated only when better by this many
                                  ///< standard errors of the difference of means (0: lowest mean)
};

/// The `doppler` learner; starts from `cfg.policy` when given (errors name the file), else fresh
/// weights seeded with `cfg.seed`.
std::unique_ptr<learner_interface> make_doppler_learner(const learner_config& cfg,
                                                        const doppler_learner_options& opt = {});

/// The same around a policy already in memory (phase III after phases I and II, without a file).
std::unique_ptr<learner_interface> make_doppler_learner(policy pol, const learner_config& cfg,
                                                        const doppler_learner_options& opt = {});

/// Registers `doppler` in the learner registry (idempotent).
void register_doppler_learner();

/// Online statistics of a `doppler` learner (tests, reports): observations, REINFORCE steps taken.
struct doppler_learner_stats {
  int observed = 0, updates = 0;
  int best_measured = 0;  ///< greedy places that returned the best measured placement, not the policy's
  int evaluations = 0;    ///< select_measured: observations that evaluated the current parameters
  int pending = 0;        ///< exploring observations waiting for their batch's update
  int selected_update = -1;  ///< select_measured: after how many updates the selected parameters were (-1: none)
  int problems = 0;          ///< problems (graph, cluster) whose state the learner keeps (at most 16)
};
/// The statistics of `l` when it is a `doppler` learner; throws `errc::bad_argument` otherwise.
doppler_learner_stats stats_of(const learner_interface& l);

}  // namespace doppler::learner
