#pragma once
/// Planning a demand on a cluster: one entry point, methods chosen by name (StarPU-style), every
/// schedule validated and reported with its lower bound.

#include <doppler/comm/bounds.hpp>
#include <doppler/comm/demand.hpp>
#include <doppler/comm/network.hpp>
#include <doppler/comm/schedule.hpp>
#include <doppler/comm/validate.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace doppler::comm {

/// Options with defaults and fluent setters.
struct plan_options {
  std::string method = "auto";  ///< milp, lp, telp, astar, greedy, ring, direct, tree, auto
  epoch_mode tau_mode = epoch_mode::fast;
  double tau = 0;                ///< epoch seconds when tau_mode is given
  double time_limit = 60;        ///< seconds for the whole solve (solver methods); finite, ≥ 0
  bool first_feasible = false;   ///< MILP: stop at the first feasible schedule of each horizon
  bool switch_copy = false;      ///< switches may multicast (NVLink SHARP-like)
  std::int32_t max_epochs = 0;   ///< horizon cap (0: searched from the lower bound); ≥ 0
  std::int32_t round_epochs = 15;///< astar: epochs per round (≥ 2)
  std::vector<link_index> removed_links;  ///< cluster links left out (failures)
  /// Re-planning: a previous schedule. Its sends of chunks still in the demand are kept (fixed
  /// prefix) and only chunks it does not carry are planned around them (greedy, auto); with milp
  /// those kept sends plus a greedy plan of the new chunks seed the joint MILP as a MIP start.
  const schedule* warm_start = nullptr;
  /// Re-planning epoch t0 (≥ 0: the moment the demand changes; greedy, auto, milp): the warm
  /// start's sends before t0 have happened and stay identical, later ones may change, new sends
  /// start at t0; the plan is the best of the greedy from the state at t0 (steered by the old
  /// plan's remaining sends), the same without them, and the old plan kept with the greedy around
  /// it, then (auto, milp) the MILP from the state when above the bound. -1: every kept old send
  /// is fixed and the new chunks fill in around them (greedy, auto), or the MIP start (milp).
  std::int32_t replan_epoch = -1;
  /// Sends that already occupy links (other tenants planned first-come-first-served); the plan
  /// uses only the capacity they leave (greedy, milp).
  const std::vector<send>* fixed_sends = nullptr;
  /// milp: a known schedule of this demand handed to CBC as a MIP start (re-planning's warm start).
  const std::vector<send>* hint_sends = nullptr;
  std::size_t milp_binary_limit = 15000;  ///< auto: above this many binaries use astar/lp/greedy
  /// telp: above this many flow columns (sources × links × bound epochs) the LP is solved on
  /// coarser epochs (power-of-two multiples of τ that bring it under the budget, up to 8× coarser
  /// tried first) and its paths list-scheduled on τ.
  double telp_column_budget = 200000;
  /// telp: when its rounding is above the bound, try the MILP restricted to the LP's support.
  bool telp_support_milp = true;

  plan_options& with_method(std::string m) { method = std::move(m); return *this; }
  plan_options& with_tau(epoch_mode m, double t = 0) { tau_mode = m; tau = t; return *this; }
  plan_options& with_time_limit(double s) { time_limit = s; return *this; }
  plan_options& with_first_feasible(bool b = true) { first_feasible = b; return *this; }
  plan_options& with_switch_copy(bool b = true) { switch_copy = b; return *this; }
  plan_options& with_max_epochs(std::int32_t k) { max_epochs = k; return *this; }
  /// Re-plan from `old` at epoch t0 (see replan_epoch).
  plan_options& with_replan(const schedule& old, std::int32_t t0) { warm_start = &old; replan_epoch = t0; return *this; }
};

/// A planned schedule with its replay and its bound.
struct plan_result {
  schedule sched;
  replay_report report;
  lower_bound bound;
  /// bound / transfer time, in (0, 1]; 1 means the schedule meets the bound.
  double fraction_of_bound() const noexcept {
    return report.transfer_seconds > 0 ? bound.seconds / report.transfer_seconds : 1.0;
  }
};

/// Plans `d` on `c`. Throws doppler::error: bad_argument for an unknown method or one that does
/// not apply (ring on a non-allgather), an option out of range (the path names the field:
/// `method`, `time_limit`, `max_epochs`, `round_epochs`, `replan_epoch`), or a τ / chunk size
/// outside the network's limits (`tau`, `chunk_bytes`; see network), infeasible when a destination cannot be reached or the
/// horizon is too short, internal when a solver fails (with its message); "not built" when the
/// method needs COIN-OR and doppler was built without it.
plan_result plan(const cluster& c, const demand& d, const plan_options& opt = {});

/// The method names, in the order `compare-comm` reports them.
std::vector<std::string> method_names();
/// Whether the MILP/LP methods were compiled in.
bool have_solvers() noexcept;

}  // namespace doppler::comm
