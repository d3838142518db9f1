// Flag interpretation of `doppler train` (learn_setup.hpp): the curriculum merge, the checks of flag
// combinations, --init's compatibility, phase I's teacher, --phases/--episodes, the settings --resume compares.
#include "learn_setup.hpp"

#include <doppler/learner/curriculum.hpp>
#include <doppler/learner/doppler_learner.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/fnv1a.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/sim.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <tuple>

namespace doppler::cli {

bool teacher_is_file(const std::string& name) {
  return name != "cp" && name != "auto" && !is_placer(name);
}

namespace {

bool looks_like_file(const std::string& name) {
  return name.ends_with(".json") || name.find('/') != std::string::npos || std::filesystem::exists(name);
}

std::string not_a_teacher(const std::string& name) {
  return "'" + name + "' is neither a placer (" + placer_list() + ") nor a placement file";
}

}  // namespace

std::shared_ptr<const placement> resolve_teacher(const std::string& name, int budget, const graph& g, const cluster& c,
                                                 const cost_model& cm, const learner::train_options& t,
                                                 const placement* hint, const std::string& hint_name,
                                                 std::string& chosen) {
  chosen = name;
  if (name == "cp") return nullptr;
  if (name == "auto" && hint) {
    chosen = hint_name;
    return std::make_shared<const placement>(*hint);
  }
  if (name == "auto") {
    chosen = "cp";
    placement single;
    try {
      single = make_placer("single")->place(g, c, cm, placer_options{});
    } catch (const error& e) {
      if (e.code() == errc::infeasible) return nullptr;  // the graph does not fit on one device
      throw;
    }
    const double cp = simulate(g, c, cp_place(g, c, cm, 0), cm, t.sim).makespan;
    if (!(simulate(g, c, single, cm, t.sim).makespan < cp)) return nullptr;
    chosen = "single";
    return std::make_shared<const placement>(std::move(single));
  }
  if (teacher_is_file(name)) {
    if (looks_like_file(name)) return std::make_shared<const placement>(load_placement(name, g, c));
    throw error(errc::unknown_kind, "", "--teacher", not_a_teacher(name));
  }
  auto pl = make_placer(name);
  placer_options po;
  po.seed = t.seed;
  po.budget = budget;
  po.sim = t.sim;
  return std::make_shared<const placement>(pl->place(g, c, cm, po));
}

void select_phases(const std::string& list, int episodes, learner::train_options& t, const CLI::App& cmd) {
  const bool explicit_list = cmd.count("--phases") > 0;
  bool on[3] = {!explicit_list, !explicit_list, !explicit_list && t.real_episodes > 0};
  if (explicit_list) {
    std::size_t from = 0;
    while (from <= list.size()) {
      std::size_t to = std::min(list.find(',', from), list.size());
      const std::string ph = list.substr(from, to - from);
      if (ph == "il") on[0] = true;
      else if (ph == "sim") on[1] = true;
      else if (ph == "real") on[2] = true;
      else throw error(errc::bad_argument, "", "--phases", "unknown phase '" + ph + "' (il, sim, real)");
      from = to + 1;
    }
  }
  if (cmd.count("--episodes") > 0 && episodes < 0) throw error(errc::bad_argument, "", "--episodes", "must be >= 0");
  const char* names[3] = {"il", "sim", "real"};
  const char* flags[3] = {"--il-episodes", "--rl-episodes", "--real-episodes"};
  int* counts[3] = {&t.il_episodes, &t.rl_episodes, &t.real_episodes};
  for (int k = 0; k < 3; ++k) {
    const bool own = cmd.count(flags[k]) > 0;
    if (!on[k]) {
      if (own && *counts[k] > 0)
        throw error(errc::bad_argument, "", flags[k], std::string("phase ") + names[k] + " is not among --phases " + list);
      *counts[k] = 0;
    } else if (!own && cmd.count("--episodes") > 0) {
      *counts[k] = episodes;
    } else if (k == 2 && *counts[k] == 0 && !own) {
      *counts[k] = 100;
    }
  }
}

void merge_curriculum(train_flags& o, const CLI::App& cmd) {
  if (o.config.empty()) return;
  // A field the file leaves out keeps train's own default, as without --config: the library's
  // default model is wc, train's is simple (the paper's); o.t.sim.model is --model or that default.
  learner::curriculum base;
  base.train.sim.model = o.t.sim.model;
  auto cur = learner::load_curriculum(o.config, base);
  auto given = [&cmd](const char* flag) { return cmd.count(flag) > 0; };
  auto& t = cur.train;
  auto& p = cur.policy;
  if (given("--model")) t.sim.model = o.t.sim.model;
  if (given("--il-episodes")) t.il_episodes = o.t.il_episodes;
  if (given("--rl-episodes")) t.rl_episodes = o.t.rl_episodes;
  if (given("--real-episodes")) t.real_episodes = o.t.real_episodes;
  if (given("--batch")) t.batch = o.t.batch;
  if (given("--real-batch")) t.real_batch = o.t.real_batch;
  if (given("--real-eval-every")) t.real_eval_every = o.t.real_eval_every;
  if (given("--real-confirm")) t.real_confirm = o.t.real_confirm;
  if (given("--real-select-margin")) t.real_select_margin = o.t.real_select_margin;
  if (given("--il-lr")) t.il_lr = o.t.il_lr;
  if (given("--il-teacher-forcing")) t.il_teacher_forcing = o.t.il_teacher_forcing;
  if (given("--rl-lr")) t.rl_lr = o.t.rl_lr;
  if (given("--entropy")) t.entropy = o.t.entropy;
  if (given("--baseline-decay")) t.baseline_decay = o.t.baseline_decay;
  if (given("--normalize-advantages")) t.normalize_advantages = o.t.normalize_advantages;
  if (given("--advantage-floor")) t.advantage_floor = o.t.advantage_floor;
  if (given("--self-imitation")) t.self_imitation = o.t.self_imitation;
  if (given("--self-imitation-gate")) t.self_imitation_gate = o.t.self_imitation_gate;
  if (given("--ppo-clip")) t.ppo_clip = o.t.ppo_clip;
  if (given("--ppo-epochs")) t.ppo_epochs = o.t.ppo_epochs;
  if (given("--ppo-target-kl")) t.ppo_target_kl = o.t.ppo_target_kl;
  if (!given("--teacher")) {
    o.teacher = cur.teacher;  // the file's imitation.teacher, named as such when it is no teacher
    if (teacher_is_file(o.teacher) && !looks_like_file(o.teacher))
      throw error(errc::unknown_kind, o.config, "imitation.teacher", not_a_teacher(o.teacher));
  }
  if (!given("--teacher-budget")) o.teacher_budget = cur.teacher_budget;
  if (!given("--teacher-symmetry")) o.teacher_symmetry = cur.teacher_symmetry;
  if (!given("--algorithm")) o.algorithm = t.ppo ? "ppo" : "reinforce";
  if (!given("--baseline")) o.baseline = std::string(learner::baseline_name(t.baseline));
  if (given("--temperature")) t.temperature = o.t.temperature;
  if (given("--seed")) t.seed = o.t.seed;
  if (given("--hidden")) p.hidden = o.p.hidden;
  if (given("--steps")) p.steps = o.p.steps;
  if (given("--hint")) p.hint = o.p.hint;
  if (given("--hint-budget")) p.hint_budget = o.p.hint_budget;
  if (given("--active-search")) p.active_search = o.p.active_search;
  if (given("--sibling-feature")) p.sibling = o.p.sibling;
  if (given("--dynamic-sel")) p.dynamic_sel = o.p.dynamic_sel;
  if (!given("--policy-kind")) o.kind = learner::policy_kind_name(p.kind);
  if (!given("--ablation")) o.ablation = learner::policy_ablation_name(p.ablation);
  o.t = t;
  o.p = p;
  o.config_policy_keys = cur.policy_keys;
  o.model = o.t.sim.model == sim_model::simple ? "simple" : "wc";
}

void finish_train_flags(train_flags& o, const CLI::App& cmd, std::size_t n_graphs) {
  select_phases(o.phases, o.episodes, o.t, cmd);
  // A setting refused below came from its flag, or else from --config's file: the error names that.
  auto refuse = [&](const char* flag, const char* config_key, const std::string& why) {
    if (cmd.count(flag) > 0 || o.config.empty()) return error(errc::bad_argument, "", flag, why);
    return error(errc::bad_argument, o.config, config_key, why);
  };
  if (o.t.self_imitation_gate && o.t.self_imitation == 0)
    throw refuse("--self-imitation-gate", "reinforce.self_imitation_gate",
                 "gates self-imitation: needs --self-imitation N > 0");
  learner::check_train_options(o.t);  // flags and curriculum merged: before any work
  if (o.t.real_episodes > 0 && n_graphs > learner::doppler_learner_max_problems)
    throw error(errc::bad_argument, "", "--graph",
                "phase III keeps the state of at most " + std::to_string(learner::doppler_learner_max_problems) +
                    " graphs; " + std::to_string(n_graphs) + " were given");
  if (o.teacher_budget < 1) throw error(errc::bad_argument, "", "--teacher-budget", "must be >= 1");
  if (o.teacher_symmetry && o.teacher == "cp")
    throw refuse("--teacher-symmetry", "imitation.teacher_symmetry",
                "relabels a placement teacher's parts; cp's rule has no placement (its ties already accept any "
                "of equal ops)");
  if (o.p.hint_budget < 1) throw error(errc::bad_argument, "", "--hint-budget", "must be >= 1");
  if (o.algorithm != "reinforce" && o.algorithm != "ppo")
    throw error(errc::bad_argument, "", "--algorithm", "unknown algorithm '" + o.algorithm + "' (reinforce, ppo)");
  o.t.ppo = o.algorithm == "ppo";
  // A flag that cannot act in this run is said, not silently dropped (not refused: scripts pass a
  // budget or a phase-III setting to every run of a sweep, e.g. scripts/teacher_compare.sh).
  const bool real = o.t.real_episodes > 0, remote = !o.real_workers.empty();
  const std::tuple<const char*, bool, const char*> unused[] = {
      {"--ppo-epochs", o.t.ppo, "--algorithm ppo"},
      {"--ppo-clip", o.t.ppo, "--algorithm ppo"},
      {"--ppo-target-kl", o.t.ppo, "--algorithm ppo"},
      {"--real-repeat", real, "--real-episodes"},
      {"--real-check", real, "--real-episodes"},
      {"--real-batch", real, "--real-episodes"},
      {"--real-eval-every", real, "--real-episodes"},
      {"--real-confirm", real, "--real-episodes"},
      {"--real-select-margin", real, "--real-episodes"},
      {"--token", remote, "--real-workers"},
      {"--busy-wait", remote, "--real-workers"},
      {"--teacher-budget", o.teacher == "search", "--teacher search"},
      {"--hint-budget", !o.p.hint.empty(), "--hint"},
  };
  for (const auto& [flag, acts, needs] : unused)
    if (!acts && cmd.count(flag) > 0) std::cerr << "doppler train: note: " << flag << " has no effect without " << needs << "\n";
  try {
    o.t.baseline = learner::parse_baseline(o.baseline);
  } catch (const error& e) {
    throw error(e.code(), "", "--baseline", e.reason());
  }
  o.p.seed = o.t.seed;
  o.p.hint_model = o.t.sim.model;
  try {
    o.p.kind = learner::parse_policy_kind(o.kind);
  } catch (const error& e) {
    throw refuse("--policy-kind", "policy.kind", e.reason());
  }
  try {
    o.p.ablation = learner::parse_policy_ablation(o.ablation);
  } catch (const error& e) {
    throw refuse("--ablation", "policy.ablation", e.reason());
  }
  if (!o.p.hint.empty() && o.p.hint != "auto" && !is_placer(o.p.hint))
    throw refuse("--hint", "policy.hint", "unknown placer '" + o.p.hint + "' (auto or a placer: doppler place --help)");
  if (o.p.ablation != learner::policy_ablation::none && o.p.kind != learner::policy_kind::dual)
    throw refuse("--ablation", "policy.ablation",
                o.ablation + " ablates a head of the dual policy; policy kind " + o.kind + " has no SEL/PLC heads");
  if (o.t.il_teacher_forcing > 0 && o.t.il_episodes > 0 && o.p.kind != learner::policy_kind::dual)
    throw refuse("--il-teacher-forcing", "imitation.teacher_forcing",
                "follows the teacher with SEL's and PLC's heads; policy kind " + o.kind + " has no such heads (dual only)");
  if (o.p.dynamic_sel && !o.p.has_sel_head())
    throw refuse("--dynamic-sel", "policy.dynamic_sel",
                "feeds SEL's head; policy kind " + o.kind + (o.p.kind == learner::policy_kind::dual ? " with --ablation plc-only" : "") +
                    " has none (dual, without plc-only)");
  if (o.p.active_search > 0 && o.p.kind != learner::policy_kind::dual)
    throw refuse("--active-search", "policy.active_search",
                "offsets SEL's and PLC's logits; policy kind " + o.kind + " has no such heads (dual only)");
}

void apply_init_flags(learner::policy& pol, const train_flags& o, const CLI::App& cmd) {
  // The checkpoint's rate unless the flag (or the curriculum) sets one.
  if (!o.resume && !o.init.empty() && (cmd.count("--active-search") > 0 || o.p.active_search > 0)) {
    try {
      pol.set_active_search(o.p.active_search);
    } catch (const error& e) {
      throw error(e.code(), "", "--active-search", e.reason());
    }
  }
  // The network comes from the file the policy was read from (--init or --resume's state): a setting
  // of it that this command gives, by flag or in --config's file, and that differs is refused, not
  // ignored. (--resume also compares every setting with the interrupted command's: train_settings.)
  if (o.init.empty() && !o.resume) return;
  const std::string from = o.resume ? "the interrupted training's state" : "the checkpoint given with --init";
  const auto& have = pol.options();
  const auto yes_no = [](bool b) { return std::string(b ? "true" : "false"); };
  struct network_setting {
    const char* flag;  // "" where only the curriculum sets it
    const char* key;   // policy.<key> in the curriculum
    std::string want, its;
  };
  const network_setting settings[] = {
      {"--policy-kind", "kind", o.kind, learner::policy_kind_name(have.kind)},
      {"--ablation", "ablation", o.ablation, learner::policy_ablation_name(have.ablation)},
      {"--hidden", "hidden", std::to_string(o.p.hidden), std::to_string(have.hidden)},
      {"--steps", "steps", std::to_string(o.p.steps), std::to_string(have.steps)},
      {"", "proj", std::to_string(o.p.proj), std::to_string(have.proj)},
      {"", "mlp", std::to_string(o.p.mlp), std::to_string(have.mlp)},
      {"--hint", "hint", o.p.hint, have.hint},
      {"--hint-budget", "hint_budget", std::to_string(o.p.hint_budget), std::to_string(have.hint_budget)},
      {"--sibling-feature", "sibling", yes_no(o.p.sibling), yes_no(have.sibling)},
      {"--dynamic-sel", "dynamic_sel", yes_no(o.p.dynamic_sel), yes_no(have.dynamic_sel)},
  };
  for (const auto& s : settings) {
    if (s.want == s.its) continue;
    const std::string why = from + " has " + s.key + " " + (s.its.empty() ? "\"\"" : s.its) +
                            "; its network is made for that (this command gives " + (s.want.empty() ? "\"\"" : s.want) + ")";
    if (*s.flag && cmd.count(s.flag) > 0) throw error(errc::bad_argument, "", s.flag, why);
    if (o.config_policy_keys.contains(s.key)) throw error(errc::bad_argument, o.config, std::string("policy.") + s.key, why);
  }
}

namespace {
/// FNV-1a of a file's bytes (the teacher placement a --resume must find unchanged).
std::string file_digest(const std::string& path) {
  fnv1a h(fnv1a::learner_basis);
  h.chars(read_file(path));
  return fmt::format("{:016x}", h.digest());
}
}  // namespace

nlohmann::json train_settings(const train_flags& o, const std::vector<learner::problem>& problems) {
  const auto& t = o.t;
  std::vector<std::string> fps;
  for (const auto& q : problems) fps.push_back(fmt::format("{:016x}", q.fingerprint()));
  return {{"--graph/--cluster/--costs (fingerprints)", fps}, {"--model", o.model},
          {"--transfers", o.transfers}, {"--teacher", o.teacher},
          {"--teacher (the file's content, FNV-1a)", teacher_is_file(o.teacher) ? file_digest(o.teacher) : ""},
          {"--teacher-budget", o.teacher_budget},
          {"--teacher-symmetry", o.teacher_symmetry},
          {"--il-episodes", t.il_episodes}, {"--rl-episodes", t.rl_episodes}, {"--batch", t.batch},
          {"--il-lr", t.il_lr}, {"--il-teacher-forcing", t.il_teacher_forcing}, {"--rl-lr", t.rl_lr}, {"lr_final", t.lr_final},
          {"il_epsilon", {t.il_epsilon, t.il_epsilon_final}}, {"rl_epsilon", t.rl_epsilon},
          {"--entropy", {t.entropy, t.entropy_final}}, {"gamma", t.gamma}, {"--temperature", t.temperature},
          {"--normalize-advantages", t.normalize_advantages}, {"--advantage-floor", t.advantage_floor},
          {"--baseline-decay", t.baseline_decay}, {"--baseline", o.baseline}, {"--algorithm", o.algorithm},
          {"--ppo-clip", t.ppo_clip}, {"--ppo-epochs", t.ppo_epochs}, {"--ppo-target-kl", t.ppo_target_kl},
          {"--self-imitation", t.self_imitation}, {"--self-imitation-gate", t.self_imitation_gate},
          {"eval_every", t.eval_every}, {"--seed", t.seed}, {"--policy-kind", o.kind}, {"--ablation", o.ablation},
          {"--hint", o.p.hint}, {"--active-search", o.p.active_search},
          {"--sibling-feature", o.p.sibling}, {"--dynamic-sel", o.p.dynamic_sel},
          {"--init", o.init}};  // as given: the policy the interrupted training started from
}

}  // namespace doppler::cli
