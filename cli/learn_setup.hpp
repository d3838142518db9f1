#pragma once
// Flag interpretation of `doppler train` that is not the command's wiring (cmd_learn_setup.cpp):
// phase I's teacher from --teacher, the episode counts from --phases / --episodes. doppler-learn only.

#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace doppler::cli {

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
