#pragma once
/// DOPPLER's training phases I (imitation of the cp teacher, DAgger-like), II (REINFORCE in the
/// simulator) and III (the same update on measured makespans), Torch-free orchestration over
/// `policy`. docs/learner.md describes each rule.

#include <doppler/learner/policy.hpp>
#include <doppler/runtime/sim.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace doppler::learner {

/// One row of the training curve (one episode).
struct train_row {
  int episode = 0;          ///< 1-based over both phases
  std::string phase;        ///< "il", "rl" or "real"; "real-greedy": a measured evaluation of the greedy
                            ///< placement after that episode (phase III, `doppler train`), not an episode
  double makespan = 0;      ///< simulated makespan of this episode's placement (with several
                            ///< problems: divided by its problem's cp makespan)
  double best = 0;          ///< best makespan so far (in the same unit)
  double loss = 0;          ///< loss of the update this episode took part in
  double agreement = -1;    ///< il: fraction of steps whose op and device were the teacher's; rl: −1
  int problem = 0;          ///< which problem of a multi-problem train() (0 with one)
};

/// The REINFORCE baseline of phase II's advantages, (baseline − cost) / baseline:
/// - `mean`: the running mean of every cost so far (the paper's; with baseline_decay > 0 an
///   exponential mean over updates);
/// - `batch`: the mean cost of the update's own batch (episodes sampled by the same parameters);
/// - `greedy`: the cost of the current parameters' greedy placement, simulated once per update
///   (self-critical: Rennie et al. 2017, Kool et al. 2019): a sample is reinforced exactly when it
///   beats what the policy would deploy now.
enum class baseline_kind { mean, batch, greedy };
/// "mean", "batch", "greedy".
std::string_view baseline_name(baseline_kind k) noexcept;
/// The kind named `name`; throws errc::bad_argument listing the names.
baseline_kind parse_baseline(std::string_view name);

struct train_state;

struct train_options {
  int il_episodes = 200;        ///< phase I episodes
  int rl_episodes = 400;        ///< phase II episodes
  int real_episodes = 0;        ///< phase III episodes (costs from `measure`)
  int real_batch = 4;           ///< phase III episodes per update (measured episodes are expensive)
  int real_eval_every = 1;      ///< phase III model selection (`doppler train`): measure the greedy
                                ///< placement after every this many updates (0: keep the last parameters)
  int real_confirm = 5;         ///< ... and before choosing, measure the initial greedy placement and
                                ///< the two best-measured others this many more times (0: don't)
  double real_select_margin = 2;  ///< ... and keep the initial parameters unless others measured
                                  ///< faster by this many standard errors (0: the lowest mean)
  int batch = 4;                ///< episodes per update
  double il_lr = 1e-2;          ///< phase I Adam learning rate (decays linearly to lr_final × it)
  double rl_lr = 1e-2;          ///< phase II Adam learning rate (decays linearly to lr_final × it)
  double lr_final = 0.2;        ///< learning-rate fraction reached at the end of each phase
  double il_epsilon = 0.3;      ///< phase I ε-greedy exploration at the start ...
  double il_epsilon_final = 0.05;  ///< ... and at the end (linear)
  /// Phase I: the fraction of episodes that follow the teacher (behaviour cloning on the teacher's
  /// own states: rollout_options::follow_teacher) instead of the learner's ε-greedy actions
  /// (DAgger), spread evenly over the phase; dual policies only.
  double il_teacher_forcing = 0;
  double rl_epsilon = 0.0;      ///< phase II ε (the samples come from the policy itself)
  double temperature = 1.0;     ///< phase II sampling temperature
  double entropy = 0.01;        ///< entropy bonus at the start of phase II ...
  double entropy_final = 0.001; ///< ... and at its end (linear)
  double gamma = 0.99;          ///< discount of the episode reward to earlier steps
  bool normalize_advantages = true;   ///< divide advantages by the batch's relative cost σ ...
  double advantage_floor = 0.01;      ///< ... or by this, when σ is smaller (reinforce_advantages)
  double baseline_decay = 0;    ///< phase II: 0 = running mean of all costs (the paper), else EMA decay per update
  /// Phase II's REINFORCE baseline (baseline_kind); phase III always uses the running mean.
  baseline_kind baseline = baseline_kind::mean;
  /// Phase II update: false = REINFORCE (the paper), true = PPO (policy::ppo_update) with the same
  /// advantages, ppo_epochs steps per batch clipped at 1 ± ppo_clip. Phase III stays REINFORCE.
  bool ppo = false;
  double ppo_clip = 0.2;
  int ppo_epochs = 4;
  /// PPO early stopping: skip a batch's remaining epochs once the mean per-step KL from the
  /// sampling policy exceeds 1.5 × this (policy::ppo_update). 0 = off, every batch takes ppo_epochs.
  double ppo_target_kl = 0;
  /// Self-imitation (Oh et al. 2018, in its simplest form): after every phase-II update, this many
  /// imitation steps (policy::imitation_update) on the best episode sampled so far, labelled with its
  /// own actions (self_labelled), so that the greedy policy follows the best placement found. 0 = off.
  int self_imitation = 0;
  /// Self-imitation only after updates where the best episode so far beats the current greedy
  /// placement (one more rollout and simulation per update): a greedy policy better than every
  /// sample is left to the RL update instead of being pulled back to the best sample.
  bool self_imitation_gate = false;
  sim_options sim;              ///< the simulator that scores placements (model simple|wc, streams)
  /// Phase II model selection: every this many updates the greedy placement is simulated, and the
  /// parameters of the best greedy one are the policy train() leaves (0 = keep the last ones).
  int eval_every = 5;
  std::uint64_t seed = 0;       ///< rollout sampling seeds derive from it
  /// Phase III: the measured makespan of a placement of problem `problem` (its index in train()'s
  /// list; 0 with one) on the real runtime (the actor engine; the learner stays free of it).
  /// Required when real_episodes > 0.
  std::function<double(std::size_t problem, const placement&)> measure;
  /// Called after every episode (the CLI's progress bar).
  std::function<void(const train_row&)> on_episode;
  /// Checkpoints for resuming (train_state): on_checkpoint gets train()'s state after the batch of
  /// phase I or II that completes every `checkpoint_every` episodes (0: none of these), when
  /// `stop` says so, and once after phase II (before phase III, which is not checkpointed).
  int checkpoint_every = 0;
  std::function<void(const train_state&)> on_checkpoint;
  /// Polled after every batch of phases I and II; true: train() hands on_checkpoint its state and
  /// returns at once with train_result::stopped set (the CLI's Ctrl-C).
  std::function<bool()> stop;
  /// Continue from this state (phases I and II as if never stopped: the same rollouts, updates
  /// and curve); the policy passed to train() must be the one in it (policy::deserialize).
  const train_state* resume = nullptr;

