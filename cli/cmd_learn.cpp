// Learner subcommands: train (phases I, II and, with the actor runtime, III), place-learned.
// Built only with LibTorch, into doppler-learn (`doppler` forwards these commands to it).

#include "commands.hpp"
#include "learn_real.hpp"
#include "learn_resume.hpp"
#include "learn_setup.hpp"
#ifdef DOPPLER_HAVE_ACTORS
#include "run_setup.hpp"

#include <doppler/actors/backend.hpp>
#endif

#include <doppler/comm/multicast.hpp>
#include <doppler/learner/curve.hpp>
#include <doppler/learner/doppler_learner.hpp>
#include <doppler/learner/doppler_placer.hpp>
#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/cpu_kernels.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/sim.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>

namespace doppler::cli {

namespace {

/// A CLI11 check: a finite number in [lo, hi] (CLI::Range lets NaN through).
CLI::Validator finite_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double x = 0;
        std::size_t used = 0;
        try {
          x = std::stod(text, &used);
        } catch (const std::out_of_range&) {  // a number, but past a double's range: 1e400, or 1e-400
          if (std::fabs(std::strtod(text.c_str(), nullptr)) < 1)
            return text + " is too small for a double (give 0)";
          return fmt::format("{} is outside [{:g}, {:g}]", text, lo, hi);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || text.empty()) return "'" + text + "' is not a number";
        if (!std::isfinite(x) || x < lo || x > hi) return fmt::format("{} is outside [{:g}, {:g}]", text, lo, hi);
        return {};
      },
      fmt::format("in [{:g}, {:g}]", lo, hi));
}

sim_model parse_model(const std::string& m) {
  if (m == "wc") return sim_model::wc;
  if (m == "simple") return sim_model::simple;
  throw error(errc::bad_argument, "", "--model", "unknown model '" + m + "' (wc, simple)");
}

/// Per-episode progress on stderr: a redrawn bar on a terminal, a line per 10% otherwise.
std::function<void(const learner::train_row&)> progress(int total, double cp) {
  const bool tty = isatty(2);
  auto t0 = std::chrono::steady_clock::now();
  auto avg = std::make_shared<double>(-1);  // the moving average; -1 until the first row (which is not 1 on --resume)
  auto phase = std::make_shared<std::string>();  // a new phase starts a new average (measured ≠ simulated)
  return [=](const learner::train_row& r) {
    if (r.phase != *phase) *avg = -1;
    *phase = r.phase;
    *avg = *avg < 0 ? r.makespan : 0.95 * *avg + 0.05 * r.makespan;
    // A line each time the episode count passes a tenth of the total (at most 10 lines, any total).
    const bool tick = r.episode == total ||
                      (total > 0 && static_cast<long long>(r.episode) * 10 / total >
                                        static_cast<long long>(r.episode - 1) * 10 / total);
    if (!tty && !tick) return;
    double f = total ? static_cast<double>(r.episode) / total : 1.0;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int w = 24, filled = static_cast<int>(f * w);
    // Measured (phase III) makespans are not comparable with the simulated cp.
    std::string vs = cp > 0 && r.phase != "real" ? fmt::format(" ({:.3f}x cp)", r.best / cp) : "";
    // On a terminal: back to the line's start and clear it (a shorter line left the last one's tail).
    std::cerr << fmt::format("{}{:<4} [{}{}] {}/{} best {:.4g} avg {:.4g}{} {:.1f}s{}", tty ? "\r\x1b[K" : "", r.phase,
                             std::string(filled, '#'), std::string(w - filled, '.'), r.episode, total, r.best,
                             *avg, vs, s, tty && r.episode != total ? "" : "\n")
              << std::flush;
  };
}

