#pragma once
/// DOPPLER's dual policy, Torch-free interface (LibTorch stays inside learner/src).
///
/// An encoder (edge-conditioned message passing + GRU over the bidirectional graph) runs once per
/// (problem, parameter version); its outputs are cached. SEL's scores depend only on static
/// inputs, so every op's SEL logit is computed once (with policy_options::dynamic_sel, SEL's first
/// layer over them is, and a small per-step term is added); PLC's per-step work is a small MLP over the
/// dynamic device features plus cached per-op terms. Rollouts run without autograd; the training
/// updates recompute the log-probabilities of a whole episode in one batched, differentiable pass.

#include <doppler/learner/env.hpp>
#include <doppler/learner/features.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace doppler::learner {

/// Which policy: DOPPLER's two (SEL picks an op, then PLC its device), the single-policy ablation
/// (one network scores every (ready op, valid device) pair and one softmax over all pairs picks both;
/// it is PLC's network applied to each ready op, without SEL's head), or one of two baselines that
/// visit the ops in topological order (no op choice, one device choice per op):
/// - placeto: Placeto-like. Starts from a round-robin placement and re-places each visited op; a
///   GraphSAGE-style GNN whose node features include every op's *current* device is re-run at every
///   step, and the device head reads the visited op's embedding and the mean embedding per device.
/// - gdp: GDP-like one-shot placer. A GraphSAGE-style encoder over static features and one
///   self-attention layer over all ops give every op's device logits in one forward pass per episode.
/// The baselines tell devices apart by a learned per-index embedding (at most
/// `max_baseline_devices` devices) and get no EST/load device features.
enum class policy_kind : std::uint8_t { dual, joint, placeto, gdp };
/// The most devices a placeto/gdp policy can place on (the size of its device-index embeddings).
inline constexpr std::size_t max_baseline_devices = 64;
/// "dual" / "joint" / "placeto" / "gdp".
std::string policy_kind_name(policy_kind k);
/// Parses a policy_kind_name (errc::bad_argument otherwise).
policy_kind parse_policy_kind(const std::string& name);
/// True for the topological-order baselines (placeto, gdp).
inline bool is_baseline(policy_kind k) { return k == policy_kind::placeto || k == policy_kind::gdp; }

/// Head ablations of the dual policy (issue 5): one head learned, the other replaced by the cp
/// teacher's rule, so only the learned head's log-probabilities enter imitation and REINFORCE.
/// - sel_only: SEL picks the op; its device is the first of the teacher's (valid, minimum EST).
/// - plc_only: the op is the first of the teacher's (ready, maximum bottom level: cp's order); PLC
///   picks its device.
enum class policy_ablation : std::uint8_t { none, sel_only, plc_only };
/// "none" / "sel-only" / "plc-only".
std::string policy_ablation_name(policy_ablation a);
/// Parses a policy_ablation_name (errc::bad_argument otherwise).
policy_ablation parse_policy_ablation(const std::string& name);

/// The placers a hint "auto" chooses among (policy_options::hint).
inline constexpr const char* hint_auto_candidates[] = {"heft", "metis", "search"};