  train_options& with_il(int n) { il_episodes = n; return *this; }
  train_options& with_rl(int n) { rl_episodes = n; return *this; }
  train_options& with_batch(int b) { batch = b; return *this; }
  train_options& with_model(sim_model m) { sim.model = m; return *this; }
  train_options& with_seed(std::uint64_t s) { seed = s; return *this; }
};

/// The accepted ranges of train_options' numbers: train() refuses others (check_train_options),
/// and the curriculum reader and `doppler train`'s flags check the same bounds.
namespace train_limits {
inline constexpr double lr_min = 1e-12, lr_max = 10;            ///< il_lr, rl_lr
inline constexpr double temperature_min = 1e-6, temperature_max = 1e6;
inline constexpr double entropy_max = 1e6;                      ///< entropy, entropy_final (min 0)
inline constexpr double baseline_decay_max = 0.999999;          ///< min 0
inline constexpr double ppo_clip_min = 1e-6, ppo_clip_max = 10;
inline constexpr double ppo_target_kl_max = 100;            ///< min 0 (off)
inline constexpr double select_margin_max = 100;                ///< real_select_margin (min 0)
inline constexpr long long max_episodes = 1'000'000'000;        ///< il + rl + real episodes, together
// lr_final, epsilons, gamma and advantage_floor lie in [0, 1].
}  // namespace train_limits

/// Throws errc::bad_argument naming the first field of `o` outside its range (train_limits; NaN
/// and infinities included) or a count below its minimum; train() calls it first.
void check_train_options(const train_options& o);

struct train_result {
  std::vector<train_row> curve;
  /// Per problem of a multi-problem train() (one entry with one problem; the fields below that
  /// are not vectors describe problem 0, except the agreements: means over the problems).
  struct problem_result {
    double cp_makespan = 0, initial_greedy_makespan = 0, greedy_makespan = 0;
    /// Phase III: measured makespans of the greedy placement before and after it, and (several
    /// problems only: the unit of phase III's curve rows) of the cp placement; 0 without phase III.
    double real_initial_greedy = 0, real_final_greedy = 0, real_cp = 0;
  };
  std::vector<problem_result> per_problem;
  placement best;                 ///< the best placement any episode found
  double best_makespan = 0;
  double greedy_makespan = 0;     ///< the trained policy's greedy placement (after model selection)
  double last_greedy_makespan = 0;  ///< the last parameters' greedy placement
  double initial_greedy_makespan = 0;  ///< the policy's greedy placement before training
  double cp_makespan = 0;         ///< the cp teacher (seed 0) under the same simulator
  double lower_bound = 0;         ///< makespan_lower_bound for the simulator options
  double il_seconds = 0, rl_seconds = 0, real_seconds = 0;
  double ppo_epochs_mean = 0;     ///< PPO: Adam steps per phase-II update, mean (< ppo_epochs when ppo_target_kl stopped some)
  int rl_updates = 0;             ///< phase II: updates (batches)
  int self_imitation_updates = 0; ///< phase II: updates after which self-imitation ran (all but the gated-off ones)
  double real_initial_greedy = 0;  ///< phase III: measured makespan of problem 0's greedy placement before ...
  double real_final_greedy = 0;    ///< ... and after it (per_problem: every problem's)
  double final_agreement = 0;     ///< greedy rollout's teacher agreement after phase I (both choices)
  double final_sel_agreement = 0, final_plc_agreement = 0;  ///< the same per choice
  bool stopped = false;           ///< train_options::stop ended it early (the other fields are partial)
};

