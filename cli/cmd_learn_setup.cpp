// Flag interpretation of `doppler train` (learn_setup.hpp): phase I's teacher, --phases/--episodes.
#include "learn_setup.hpp"

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/sim.hpp>

#include <algorithm>
#include <filesystem>

namespace doppler::cli {

bool teacher_is_file(const std::string& name) {
  return name != "cp" && name != "auto" && !is_placer(name);
}

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
    if (name.ends_with(".json") || name.find('/') != std::string::npos || std::filesystem::exists(name))
      return std::make_shared<const placement>(load_placement(name, g, c));
    throw error(errc::unknown_kind, "", "--teacher",
                "'" + name + "' is neither a placer (" + placer_list() + ") nor a placement file");
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

}  // namespace doppler::cli