/// Network sizes. Defaults are smaller than the paper's (128 dims, 6 steps) for CPU speed.
struct policy_options {
  /// The largest accepted hidden / proj / mlp width and number of message-passing steps (the
  /// policy constructor refuses others before allocating anything).
  static constexpr int max_width = 4096, max_steps = 64;
  int hidden = 64;         ///< embedding dims of the encoder
  int steps = 4;           ///< message-passing steps
  int proj = 32;           ///< projection dims of raw op features and device features
  int mlp = 64;            ///< hidden units of the SEL and PLC MLPs
  std::uint64_t seed = 0;  ///< weight initialization
  policy_kind kind = policy_kind::dual;  ///< DOPPLER's dual policy, the ablation or a baseline
  /// dual only (the policy constructor refuses it for other kinds); saved in checkpoints.
  policy_ablation ablation = policy_ablation::none;
  /// A placer (placer_names(): metis, search, heft, ...) whose placement of each problem PLC sees
  /// through the two hint device features (env.hpp): which devices hold the ops of v's hint group,
  /// and which device the group was matched to. "" = none (the paper's inputs). Dual and joint
  /// policies; saved in checkpoints with the two fields below, so a placement of a new graph
  /// computes its own hint. The placer runs with seed 0, `hint_budget` simulations (search) and
  /// the simulator model `hint_model`; problem::with_hint overrides it per problem. "auto": per
  /// problem, whichever of hint_auto_candidates simulates fastest under `hint_model`.
  std::string hint;
  static constexpr int default_hint_budget = 20000;
  int hint_budget = default_hint_budget;
  sim_model hint_model = sim_model::simple;
  /// Active search (as EAS-Tab, Hottung et al., ICLR 2022): > 0 gives every problem the policy
  /// is updated on its own logit offsets — one per op added to SEL's logit, one per (op, device)
  /// added to PLC's — zero at first and trained by every update (imitation, REINFORCE, PPO,
  /// self-imitation) with their own Adam at this constant learning rate. The shared network
  /// cannot fit an arbitrary placement (PLC sees devices only through their state); the offsets
  /// can, so the greedy policy follows the best placements sampling finds on *that* problem.
  /// Offsets are keyed by problem::fingerprint() and saved in checkpoints; any other problem is
  /// placed by the network alone. Dual only. 0 = off (the paper's policy).
  double active_search = 0;
  static constexpr double max_active_search = 10;
  /// PLC also reads device_feature::sibling_work (env.hpp): the compute already on d of the ops
  /// that share a consumer with v, so it can co-locate an op with the other inputs of its
  /// consumers on purpose rather than through the greedy rule's tie-breaking (docs/learner.md, "The
  /// sibling feature"). Any kind but the Placeto-/GDP-like baselines; saved in checkpoints. Off: the paper's inputs.
  bool sibling = false;
  /// SEL also reads per-step features of each ready op (sel_feature, env.hpp: how much later than
  /// the ready set's first it could start, how much later its inputs are done, whether it consumes
  /// the op just assigned), so its order can depend on the state: logit(v, t) = w · relu(A h_v +
  /// W s_{v,t} + b) + c, where A h_v (SEL's first layer over its static input) is computed once
  /// per episode and only the small W s_{v,t} per step. Without it (the paper's SEL) every op has
  /// one score per episode, so identical ops (the shards of an attention layer) always tie.
  /// Dual only, not with the plc-only ablation; saved in checkpoints. docs/learner.md, "Dynamic SEL".
  bool dynamic_sel = false;
  /// The device-feature columns the network reads, in this order: the paper's (the first
  /// device_feature_count_no_hint), the two hint columns with a hint, sibling_work with `sibling`.
  std::vector<int> device_columns() const {
    std::vector<int> cols;
    for (int k = 0; k < device_feature_count_no_hint; ++k) cols.push_back(k);
    if (!hint.empty()) {
      cols.push_back(static_cast<int>(device_feature::hint_same));
      cols.push_back(static_cast<int>(device_feature::hint_match));
    }
    if (sibling) cols.push_back(static_cast<int>(device_feature::sibling_work));
    return cols;
  }
  int device_inputs() const { return static_cast<int>(device_columns().size()); }
  /// SEL is a learned head: the dual policy, not ablated to plc-only (what dynamic_sel needs).
  bool has_sel_head() const { return kind == policy_kind::dual && ablation != policy_ablation::plc_only; }