/// train()'s state between two batches of phase I or II, or after phase II: everything besides
/// the options that a stopped train() needs to go on exactly as if it had not stopped. `doppler
/// train` writes it beside its checkpoint as OUT.resume (doppler-train-state/1, save_train_state).
struct train_state {
  int phase = 1;              ///< 1: in phase I, 2: in phase II, 3: phases I and II done
  int done = 0;               ///< that phase's episodes done
  std::string policy;         ///< the policy's checkpoint at this point (policy::serialize)
  std::vector<train_row> curve;  ///< the rows so far (the episode number is the row count)
  double curve_best = 0;
  placement best;             ///< the best placement of problem 0 so far, and its makespan
  double best_makespan = 0;
  std::vector<double> initial_greedy;  ///< per problem: the greedy makespan before training
  double il_seconds = 0, rl_seconds = 0;
  double agreement = 0, sel_agreement = 0, plc_agreement = 0;  ///< after phase I (phase ≥ 2)
  // Phase II's REINFORCE state, per problem: the baselines' sums, counts and EMAs, and
  // self-imitation's best cost and (self-labelled) episode.
  std::vector<double> cost_sum, ema, self_best;
  std::vector<std::uint64_t> cost_n;
  std::vector<std::vector<episode>> self_episode;
  std::string best_params;    ///< model selection: the best greedy parameters (policy::snapshot) ...
  double best_greedy = 0;     ///< ... and their score (+inf: none yet)
  std::int64_t ppo_steps = 0, ppo_updates = 0;
  int sil_updates = 0;        ///< phase II's updates followed by self-imitation
  bool selected = false;      ///< phase 3: model selection ran ...
  double last_greedy = 0;     ///< ... and the last parameters' greedy makespan

  /// Every per-problem vector (initial_greedy, phase II's sums, counts, EMAs and self-imitation's)
  /// has one entry per problem: set so when training starts, phase I included.
  bool sized_for(std::size_t problems) const {
    return initial_greedy.size() == problems && cost_sum.size() == problems && ema.size() == problems &&
           self_best.size() == problems && cost_n.size() == problems && self_episode.size() == problems;
  }
};

/// Writes `s` and `settings` (a JSON object: the caller's description of the run, to compare on
/// resume) to `path` atomically as CBOR, format "doppler-train-state/1" (docs/learner.md).
void save_train_state(const std::string& path, const train_state& s, const std::string& settings);
/// Reads a file save_train_state wrote; `settings` gets the stored settings (JSON text). Errors
/// name the file and the field.
train_state load_train_state(const std::string& path, std::string& settings);

/// Simulated makespan of a placement under `opt`.
double score(const problem& pb, const placement& p, const sim_options& opt);

/// REINFORCE advantages of one batch: (baseline − cost) / baseline per episode; with `normalize`
/// (and ≥ 2 episodes whose costs differ by more than 1e-9 relative) divided by max(the batch's
/// relative cost σ, `floor`) — the floor keeps a batch of near-equal costs (1e-5 relative when
/// placements differ only by rounding) from amplifying the baseline offset without bound.
/// floor = 0 is the rule before the floor existed.
std::vector<double> reinforce_advantages(const std::vector<double>& costs, double baseline, bool normalize,
                                         double floor = 0.01);

/// A copy of `ep` whose teacher labels are its own actions: at step t the op it chose and that op's
/// device (one tie each), the labels imitation_update trains on; agreement counts are full.
episode self_labelled(episode ep);

/// Runs phases I, II and III (those with episodes) on one problem, updating `pol` in place.
train_result train(policy& pol, const problem& pb, const train_options& opt);
/// The same on several problems (graphs, clusters) with one policy: the update batches take turns
/// over the problems (each batch from one problem, its baseline that problem's own running mean),
/// model selection scores the mean over problems of greedy / cp makespan, and the curve is in units
/// of each problem's cp makespan — in phase III its *measured* cp makespan (opt.measure of the cp
/// placement, once per problem at the start of phase III). Phase III has no model selection here
/// (`doppler train` adds measured selection: cli/learn_real.hpp).
train_result train(policy& pol, std::span<const problem* const> pbs, const train_options& opt);

/// Fractions of the steps of a greedy rollout on which SEL's op, PLC's device, and both, were in
/// the teacher's tie sets.
struct agreement {
  double sel = 0, plc = 0, both = 0;
};
agreement teacher_agreement(policy& pol, const problem& pb);

}  // namespace doppler::learner