void add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a DOPPLER policy on one or more graphs: imitation of a teacher, RL in the simulator, RL on measurements");
  auto o = std::make_shared<train_flags>();
  cmd->add_option("--graph", o->graphs,
                  "Graph: doppler-graph/1 JSON or a DOPPLER paper .txt file; several (--graph a b, or repeated) "
                  "train one policy on all of them, the update batches taking turns" +
                      std::string(default_graph_help))
      ->check(graph_file_check());
  auto* cluster_opt = cmd->add_option("--cluster", o->clusters,
                  "Cluster: a doppler-cluster/1 file or a preset name; with several --graph files, one for all "
                  "or one per graph (in order)")
      ->default_str(default_cluster);
  cmd->add_option("--model", o->model, "Simulator model scoring phase II: simple (the paper's) or wc")->capture_default_str();
  cmd->add_option("--costs", o->costs, "Cost table (doppler-costs/1); default: built-in efficiencies");
  cmd->add_option("--transfers", o->transfers,
                  "direct, or planned: phase II scores placements with the comm planner's multicast transfers "
                  "(--model wc) and PLC's EST feature and the teacher estimate transfers the same way")
      ->capture_default_str();
  cmd->add_option("--phases", o->phases,
                  "Phases to run, comma-separated: il (imitation), sim (RL in the simulator), real (RL on the "
                  "runtime's measurements); a phase not listed runs no episodes")
      ->capture_default_str();
  cmd->add_option("--episodes", o->episodes,
                  "Episodes of every listed phase whose own --il/--rl/--real-episodes flag is not given")
      ->check(CLI::Range(0, 1000000000));
  cmd->add_option("--teacher", o->teacher,
                  "Phase I's teacher: auto (the hint's placement with --hint, else cp, or single where that simulates faster), cp (the paper's "
                  "critical-path rule), another placer's placement (single, heft, m-etf, metis, search, ...), "
                  "or a doppler-placement/1 file")
      ->capture_default_str();
  cmd->add_option("--teacher-budget", o->teacher_budget, "search as the teacher: simulator evaluations")
      ->capture_default_str();
  cmd->add_flag("--teacher-symmetry", o->teacher_symmetry,
               "A placement teacher does not care which of interchangeable parts of the graph (identical attention "
               "shards, experts: same ops, costs and neighbours) goes where, only that the parts go where its own do: "
               "phase I accepts any relabelling of them (docs/learner.md)");
  cmd->add_option("--hint", o->p.hint,
                  "A placer (metis, search, heft, ...; auto: the fastest of heft, metis and search per graph) whose "
                  "placement of each graph PLC sees as two extra device features (where v's group of that placement "
                  "is, and which device it went to); the checkpoint keeps it, so placing a new graph computes its "
                  "own. With --teacher auto, phase I imitates it");
  cmd->add_option("--hint-budget", o->p.hint_budget, "search as the hint: simulator evaluations")
      ->capture_default_str();
  cmd->add_option("--il-episodes", o->t.il_episodes, "Phase I (imitation) episodes")->check(CLI::Range(0, 1000000000))->capture_default_str();
  cmd->add_option("--rl-episodes", o->t.rl_episodes, "Phase II (simulator RL) episodes")->check(CLI::Range(0, 1000000000))->capture_default_str();
  cmd->add_option("--real-episodes", o->t.real_episodes,
                  "Phase III episodes: makespans measured on the actor runtime (CPU backend); with several --graph "
                  "files a total, batches taking turns, each graph run on its own cluster")->check(CLI::Range(0, 1000000000))->capture_default_str();
  cmd->add_option("--real-repeat", o->real_repeat, "Phase III: runs averaged per measured episode")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--real-check", o->real_check,
                  "Phase III's report: after writing the parameters, measure phase II's greedy placement and "
                  "theirs this many more times each, interleaved, and report the means ± standard errors")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--real-batch", o->t.real_batch,
                  "Phase III: measured episodes per REINFORCE step (advantages normalised over the batch, as phase "
                  "II; 1: a step per episode)")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--real-eval-every", o->t.real_eval_every,
                  "Phase III model selection: measure the greedy placement after every this many updates and "
                  "write the parameters whose greedy measured best (0: off, write the last parameters)")
      ->capture_default_str();
  cmd->add_option("--real-confirm", o->t.real_confirm,
                  "Phase III model selection: before choosing, measure the initial greedy placement and the two "
                  "best-measured others this many more times, interleaved (0: choose on the evaluations alone)")
      ->capture_default_str();
  cmd->add_option("--real-select-margin", o->t.real_select_margin,
                  "Phase III model selection: keep phase II's parameters unless others' greedy placement measured "
                  "faster by this many standard errors of the difference (0: the lowest mean wins)")
      ->check(finite_in(0, learner::train_limits::select_margin_max))
      ->capture_default_str();
  cmd->add_option("--real-straggler", o->real_stragglers,
                  "Phase III: DEVICE:FACTOR (FACTOR in [1, 1e6]), this device of the runtime is FACTOR times "
                  "slower (as `run --straggler`); phases I and II and the simulator are not told. Repeatable");
  cmd->add_option("--real-backend", o->real_backend,
                  "Phase III: the runtime's kernels, as `run --backend`: cpu, emulate, null, or cuda (this machine's "
                  "GPU, each device a virtual device on it)")
      ->capture_default_str();
  cmd->add_option("--real-workers", o->real_workers,
                  "Phase III: HOST:PORT[,HOST:PORT...] of `doppler worker`s serving the cluster's devices (as `run "
                  "--workers`): the measured makespans are those of that deployment. One cluster only")
      ->delimiter(',');
  cmd->add_option("--token", o->token, "--real-workers: the token the workers require (default: $DOPPLER_TOKEN)");
  cmd->add_option("--busy-wait", o->busy_wait, std::string("--real-workers: ") + busy_wait_help)->capture_default_str();
  cmd->add_option("--batch", o->t.batch, "Episodes per update")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--il-lr", o->t.il_lr, "Phase I learning rate")->check(finite_in(learner::train_limits::lr_min, learner::train_limits::lr_max))->capture_default_str();
  cmd->add_option("--il-teacher-forcing", o->t.il_teacher_forcing,
                  "Phase I: the fraction of episodes that follow the teacher's own choices (behaviour cloning on its "
                  "states) instead of the learner's epsilon-greedy ones (DAgger); dual policies only")
      ->check(finite_in(0, 1))
      ->capture_default_str();
  cmd->add_option("--rl-lr", o->t.rl_lr, "Phase II learning rate")->check(finite_in(learner::train_limits::lr_min, learner::train_limits::lr_max))->capture_default_str();
  cmd->add_option("--entropy", o->t.entropy, "Phase II entropy bonus (start)")->check(finite_in(0, learner::train_limits::entropy_max))->capture_default_str();
  cmd->add_option("--baseline-decay", o->t.baseline_decay,
                  "Phase II baseline: 0 = running mean of all costs (paper), else EMA decay per update (phase III "
                  "keeps the running mean)")
      ->check(finite_in(0, learner::train_limits::baseline_decay_max))
      ->capture_default_str();
  cmd->add_option("--baseline", o->baseline,
                  "Phase II baseline: mean (running mean of every cost so far, the paper's), batch (the update "
                  "batch's mean) or greedy (self-critical: the current greedy placement's cost, one more "
                  "simulation per update); phase III always uses the running mean")
      ->capture_default_str();
  cmd->add_option("--normalize-advantages", o->t.normalize_advantages,
                  "Phase II/III: divide advantages by the batch's cost spread (true|false)")->capture_default_str();
  cmd->add_option("--algorithm", o->algorithm,
                  "Phase II update: reinforce (the paper's) or ppo (clipped surrogate, --ppo-epochs steps per batch "
                  "on the same advantages; dual and joint policies)")->capture_default_str();
  cmd->add_option("--ppo-clip", o->t.ppo_clip, "PPO: clip the probability ratio to 1 ± this")
      ->check(finite_in(learner::train_limits::ppo_clip_min, learner::train_limits::ppo_clip_max))->capture_default_str();
  cmd->add_option("--ppo-epochs", o->t.ppo_epochs, "PPO: Adam steps per batch")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--ppo-target-kl", o->t.ppo_target_kl,
                  "PPO: early stopping; skip a batch's remaining epochs once the mean per-step KL from the sampling "
                  "policy exceeds 1.5x this (0: off; 0.01 is the usual value)")
      ->check(finite_in(0, learner::train_limits::ppo_target_kl_max))->capture_default_str();
  cmd->add_option("--self-imitation", o->t.self_imitation,
                  "Phase II: imitation steps on the best episode sampled so far after every update (0: off), so "
                  "the greedy policy follows the best placement found")->check(CLI::Range(0, 1000000))->capture_default_str();
  cmd->add_flag("--self-imitation-gate", o->t.self_imitation_gate,
                "Self-imitation only after updates where the best episode beats the current greedy placement (one "
                "more simulation per update), so a greedy policy better than every sample keeps its RL drift");
  cmd->add_option("--advantage-floor", o->t.advantage_floor,
                  "Phase II: the smallest relative cost spread advantages are divided by (0: no floor, the rule "
                  "before the floor existed); a batch of one episode, or of equal costs, is not divided")->check(finite_in(0, 1))->capture_default_str();
  cmd->add_option("--temperature", o->t.temperature, "Phase II sampling temperature")
      ->check(finite_in(learner::train_limits::temperature_min, learner::train_limits::temperature_max))->capture_default_str();
  cmd->add_option("--seed", o->t.seed, "Seed of weights and sampling")->transform(non_negative())->capture_default_str();
  cmd->add_option("--hidden", o->p.hidden, "Encoder dims (paper: 128)")->check(CLI::Range(1, learner::policy_options::max_width))->capture_default_str();
  cmd->add_option("--steps", o->p.steps, "Message-passing steps (paper: 6)")->check(CLI::Range(0, learner::policy_options::max_steps))->capture_default_str();
  cmd->add_option("--policy-kind", o->kind,
                  "dual (DOPPLER's SEL + PLC), joint (single-policy ablation: one network scores (op, device) pairs), "
                  "placeto (Placeto-like: re-places ops in topological order, GNN re-run per step) or gdp "
                  "(GDP-like: GraphSAGE + attention, all ops' devices in one pass)")
      ->capture_default_str();
  cmd->add_option("--ablation", o->ablation,
                  "dual only: none, sel-only (PLC replaced by cp's device rule) or plc-only (SEL replaced by "
                  "cp's bottom-level order); only the learned head is trained")
      ->capture_default_str();
  cmd->add_option("--active-search", o->p.active_search,
                  "dual only: learning rate of per-graph logit offsets (one per op for SEL, one per (op, device) "
                  "for PLC) trained with the network, so the greedy policy can follow the best placements found on "
                  "this graph; saved in the checkpoint, used only when placing this graph again (0: off, the paper's "
                  "policy; 0.05 with --self-imitation 2 --temperature 1.5 in docs/learner.md)")
      ->check(finite_in(0, learner::policy_options::max_active_search))->capture_default_str();
  cmd->add_flag("--sibling-feature", o->p.sibling,
               "dual and joint: PLC also sees, per device, the compute already there of the ops sharing a consumer "
               "with the op being placed, so it can co-locate an op with its consumers' other inputs (docs/learner.md, "
               "\"The sibling feature\"; off: the paper's features); saved in the checkpoint");
  cmd->add_flag("--dynamic-sel", o->p.dynamic_sel,
               "dual: SEL also reads, per step, how much later than the ready set's first each ready op could start "
               "and its inputs are done, and whether it consumes the op just assigned, so its order can depend on the "
               "state (docs/learner.md, \"Dynamic SEL\"; off: the paper's static SEL); saved in the checkpoint");
  cmd->add_option("--init", o->init, "Start from this checkpoint (fine-tune, or go on training) instead of new weights");
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Write OUTPUT.resume, the state an interrupted training continues from, after every this many "
                  "episodes of phases I and II (0: only when stopped by Ctrl-C or SIGTERM, and after phase II); "
                  "removed when the training ends")
      ->check(CLI::Range(0, 1000000000))
      ->capture_default_str();
  cmd->add_flag("--resume", o->resume,
                "Continue the training OUTPUT.resume was saved from (the same command, plus --resume): phases I "
                "and II go on where they stopped with the same episodes, updates and result as an uninterrupted "
                "run; an interrupted phase III starts over");
  auto* out_opt = cmd->add_option("-o,--output", o->out,
                                  "Checkpoint to write (atomically); the default policy.pt is not overwritten unless "
                                  "-o names it")
                      ->capture_default_str();
  cmd->add_option("--csv", o->csv, "Training curve CSV (episode, phase, makespan, best, loss, agreement; and graph, with several --graph)");
  cmd->add_option("--svg", o->svg, "Training curve plot");
  cmd->add_option("--best", o->best, "Write the best placement found (doppler-placement/1; of the first --graph)");
  cmd->add_option("--config", o->config,
                  "Curriculum (doppler-curriculum/1 JSON, docs/learner.md); flags given explicitly override it");
  cmd->callback([o, cmd, cluster_opt, out_opt] {
    if (o->out == "-") throw error(errc::bad_argument, "", "--output", "a checkpoint is written to a file, not to stdout");
    {
      // --init is no input here: fine-tuning a checkpoint into itself (-o the --init file) is allowed.
      auto inputs = input_args(o->graphs, "--graph");
      for (const auto& c : o->clusters) inputs.push_back({c, "--cluster"});
      inputs.push_back({o->costs, "--costs"});
      inputs.push_back({o->config, "--config"});
      inputs.push_back({o->teacher, "--teacher"});
      check_outputs(*cmd,
                    {{o->out, "--output"}, {o->out + ".resume", "--output's training state (OUTPUT.resume)"},
                     {o->csv, "--csv"}, {o->svg, "--svg"}, {o->best, "--best"}},
                    inputs);
    }
    // A bare `doppler train` writes policy.pt, but never over one a longer training left there.
    if (out_opt->count() == 0 && !o->resume && std::filesystem::exists(o->out))
      throw error(errc::bad_argument, "", "--output",
                  o->out + " exists: name it with -o to overwrite it, or give another file");
    std::vector<graph> graphs;
    if (o->graphs.empty()) graphs.push_back(load_graph_or_default(""));
    for (const auto& path : o->graphs) {
      graphs.push_back(load_graph(path));
      if (graphs.back().size() == 0)  // no step to learn, and a cp makespan of 0 to divide by
        throw error(errc::bad_value, path, "ops", "the graph has no ops: nothing to train on");
    }
    // How the reports name graph k.
    auto graph_name = [&](std::size_t k) { return graph_label(o->graphs.empty() ? std::string() : o->graphs[k]); };
    note_default_cluster(cluster_opt);
    if (o->clusters.empty()) o->clusters.push_back(default_cluster);
    const graph& g = graphs.front();
    const std::size_t n_graphs = graphs.size();
    if (o->clusters.size() != 1 && o->clusters.size() != n_graphs)
      throw error(errc::bad_argument, "", "--cluster",
                  std::to_string(o->clusters.size()) + " clusters for " + std::to_string(n_graphs) +
                      " graphs: give one for all, or one per graph");
    std::vector<cluster> clusters;
    for (const auto& name : o->clusters) clusters.push_back(load_cluster_or_preset(name));
    auto cluster_of = [&](std::size_t k) -> const cluster& { return clusters[clusters.size() == 1 ? 0 : k]; };
    const cluster& c = clusters.front();
    cost_model cm = o->costs.empty() ? cost_model() : cost_model::load(o->costs);
    o->t.sim.model = parse_model(o->model);
    merge_curriculum(*o, *cmd);
    finish_train_flags(*o, *cmd, n_graphs);
    // --resume: the state the interrupted run saved beside its output, and its policy.
    const std::string resume_path = o->out + ".resume";
    learner::train_state resume_state;
    nlohmann::json resume_settings;
    if (o->resume) {
      if (!std::filesystem::exists(resume_path))
        throw error(errc::bad_argument, resume_path, "--resume",
                    "no training state to continue (train writes it beside --output while it runs and removes it when it ends)");
      std::string text;
      resume_state = learner::load_train_state(resume_path, text);
      resume_settings = nlohmann::json::parse(text);
    }
    if (!o->resume && std::filesystem::exists(resume_path))
      std::cerr << "train: " << resume_path << " holds an interrupted training's state; this run replaces it "
                << "(the interrupted command with --resume would have continued it)\n";
    learner::policy pol = o->resume          ? learner::policy::deserialize(resume_state.policy, resume_path)
                          : o->init.empty() ? learner::policy(o->p)
                                            : learner::policy::load(o->init);
    apply_init_flags(pol, *o, *cmd);
    // Before phase I, not at phase II's first update (the policy's kind may come from --init's file).
    if (o->t.ppo && learner::is_baseline(pol.options().kind)) {
      const std::string why = "PPO updates the dual and joint policies only; this policy is " +
                              learner::policy_kind_name(pol.options().kind) + " (use reinforce)";
      if (cmd->count("--algorithm") == 0 && !o->config.empty())  // the file asked for PPO
        throw error(errc::bad_argument, o->config, "reinforce.algorithm", why);
      throw error(errc::bad_argument, "", "--algorithm", why);
    }
    std::shared_ptr<comm::multicast_planner> planner;
    if (o->transfers == "planned") {
      if (o->t.sim.model != sim_model::wc)
        throw error(errc::bad_argument, "", "--transfers", "planned transfers need --model wc");
      if (clusters.size() > 1)  // one planner scores every problem (train_options::sim)
        throw error(errc::bad_argument, "", "--transfers", "planned transfers need one cluster for all graphs");
      planner = std::make_shared<comm::multicast_planner>(std::make_shared<const cluster>(c));
      o->t.sim.transfers = planner;
    } else if (o->transfers != "direct") {
      throw error(errc::bad_argument, "", "--transfers", "unknown mode '" + o->transfers + "' (direct, planned)");
    }
    std::vector<learner::problem> problems;
    problems.reserve(n_graphs);
    std::string teacher_desc;
    std::vector<std::string> parts;
    if (n_graphs > 1 && teacher_is_file(o->teacher))
      throw error(errc::bad_argument, "", "--teacher",
                  "a placement file places one graph; " + std::to_string(n_graphs) +
                      " were given with --graph (use a placer name, cp or auto)");
    for (std::size_t k = 0; k < n_graphs; ++k) {
      const graph& gi = graphs[k];
      auto& q = problems.emplace_back(gi, cluster_of(k), cm);
      if (planner) q.with_transfers(planner);
      std::string chosen;
      auto teacher = resolve_teacher(o->teacher, o->teacher_budget, gi, cluster_of(k), cm, o->t, pol.hint_for(q),
                                     pol.options().hint, chosen);
      if (teacher) q.with_teacher(teacher, o->teacher_symmetry);
      // Per graph: what `auto` chose, and a placement teacher's simulated makespan.
      std::string part = chosen == o->teacher ? "" : chosen;
      if (teacher) part += fmt::format("{}simulated {:.6g} s", part.empty() ? "" : " ", learner::score(q, *teacher, o->t.sim));
      if (!teacher && o->teacher_symmetry) part += ", --teacher-symmetry unused: cp's rule has no placement";
      if (const auto* sym = q.teacher_symmetry())
        part += sym->part_ops.empty() ? ", no interchangeable parts to relabel"
                                      : fmt::format(", relabelling {} interchangeable parts ({} kind{})", sym->part_ops.size(),
                                                    sym->kinds, sym->kinds == 1 ? "" : "s");
      parts.push_back(part);
    }
    // One part per graph; once when they are all the same.
    const bool same = std::all_of(parts.begin(), parts.end(), [&](const std::string& x) { return x == parts.front(); });
    for (std::size_t k = 0; k < (same ? 1 : parts.size()); ++k)
      if (!parts[k].empty()) teacher_desc += (teacher_desc.empty() ? "" : ", ") + parts[k];
    teacher_desc = o->teacher + (teacher_desc.empty() ? "" : " (" + teacher_desc + ")");
    learner::problem& pb = problems.front();
    std::vector<const learner::problem*> pbs;
    for (const auto& q : problems) pbs.push_back(&q);
    const nlohmann::json settings = train_settings(*o, problems);
    if (o->resume) check_resume_settings(resume_path, resume_settings, settings);
    const auto& po = pol.options();
    std::cerr << fmt::format(
        "train: graph {} ({} ops, {} edges){}, cluster {} ({} devices), model {}\n"
        "  policy: {}{}{}, hidden {}, steps {}, proj {}, mlp {} ({} parameters){}{}\n"
        "  phase I {} episodes (teacher {}, lr {}, eps {}->{}{}), phase II {} episodes ({}, lr {}, entropy {}->{}, T {}), batch {}, seed {}\n",
        graph_name(0), g.size(), g.edge_count(),
        n_graphs > 1 ? fmt::format(" and {} more (the curve in units of each graph's cp)", n_graphs - 1) : std::string(),
        c.name() + (clusters.size() > 1 ? fmt::format(" and {} more", clusters.size() - 1) : std::string()),
        c.device_count(), o->model,
        learner::policy_kind_name(po.kind),
        po.ablation == learner::policy_ablation::none ? "" : " (" + learner::policy_ablation_name(po.ablation) + ")",
        po.hint.empty() ? std::string()
                        : fmt::format(", hint {}{}{} (simulated {:.6g} s)", po.hint,
                                      po.hint == "auto" ? " -> " + pol.hint_for(pb)->method : std::string(),
                                      po.hint == "search" ? fmt::format(", budget {}", po.hint_budget) : std::string(),
                                      learner::score(pb, *pol.hint_for(pb), o->t.sim)),
        po.hidden, po.steps, po.proj,
        po.mlp, pol.parameter_count(),
        (po.active_search > 0 ? fmt::format(", active search lr {}", po.active_search) : std::string()) +
            (po.sibling ? ", sibling feature" : "") + (po.dynamic_sel ? ", dynamic SEL" : ""),
        o->init.empty() ? "" : " from " + o->init, o->t.il_episodes, teacher_desc, o->t.il_lr,
        o->t.il_epsilon, o->t.il_epsilon_final,
        o->t.il_teacher_forcing > 0 ? fmt::format(", {:g}% teacher-forced", 100 * o->t.il_teacher_forcing) : std::string(),
        o->t.rl_episodes,
        (o->t.ppo ? fmt::format("PPO, clip {}, {} epochs{}", o->t.ppo_clip, o->t.ppo_epochs,
                                o->t.ppo_target_kl > 0 ? fmt::format(", target KL {}", o->t.ppo_target_kl) : std::string())
                  : std::string("REINFORCE")) +
            (o->t.baseline == learner::baseline_kind::mean ? std::string() : fmt::format(", {} baseline", learner::baseline_name(o->t.baseline))) +
            (o->t.self_imitation > 0 ? fmt::format(", self-imitation {}{}", o->t.self_imitation,
                                                   o->t.self_imitation_gate ? " (gated)" : "")
                                     : std::string()),
        o->t.rl_lr, o->t.entropy, o->t.entropy_final,
        o->t.temperature, o->t.batch, o->t.seed);
    // The kernels decide the numbers (kernels.cpp, pin_cpu_kernels): say which ran. OpenBLAS reports
    // its own choice; ATen's is its variable when set.
    const char* aten = std::getenv("ATEN_CPU_CAPABILITY");
    std::cerr << fmt::format("  kernels: OpenBLAS {}, ATen {}\n", cpu::blas_core(), aten && *aten ? aten : "native");
    double cp = learner::score(pb, cp_place(g, c, cm, 0), o->t.sim);
    const int real = o->t.real_episodes;
    if (!o->real_stragglers.empty() && real == 0)
      throw error(errc::bad_argument, "", "--real-straggler", "slows a device of phase III's runtime: needs --real-episodes");
#ifndef DOPPLER_HAVE_ACTORS
    if (real > 0)
      throw error(errc::bad_argument, "", "--real-episodes", "this build has no actor runtime (DOPPLER_WITH_ACTORS=OFF)");
#endif
    if ((o->real_backend != "cpu" || !o->real_workers.empty()) && real == 0)
      throw error(errc::bad_argument, "", o->real_workers.empty() ? "--real-backend" : "--real-workers",
                  "sets up phase III's runtime: needs --real-episodes");
    if (!o->real_workers.empty() && clusters.size() > 1)
      throw error(errc::bad_argument, "", "--real-workers", "serves one cluster's devices: give one --cluster");
#ifdef DOPPLER_HAVE_ACTORS
    for (const auto& w : o->real_workers) (void)host_port(w, "--real-workers", false);  // before phase I runs
    (void)busy_wait_flag(o->busy_wait);
    // An unknown name, or cuda without a GPU or CUDA in this build: said before phases I and II run.
    (void)with_named_backend(engine_options{}, o->real_backend, clusters.front().device_count(), "--real-backend");
#endif
    std::vector<std::vector<std::pair<device_index, double>>> slow;  // per cluster; checked before phase I runs
    for (const auto& ck : clusters) slow.push_back(parse_stragglers(o->real_stragglers, ck, "--real-straggler"));
    o->t.real_episodes = 0;  // phase III runs below, through the learner actor
    if (o->t.real_batch < 1) throw error(errc::bad_argument, "", "--real-batch", "must be >= 1");
    if (o->t.real_eval_every < 0) throw error(errc::bad_argument, "", "--real-eval-every", "must be >= 0");
    if (o->t.real_confirm < 0) throw error(errc::bad_argument, "", "--real-confirm", "must be >= 0");
    if (!(o->t.real_select_margin >= 0))
      throw error(errc::bad_argument, "", "--real-select-margin", "must be >= 0");
    std::string real_summary;
    const int total = o->t.il_episodes + o->t.rl_episodes + real;
    o->t.on_episode = progress(total, n_graphs > 1 ? 1.0 : cp);
    o->t.checkpoint_every = o->checkpoint_every;
    o->t.on_checkpoint = [&](const learner::train_state& s) { learner::save_train_state(resume_path, s, settings.dump()); };
    o->t.stop = stop_requested;
    if (o->resume) {
      o->t.resume = &resume_state;
      const char* where[] = {"", "phase I", "phase II", "phase III"};
      std::cerr << fmt::format("  resuming from {}: {} after {} episodes ({} in all)\n", resume_path, where[resume_state.phase],
                               resume_state.done, resume_state.curve.size());
    }
    learner::train_result r;
    {
      stop_on_signals guard;  // phase III (below) is not checkpointed: Ctrl-C there quits as usual
      r = learner::train(pol, pbs, o->t);
    }
    if (r.stopped)
      throw interrupted(fmt::format("train: stopped after episode {} of {}; its state is in {} (the same command "
                                    "with --resume continues it)",
                                    r.curve.size(), total, resume_path));
    if (real == 0) pol.save(o->out);
    real_phase_result real_res;
#ifdef DOPPLER_HAVE_ACTORS
    if (real > 0) {
      real_phase_options ro;
      ro.episodes = real;
      ro.repeat = o->real_repeat;
      ro.check = o->real_check;
      ro.stragglers = std::move(slow);
      ro.backend = o->real_backend;
      ro.workers = o->real_workers;
      ro.token = o->token;
      ro.busy_wait = o->busy_wait;
      real_res = run_real_phase(std::move(pol), graphs, cluster_of, clusters.size(), cm, o->t, ro, o->out, r.curve);
      r.real_initial_greedy = real_res.graphs[0].initial_greedy;
      r.real_final_greedy = real_res.graphs[0].final_greedy;
      r.real_seconds = real_res.seconds;
      for (std::size_t k = 0; k < n_graphs; ++k)
        r.per_problem[k].greedy_makespan = learner::score(problems[k], real_res.graphs[k].greedy, o->t.sim);
      r.greedy_makespan = r.per_problem[0].greedy_makespan;
      real_summary = fmt::format("{} updates of {} episodes, {} greedy evaluations{}", real_res.updates, o->t.real_batch,
                                 real_res.evaluations,
                                 real_res.confirmed ? fmt::format(", {} best re-measured {} times", real_res.confirmed, o->t.real_confirm)
                                                    : std::string());
    }
#endif
    int eps = o->t.il_episodes + o->t.rl_episodes;  // simulated episodes (phase III reported apart)
    std::cout << fmt::format(
        "cp {:.6g} s, lower bound {:.6g} s\n"
        "initial greedy {:.6g} s; after training: greedy {:.6g} s ({:.3f}x cp; last parameters {:.6g} s), best {:.6g} s ({:.3f}x cp)\n"
        "{}"
        "phase I {:.1f} s, phase II {:.1f} s ({:.1f} ms per episode{}); wrote {}\n",
        r.cp_makespan, r.lower_bound, r.initial_greedy_makespan, r.greedy_makespan, r.greedy_makespan / r.cp_makespan, r.last_greedy_makespan,
        r.best_makespan, r.best_makespan / r.cp_makespan,
        o->t.il_episodes > 0 ? fmt::format("teacher agreement after phase I {:.1f}% (SEL {:.1f}%, PLC {:.1f}%)\n", 100 * r.final_agreement,
                                           100 * r.final_sel_agreement, 100 * r.final_plc_agreement)
                             : std::string("no phase I (--il-episodes 0)\n"),
        r.il_seconds, r.rl_seconds, eps ? 1000 * (r.il_seconds + r.rl_seconds) / eps : 0.0,
        (r.ppo_epochs_mean > 0 ? fmt::format("; PPO {:.2f} epochs per update", r.ppo_epochs_mean) : std::string()) +
            (o->t.self_imitation > 0 ? fmt::format("; self-imitation after {} of {} updates", r.self_imitation_updates,
                                                   r.rl_updates)
                                     : std::string()),
        o->out);
    if (real > 0)
      std::cout << fmt::format("phase III (learner actor): {}measured greedy makespan {:.6g} ± {:.2g} s -> {:.6g} ± {:.2g} s "
                               "({}; {} episodes, {}{}, {:.1f} s)\n",
                               n_graphs > 1 ? "graph 0's " : "", r.real_initial_greedy, real_res.graphs[0].initial_se,
                               r.real_final_greedy, real_res.graphs[0].final_se,
                               fmt::format("phase II's and the written greedy placement, {} fresh measurements of {} run{} "
                                           "each, interleaved, mean ± standard error",
                                           real_res.check, o->real_repeat, o->real_repeat == 1 ? "" : "s"),
                               real, real_summary,
                               o->t.real_eval_every > 0 ? (real_res.kept_initial ? "; wrote phase II's parameters (none measured faster)"
                                                                    : "; wrote later parameters that measured faster")
                                         : "",
                               r.real_seconds);
    if (n_graphs > 1)
      for (std::size_t k = 0; k < n_graphs; ++k) {
        const auto& q = r.per_problem[k];
        std::cout << fmt::format("graph {} ({} on {}): cp {:.6g} s, initial greedy {:.6g} s, greedy {:.6g} s ({:.3f}x cp){}\n", k,
                                 graph_name(k), cluster_of(k).name(), q.cp_makespan, q.initial_greedy_makespan, q.greedy_makespan,
                                 q.greedy_makespan / q.cp_makespan,
                                 real > 0 ? fmt::format("; measured: cp {:.6g} s, greedy {:.6g} s -> {:.6g} s ({:.3f}x cp)",
                                                        real_res.graphs[k].cp, real_res.graphs[k].initial_greedy,
                                                        real_res.graphs[k].final_greedy,
                                                        real_res.graphs[k].final_greedy / real_res.graphs[k].cp)
                                          : std::string());
      }
    if (!o->csv.empty()) learner::write_text_file(o->csv, learner::curve_csv(r.curve, n_graphs > 1));
    if (!o->svg.empty()) {
      const std::string on = clusters.size() > 1 ? fmt::format("{} clusters", clusters.size()) : c.name();
      const auto svg = n_graphs > 1
                           ? learner::curve_svg(r.curve, 1.0, 0.0, fmt::format("doppler train: {} graphs on {} (makespan / cp)", n_graphs, on))
                           : learner::curve_svg(r.curve, r.cp_makespan, r.lower_bound, "doppler train: " + g.name() + " on " + on);
      learner::write_text_file(o->svg, svg);
    }
    if (!o->best.empty()) save_placement(r.best, g, c, o->best);
    std::error_code gone;  // finished: nothing to resume
    std::filesystem::remove(resume_path, gone);
  });
}