  policy_options& with_kind(policy_kind k) { kind = k; return *this; }
  policy_options& with_ablation(policy_ablation a) { ablation = a; return *this; }
  policy_options& with_hidden(int h) { hidden = h; return *this; }
  policy_options& with_steps(int s) { steps = s; return *this; }
  policy_options& with_proj(int p) { proj = p; return *this; }
  policy_options& with_mlp(int m) { mlp = m; return *this; }
  policy_options& with_seed(std::uint64_t s) { seed = s; return *this; }
  policy_options& with_active_search(double lr) { active_search = lr; return *this; }
  policy_options& with_hint(std::string placer, int budget = default_hint_budget, sim_model model = sim_model::simple) {
    hint = std::move(placer);
    hint_budget = budget;
    hint_model = model;
    return *this;
  }
};

/// One (graph, cluster, cost model) the policy places, with its static features. The three
/// referenced objects must outlive it.
class problem {
 public:
  problem(const graph& g, const cluster& c, const cost_model& cm, bool respect_memory = true);
  const graph& g() const noexcept { return *g_; }
  const cluster& c() const noexcept { return *c_; }
  const cost_model& cm() const noexcept { return *cm_; }
  const graph_features& features() const noexcept { return f_; }
  bool respect_memory() const noexcept { return respect_memory_; }
  /// Planned transfers (null: per-edge transfer times): PLC's EST feature, the teacher and a hint
  /// placer (policy_options::hint) use them.
  transfer_planner* transfers() const noexcept { return transfers_.get(); }
  const std::shared_ptr<transfer_planner>& shared_transfers() const noexcept { return transfers_; }
  problem& with_transfers(std::shared_ptr<transfer_planner> t) {
    transfers_ = std::move(t);
    return *this;
  }
  /// The placement phase I imitates instead of cp's rule (null: cp, the paper's teacher); checked
  /// against the graph and cluster (check_placement: a doppler::error naming the op). assignment_env states the
  /// teacher's choices. With `symmetric`, the teacher does not care which of interchangeable parts
  /// of the graph (identical attention shards, experts: find_symmetry) goes where — only that the
  /// parts go where its own do (assignment_env, `doppler train --teacher-symmetry`).
  problem& with_teacher(std::shared_ptr<const placement> t, bool symmetric = false) {
    if (t) check_placement(*t, *g_, *c_);
    teacher_ = std::move(t);
    teacher_symmetry_ = teacher_ && symmetric ? std::make_shared<const op_symmetry>(find_symmetry(*g_)) : nullptr;
    return *this;
  }
  const placement* teacher() const noexcept { return teacher_.get(); }
  /// The interchangeable parts the teacher relabels (null: it does not).
  const op_symmetry* teacher_symmetry() const noexcept { return teacher_symmetry_.get(); }
  /// The hint placement a hinted policy reads for this problem (null: the policy computes its own,
  /// policy_options::hint); checked like the teacher. The problem gets a new key(), so no policy
  /// keeps encodings made with an earlier hint.
  problem& with_hint(std::shared_ptr<const placement> h);
  const placement* hint() const noexcept { return hint_.get(); }
  /// Unique per problem object (the policy's cache key).
  std::uint64_t key() const noexcept { return key_; }
  /// A hash of what the policy sees of the problem, equal across processes for equal inputs:
  /// op and device counts, the static features and edges, every op's time on every device, and
  /// the hint placement's devices when one is set (policy_options::active_search keys offsets by it).
  std::uint64_t fingerprint() const noexcept { return fingerprint_; }

 private:
  const graph* g_;
  const cluster* c_;
  const cost_model* cm_;
  graph_features f_;
  bool respect_memory_;
  std::uint64_t key_;
  std::uint64_t fingerprint_;
  std::shared_ptr<transfer_planner> transfers_;
  std::shared_ptr<const placement> teacher_;
  std::shared_ptr<const op_symmetry> teacher_symmetry_;
  std::shared_ptr<const placement> hint_;
};

