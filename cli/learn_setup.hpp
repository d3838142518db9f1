#pragma once
// Flag interpretation of `doppler train` that is not the command's wiring (cmd_learn_setup.cpp): the
// flags as parsed, the curriculum merged under them, the checks of flag combinations, --init's
// compatibility, phase I's teacher from --teacher, the episode counts from --phases / --episodes,
// and the settings --resume compares. doppler-learn only.

#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace doppler::cli {

/// `doppler train`'s flags as CLI11 parsed them (cmd_learn.cpp registers them, with their help).
struct train_flags {
  std::vector<std::string> graphs;
  std::vector<std::string> clusters;
  std::string model = "simple", out = "policy.pt", csv, svg, init, best, costs, config, kind = "dual",
      ablation = "none", transfers = "direct";
  int real_repeat = 1;
  int real_check = 5;
  int checkpoint_every = 500;
  bool resume = false;
  std::vector<std::string> real_stragglers;
  std::string real_backend = "cpu";       ///< phase III's kernels (as `run --backend`)
  std::vector<std::string> real_workers;  ///< phase III's devices served by `doppler worker`s (HOST:PORT)
  std::string token;                      ///< --real-workers: the workers' token (default $DOPPLER_TOKEN)
  double busy_wait = 60;                  ///< --real-workers: seconds a run waits its turn (--busy-wait)
  std::string teacher = "auto", phases = "il,sim";
  int teacher_budget = 2000, episodes = 0;
  bool teacher_symmetry = false;  ///< --teacher-symmetry: a placement teacher relabels interchangeable parts
  std::string algorithm = "reinforce", baseline = "mean";
  learner::train_options t;
  learner::policy_options p;
  std::set<std::string> config_policy_keys;  ///< the `policy` keys --config's file gives (curriculum::policy_keys)
};

/// `--config`: the curriculum file's settings replace the defaults; a flag given explicitly
/// (`cmd.count`) keeps its value. Nothing happens without --config.
void merge_curriculum(train_flags& o, const CLI::App& cmd);

/// After the merge and before any work: the phases' episode counts (select_phases), every check of
/// flag combinations (throws errc::bad_argument naming the flag), and the parsed algorithm,
/// baseline, policy kind and ablation into `o.t` / `o.p`. `n_graphs`: how many --graph were given.
void finish_train_flags(train_flags& o, const CLI::App& cmd, std::size_t n_graphs);

/// `--init`: the loaded checkpoint takes --active-search's rate when one is set. With --init or
/// --resume, a setting of the network's (--policy-kind, --ablation, --hidden, --steps, --hint,
/// --hint-budget, --sibling-feature, --dynamic-sel, or the curriculum's policy.kind ... policy.mlp)
/// that the command gives and the policy read contradicts is refused, naming the flag or the file's
/// field: the policy comes from the file, so the setting would otherwise be ignored.
void apply_init_flags(learner::policy& pol, const train_flags& o, const CLI::App& cmd);

/// What a training state records of this run, and --resume compares: every setting that changes
/// phases I and II, flags by name, as the command (and its curriculum) gives them — not as the
/// policy has them: a resumed policy comes from the state, so a flag that differs from the
/// interrupted command's (--hint, --sibling-feature, --dynamic-sel, --active-search included) is
/// refused rather than ignored; the graphs, clusters and costs by what the policy sees of them
/// (the problems' fingerprints).
nlohmann::json train_settings(const train_flags& o, const std::vector<learner::problem>& problems);

/// Whether `--teacher` names a placement file: not cp, auto or a placer name (a placer name wins
/// over a file of that name).
bool teacher_is_file(const std::string& name);

/// Phase I's teacher from `--teacher`: null for cp (the environment's own rule, with its tie sets),
/// else a placer's placement (seeded like the training) or a placement file. `auto`: cp, or `single`
/// where that simulates faster (graphs too small to spread: their transfers cost more than the
/// parallelism gains) — the two rules the policy imitates fully (docs/learner.md, "Teachers").
/// With a hinted policy (`hint`: its hint placement, `hint_name` its placer), `auto` is the hint.
/// `chosen` receives the teacher's name.
std::shared_ptr<const placement> resolve_teacher(const std::string& name, int budget, const graph& g, const cluster& c,
                                                 const cost_model& cm, const learner::train_options& t,
                                                 const placement* hint, const std::string& hint_name,
                                                 std::string& chosen);

/// `--phases` and `--episodes` over the episode counts (after the curriculum and the per-phase flags).
/// Without `--phases` the phases are il and sim, and real when it has episodes. A phase not listed
/// runs none (its own flag is then an error); `--episodes N` sets each listed phase whose own flag
/// was not given; real, listed with no count from anywhere, runs 100.
void select_phases(const std::string& list, int episodes, learner::train_options& t, const CLI::App& cmd);

}  // namespace doppler::cli