void add_place_learned(CLI::App& app) {
  auto* cmd = app.add_subcommand("place-learned", "Place a graph with a trained DOPPLER policy (greedy SEL + PLC)");
  struct opts {
    std::string graph, cluster, policy, out, model = "simple", costs;
  };
  auto o = std::make_shared<opts>();
  cmd->add_option("--graph", o->graph, "Graph: doppler-graph/1 JSON or a DOPPLER paper .txt file")->required();
  cmd->add_option("--cluster", o->cluster, "Cluster: a doppler-cluster/1 file or a preset name")->required();
  cmd->add_option("--policy", o->policy, "Checkpoint written by `doppler train`")->required();
  cmd->add_option("-o,--output", o->out, "Placement to write (doppler-placement/1)")->required();
  cmd->add_option("--model", o->model, "Simulator model for the reported makespan: simple or wc")->capture_default_str();
  cmd->add_option("--costs", o->costs, "Cost table (doppler-costs/1); default: built-in efficiencies");
  cmd->callback([o, cmd] {
    check_outputs(*cmd, {{o->out, "--output", true}},
                  {{o->graph, "--graph"}, {o->cluster, "--cluster"}, {o->policy, "--policy"}, {o->costs, "--costs"}});
    sim_options so;
    so.model = parse_model(o->model);  // before the placement is written, not after
    graph g = load_graph(o->graph);
    cluster c = load_cluster_or_preset(o->cluster);
    cost_model cm = o->costs.empty() ? cost_model() : cost_model::load(o->costs);
    auto pl = make_doppler_placer(o->policy);
    auto t0 = std::chrono::steady_clock::now();
    placement p = pl->place(g, c, cm, placer_options{});
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    save_placement(p, g, c, o->out);
    // with -o - the placement is stdout: the summary goes to stderr, as place's does
    (o->out == "-" ? std::cerr : std::cout) << fmt::format("doppler: {} ops on {} devices in {:.1f} ms; simulated ({}) makespan {:.6g} s; wrote {}\n",
                             g.size(), c.device_count(), 1000 * s, o->model, simulate(g, c, p, cm, so).makespan, o->out);
  });
}

}  // namespace

void forward_to_learn_twin() {
  throw error(errc::internal, "doppler-learn: the learner is built in; nothing to forward to");
}

void add_learn_commands(CLI::App& app) {
  learner::register_doppler_learner();  // `run --learner doppler` (cmd_run.cpp)
  add_train(app);
  add_place_learned(app);
}

}  // namespace doppler::cli