/// How a rollout picks actions.
struct rollout_options {
  bool greedy = true;        ///< argmax (lowest index on ties); else sample softmax(logits / temperature)
  double temperature = 1.0;  ///< > 0
  double epsilon = 0.0;      ///< probability of a uniform random action instead (per choice)
  std::uint64_t seed = 0;    ///< sampling RNG
  bool teacher = false;      ///< record the cp teacher's choice sets at every visited state
  /// Take the teacher's first op and first device at every step instead of the policy's (behaviour
  /// cloning: the states are the teacher's own). Dual policies only (its ablations included: the
  /// learned head follows the teacher, the other keeps its rule); the forced choices add nothing to
  /// log_prob.
  bool follow_teacher = false;

  static rollout_options sample(std::uint64_t seed, double temperature = 1.0, double epsilon = 0.0) {
    rollout_options o;
    o.greedy = false;
    o.seed = seed;
    o.temperature = temperature;
    o.epsilon = epsilon;
    return o;
  }
};

/// A recorded episode: the actions, the states PLC saw, and (optionally) the teacher's labels.
struct episode {
  placement result;                   ///< device per op; order = SEL's order
  std::vector<std::uint32_t> ready_off;  ///< step t's ready set is ready[ready_off[t] .. ready_off[t+1])
  std::vector<op_index> ready;
  std::vector<float> dev_feat;        ///< [t][d][device_feature_count]
  std::vector<std::uint8_t> dev_valid;///< [t][d]
  /// Recorded by a policy with policy_options::dynamic_sel: SEL's per-step features of the ready
  /// entries, sparse — sel_rows[k] indexes `ready` (ascending), sel_feat[k * sel_feature_count + f]
  /// are its features; every entry not listed has all features 0 (most of them on wide graphs).
  bool dynamic_sel = false;
  std::vector<std::uint32_t> sel_rows;
  std::vector<float> sel_feat;
  /// sel_rows ascending and inside `ready`, sel_feat one row each, and no rows without dynamic_sel.
  bool sel_rows_consistent() const {
    if (sel_feat.size() != sel_rows.size() * sel_feature_count || (!dynamic_sel && !sel_rows.empty())) return false;
    for (std::size_t i = 0; i < sel_rows.size(); ++i)
      if (sel_rows[i] >= ready.size() || (i > 0 && sel_rows[i - 1] >= sel_rows[i])) return false;
    return true;
  }
  /// joint policy only: the device features and validity of every ready op at every step, in the
  /// order of `ready` ([k][d][device_feature_count], [k][d]); dev_feat/dev_valid hold the chosen op's.
  std::vector<float> pair_feat;
  std::vector<std::uint8_t> pair_valid;
  /// CSR like ready (when teacher). Dual: the teacher's op set and its devices for the chosen op.
  /// placeto/gdp: the ready set and the teacher's op set are the visited op; the devices are cp's
  /// (minimum EST given the ops visited before).
  /// Joint: teacher_ops[k], teacher_devs[k] are pairs (every tied op with each of its tied devices),
  /// and the two offset lists are equal.
  std::vector<std::uint32_t> teacher_op_off, teacher_dev_off;
  std::vector<op_index> teacher_ops;
  std::vector<device_index> teacher_devs;
  std::size_t sel_agree = 0;   ///< steps whose SEL choice was in the teacher's set (when teacher)
  std::size_t plc_agree = 0;   ///< steps whose PLC choice was in the teacher's set (when teacher)
  std::size_t both_agree = 0;  ///< steps where both were
  double log_prob = 0;         ///< Σ log π(chosen) at the rollout temperature (ε ignored)
  double temperature = 1.0;
  std::size_t steps() const noexcept { return result.order.size(); }
};

class policy {
 public:
  explicit policy(const policy_options& opt = {});
  ~policy();
  policy(policy&&) noexcept;
  policy& operator=(policy&&) noexcept;

  const policy_options& options() const noexcept;
  std::size_t parameter_count() const;

