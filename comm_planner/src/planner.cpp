// plan(): the network, reachability, bound, the chosen method, pruning, header and validation.
#include "methods.hpp"

#include <doppler/runtime/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_set>

namespace doppler::comm {

std::vector<std::string> method_names() {
  return {"milp", "lp", "telp", "astar", "greedy", "ring", "rings", "direct", "tree", "auto"};
}

bool have_solvers() noexcept {
#ifdef DOPPLER_HAVE_COIN
  return true;
#else
  return false;
#endif
}

namespace {

detail::method_result run_method(const std::string& m, const network& net, const demand& d,
                                 const plan_options& opt, const lower_bound& lb) {
  using namespace detail;
  if (m == "ring") return plan_ring(net, d);
  if (m == "rings") return plan_rings(net, d);
  if (m == "direct") return plan_direct(net, d);
  if (m == "tree") return plan_tree(net, d);
  if (m == "greedy") return plan_greedy(net, d, opt);
  if (m == "lp") return plan_lp(net, d, opt, lb);
  if (m == "telp") return plan_telp(net, d, opt, lb);
  if (m == "astar") return plan_astar(net, d, opt, lb);
  if (m == "milp") {
    // A known schedule: the MILP searches down from its horizon (the greedy plan only if it is invalid).
    if (opt.hint_sends) return plan_milp(net, d, opt, lb, 0);
    // The greedy plan caps the horizon the MILP searches.
    auto g = make_schedule(net, d, "greedy", plan_greedy(net, d, opt).sends);
    return plan_milp(net, d, opt, lb, g.epochs);
  }
  std::string names;
  for (auto& n : method_names()) names += (names.empty() ? "" : ", ") + n;
  throw error(errc::bad_argument, "unknown comm-planning method \"" + m + "\" (methods: " + names + ")");
}

/// Range checks of the options; errors name the plan_options field.
void check_options(const plan_options& opt) {
  const auto names = method_names();
  if (std::find(names.begin(), names.end(), opt.method) == names.end()) {
    std::string known;
    for (auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw error(errc::bad_argument, "", "method",
                "unknown comm-planning method \"" + opt.method + "\" (methods: " + known + ")");
  }
  if (!(opt.time_limit >= 0) || !std::isfinite(opt.time_limit))
    throw error(errc::bad_argument, "", "time_limit", fmt::format("{:g} is not a number of seconds >= 0", opt.time_limit));
  if (opt.max_epochs < 0)
    throw error(errc::bad_argument, "", "max_epochs", std::to_string(opt.max_epochs) + " is negative (0: searched)");
  if (opt.round_epochs < 2)
    throw error(errc::bad_argument, "", "round_epochs", std::to_string(opt.round_epochs) + " is less than 2");
  if (opt.replan_epoch < -1)
    throw error(errc::bad_argument, "", "replan_epoch", std::to_string(opt.replan_epoch) + " is less than -1");
}

/// Binaries the MILP would need at horizon K (chunks × links × epochs, before pruning).
double milp_size(const network& net, const demand& d, std::int32_t K) {
  return static_cast<double>(d.chunks.size()) * static_cast<double>(net.links().size()) * K;
}

}  // namespace

namespace {

/// `out` with its validation report; a re-plan that breaks a rule is our bug (errc::internal).
plan_result validated(plan_result out, const network& net, const demand& d, const plan_options& opt) {
  try {
    out.report = validate_schedule(net, d, out.sched, {.switch_copy = opt.switch_copy});
  } catch (const error& e) {
    throw error(errc::internal, "re-planning produced an invalid schedule: " + std::string(e.what()));
  }
  return out;
}

/// Re-planning: keep the previous schedule's sends of chunks it still fully delivers, plan the rest
/// around them, validate the union.
plan_result replan(const cluster& c, const network& net, const demand& d, const plan_options& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const schedule& old = *opt.warm_start;
  detail::check_warm_start(net, d, old);
  // Only sends that are valid for the new demand count: a schedule of another demand whose chunk
  // ids overlap (an allgather's for an alltoall) carries nothing it cannot deliver.
  const std::vector<send> valid =
      detail::replay_valid(net, d, old.sends, std::numeric_limits<std::int32_t>::max());
  std::map<std::uint32_t, std::set<node_index>> reached;
  for (const send& x : valid) reached[x.chunk].insert(x.dst);
  std::unordered_set<std::uint32_t> carried;
  for (const chunk& ch : d.chunks) {
    auto it = reached.find(ch.id);
    if (it == reached.end()) continue;
    bool all = std::all_of(ch.destinations.begin(), ch.destinations.end(),
                           [&](device_index t) { return it->second.count(t) > 0; });
    if (all) carried.insert(ch.id);
  }
  std::vector<send> kept;
  for (const send& x : valid)
    if (carried.count(x.chunk)) kept.push_back(x);
  detail::prune_unused(net, d, kept);  // a send to a device that neither needs nor forwards the chunk only blocks a link
  demand rest = d;
  rest.chunks.clear();
  for (const chunk& ch : d.chunks)
    if (!carried.count(ch.id)) rest.chunks.push_back(ch);
  plan_result out;
  out.bound = compute_lower_bound(net, d);
  std::vector<send> sends = kept;
  std::string note;
  if (opt.method == "milp") {
    // Warm start: the kept sends plus a greedy plan of the new chunks around them are a feasible
    // schedule of the whole demand; it seeds the joint MILP as a MIP start (old sends may move).
    // When the joint greedy plan already meets the bound, it is the start and nothing else is planned.
    std::vector<send> fresh = detail::plan_greedy(net, d, opt).sends;
    detail::prune_unused(net, d, fresh);
    const std::int32_t fresh_epochs = detail::make_schedule(net, d, "greedy", fresh).epochs;
    if (!rest.chunks.empty() && fresh_epochs > out.bound.epochs) {
      plan_options g = opt;
      g.warm_start = nullptr;
      g.method = "greedy";
      g.fixed_sends = &kept;
      plan_result part = plan(c, rest, g);
      sends.insert(sends.end(), part.sched.sends.begin(), part.sched.sends.end());
    }
    // The joint greedy plan from scratch may be shorter than keeping the old sends: the MIP start
    // (and the horizon the MILP searches down from) is the shorter of the two.
    std::string start = "kept sends + greedy";
    if (fresh_epochs <= out.bound.epochs) {
      // Nothing to solve: the joint greedy plan meets the bound (old sends may move, as with the MILP).
      out.sched = detail::make_schedule(net, d, "milp+warm", std::move(fresh));
      out.sched.note = "re-planned: the joint greedy plan meets the lower bound of " + std::to_string(out.bound.epochs) +
                       " epochs; no solve";
      out.sched.proved_optimal = true;
      out.sched.lower_bound_seconds = out.bound.seconds;
      out.sched.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return validated(std::move(out), net, d, opt);
    }
    if (fresh_epochs < detail::make_schedule(net, d, "greedy", sends).epochs) {
      sends = std::move(fresh);
      start = "the joint greedy plan (shorter than kept sends + greedy)";
    }
    plan_options m = opt;
    m.warm_start = nullptr;
    m.hint_sends = &sends;
    plan_result joint = plan(c, d, m);
    joint.sched.method = "milp+warm";
    joint.sched.note = "re-planned: " + std::to_string(kept.size()) + " kept sends of " + std::to_string(carried.size()) +
                       " chunks, " + std::to_string(rest.chunks.size()) + " new chunks; MIP start from " + start + "; " +
                       joint.sched.note;
    joint.sched.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return joint;
  }
  if (!rest.chunks.empty()) {
    plan_options o = opt;
    o.warm_start = nullptr;
    o.fixed_sends = &kept;
    plan_result part = plan(c, rest, o);
    sends.insert(sends.end(), part.sched.sends.begin(), part.sched.sends.end());
    note = part.sched.method + " around the kept sends" + (part.sched.note.empty() ? "" : ": " + part.sched.note);
  }
  out.sched = detail::make_schedule(net, d, opt.method + "+warm", std::move(sends));
  out.sched.note = "re-planned: kept " + std::to_string(kept.size()) + " sends of " + std::to_string(carried.size()) +
                   " chunks, planned " + std::to_string(rest.chunks.size()) + " chunks" +
                   (note.empty() ? "" : " (" + note + ")");
  out.sched.lower_bound_seconds = out.bound.seconds;
  out.sched.proved_optimal = out.sched.epochs == out.bound.epochs;
  out.sched.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return validated(std::move(out), net, d, opt);
}

}  // namespace

plan_result plan(const cluster& c, const demand& d, const plan_options& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  check_options(opt);
  d.validate(c);
  network net(c, d.chunk_bytes, opt.tau_mode, opt.tau, opt.removed_links);
  detail::check_reachable(net, d);
  if (opt.warm_start && opt.replan_epoch >= 0) return detail::replan_at(net, d, opt);
  if (opt.warm_start) return replan(c, net, d, opt);
  if (opt.fixed_sends && opt.method != "greedy" && opt.method != "milp" && opt.method != "auto")
    throw error(errc::bad_argument, "planning around fixed sends (re-planning, tenants first-come-first-served) "
                                    "supports the greedy, milp and auto methods, not " + opt.method);
  plan_result out;
  // Around fixed sends (re-planning's kept prefix, earlier tenants) only the capacity they leave counts.
  out.bound = opt.fixed_sends ? compute_lower_bound(net, d, opt.fixed_sends) : compute_lower_bound(net, d);
  if (opt.max_epochs > 0 && opt.max_epochs < out.bound.epochs)
    throw error(errc::infeasible, "no schedule fits " + std::to_string(opt.max_epochs) + " epochs: the lower bound is " +
                                      std::to_string(out.bound.epochs) + " epochs (cut " + out.bound.cut + ")");
  std::string method = opt.method;
  detail::method_result r;
  if (method == "auto") {
    // Greedy always; a solver on top where it fits, keeping whichever finishes in fewer epochs.
    r = detail::plan_greedy(net, d, opt);
    method = "greedy";
    auto greedy_epochs = detail::make_schedule(net, d, "greedy", r.sends).epochs;
    // Solvers only where they can help in reasonable time: the MILP (or its rounds) up to 20× the
    // binary budget; beyond that (thousands of GPUs) the greedy plan stands.
    const bool tractable = milp_size(net, d, greedy_epochs) <= 20.0 * static_cast<double>(opt.milp_binary_limit);
    if (have_solvers() && tractable && greedy_epochs > out.bound.epochs) {
      bool unicast = true;
      for (const chunk& ch : d.chunks) unicast = unicast && ch.destinations.size() == 1;
      // Unicast: the time-expanded LP where it stays small (sources × links × epochs ≤ 40k columns
      // of flow: solved in seconds), else the fluid LP.
      std::set<device_index> sources;
      for (const chunk& ch : d.chunks) sources.insert(ch.source);
      const bool small_telp = static_cast<double>(sources.size()) * static_cast<double>(net.links().size()) *
                                  greedy_epochs <= 40000.0;
      std::string solver = milp_size(net, d, greedy_epochs) <= static_cast<double>(opt.milp_binary_limit)
                               ? "milp"
                               : (opt.fixed_sends ? "greedy" : unicast ? (small_telp ? "telp" : "lp") : "astar");
      detail::method_result s = solver == "greedy" ? r : solver == "milp" ? detail::plan_milp(net, d, opt, out.bound, greedy_epochs,
                                                                                    // around fixed sends: down from the greedy plan
                                                                                    opt.fixed_sends ? &r.sends : nullptr)
                                                 : run_method(solver, net, d, opt, out.bound);
      if (detail::make_schedule(net, d, solver, s.sends).epochs <= greedy_epochs) {
        r = std::move(s);
        method = solver;
      }
    }
  } else {
    r = run_method(method, net, d, opt, out.bound);
  }
  // Baselines keep their shape (unicast stays unicast); the others drop relays nobody uses.
  const bool baseline = method == "ring" || method == "direct" || method == "tree";
  if (!baseline && r.sends.size() < 400000) detail::prune_unused(net, d, r.sends);
  out.sched = detail::make_schedule(net, d, method, std::move(r.sends));
  out.sched.proved_optimal = r.proved_optimal || out.sched.epochs == out.bound.epochs;
  out.sched.note = r.note;
  if (opt.max_epochs > 0 && out.sched.epochs > opt.max_epochs)  // the methods that do not search a horizon
    throw error(errc::infeasible, "method " + method + "'s schedule takes " + std::to_string(out.sched.epochs) +
                                      " epochs, more than the cap of " + std::to_string(opt.max_epochs) +
                                      " (milp and telp search within a cap; the others plan without one)");
  out.sched.lower_bound_seconds = out.bound.seconds;
  out.sched.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  try {
    out.report = validate_schedule(net, d, out.sched, {.switch_copy = opt.switch_copy});
  } catch (const error& e) {
    throw error(errc::internal, "method " + method + " produced an invalid schedule: " + std::string(e.what()));
  }
  return out;
}

}  // namespace doppler::comm