  /// Runs one episode (no autograd). Throws errc::infeasible when an op fits on no device.
  episode rollout(const problem& pb, const rollout_options& opt = {});
  /// The deployment placement: a greedy rollout.
  placement place(const problem& pb) { return rollout(pb).result; }
  /// The hint placement the policy reads on `pb`: pb.hint(), else its own hint placer's placement
  /// (computed once per problem and kept for the 256 most recent problems; the pointer stays valid
  /// until hint_for or a rollout meets a 257th); null for a policy without a hint. A hint placer
  /// that fails throws its error, naming the placer (auto: only when every candidate fails).
  const placement* hint_for(const problem& pb);

  /// Adam's learning rate for the next updates (the network's; active-search offsets keep theirs).
  void set_learning_rate(double lr);
  /// Adam's learning rate now (what the last set_learning_rate, or the options, gave it).
  double learning_rate() const;
  /// policy_options::active_search for the next updates (e.g. continuing a checkpoint with
  /// another rate); offsets already learned are kept and still applied. Dual only.
  void set_active_search(double lr);
  /// The problems that have active-search offsets (trained here or loaded from a checkpoint).
  std::size_t offset_problems() const;
  /// Phase I step: loss = −Σ over steps of Σ log π(a) over the teacher's tied ops and devices, mean
  /// over steps and episodes (episodes need teacher labels). Returns the loss before the step.
  double imitation_update(const problem& pb, std::span<const episode> eps);
  /// Phase II step (REINFORCE): loss = −Σ_t advantage·γ^(T−1−t)·log π(a_t) − β·H(π(·|s_t)), mean over
  /// steps and episodes, log π at each episode's temperature. Returns the loss before the step.
  double reinforce_update(const problem& pb, std::span<const episode> eps,
                          std::span<const double> advantages, double gamma, double entropy_weight);
  /// Phase II step, PPO (Schulman et al. 2017) with the same advantages: `epochs` Adam steps on
  /// the same episodes, each maximizing Σ_t min(r_t·A_t, clip(r_t, 1 ± clip)·A_t) + β·H, with
  /// r_t = π(a_t) / π_old(a_t) against the parameters before the first step and A_t =
  /// advantage·γ^(T−1−t); mean over steps and episodes, as reinforce_update. One epoch is exactly
  /// one REINFORCE step (r = 1). Dual and joint policies only (errc::bad_argument for placeto/gdp).
  /// target_kl > 0: early stopping (as in OpenAI's Spinning Up and Stable-Baselines3) — before each
  /// epoch after the first, the mean per-step KL(π_old ‖ π) over the batch's taken actions
  /// (estimator r − 1 − log r) is computed, and the remaining epochs are skipped once it exceeds
  /// 1.5·target_kl. last_ppo_epochs() tells how many epochs the last call took. Returns the first
  /// epoch's loss.
  double ppo_update(const problem& pb, std::span<const episode> eps, std::span<const double> advantages,
                    double gamma, double entropy_weight, double clip = 0.2, int epochs = 4, double target_kl = 0);
  /// Adam steps the last ppo_update took (its `epochs`, or fewer when target_kl stopped it); 0 before any.
  int last_ppo_epochs() const;

  /// Recomputes the episode's log-probability in the batched, differentiable form the updates use;
  /// equal to episode::log_prob up to float rounding (the cache-consistency check).
  double recompute_log_prob(const problem& pb, const episode& ep);

  /// Writes options, parameters and optimizer state atomically (temp file + rename).
  void save(const std::string& path) const;
  /// Reads a checkpoint written by save. Errors name the file.
  static policy load(const std::string& path);
  /// The checkpoint save writes, as bytes in memory (`train_state::policy`) ...
  std::string serialize() const;
  /// ... and read back; errors name `name` (the file the bytes came from).
  static policy deserialize(const std::string& blob, const std::string& name);

  /// The parameters as an in-memory blob (model selection during training) ...
  std::string snapshot() const;
  /// ... and back (same network sizes; the optimizer state is kept).
  void restore(const std::string& blob);

 private:
  episode baseline_rollout(const problem& pb, const rollout_options& opt);
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace doppler::learner
