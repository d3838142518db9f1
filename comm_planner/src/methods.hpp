#pragma once
// The planning methods behind plan(): each returns the sends of a schedule on `net`.
#include "plan_common.hpp"

#include <doppler/comm/bounds.hpp>

namespace doppler::comm::detail {

/// What a solver method reports besides its sends.
struct method_result {
  std::vector<send> sends;
  bool proved_optimal = false;
  std::string note;
};

method_result plan_ring(const network& net, const demand& d);
/// NCCL's multi-channel allgather: link-disjoint rings, a source's chunks spread over them.
method_result plan_rings(const network& net, const demand& d);
method_result plan_direct(const network& net, const demand& d);
method_result plan_tree(const network& net, const demand& d);
/// Where a greedy pass starts (re-planning): sends already committed (the history before the
/// re-planning epoch, or old sends pinned after it; valid for the demand) give the holdings, the
/// chunks in flight and the link occupancy; new sends start at `start_epoch`. `hint` (old sends
/// after it): for a link in epoch e the matcher prefers chunks the old plan sent on that link by e.
struct greedy_state {
  std::int32_t start_epoch = 0;
  const std::vector<send>* committed = nullptr;
  const std::vector<send>* hint = nullptr;
};
/// The TACOS-style matcher; from `st` when given (only its new sends are returned).
method_result plan_greedy(const network& net, const demand& d, const plan_options& opt,
                          const greedy_state* st = nullptr);

/// A fractional plan steering the greedy matcher (telp's rounding): per owner (a source, or the
/// shared usage of a multicast source) and link, the LP's cumulative amount sent by each epoch.
/// The matcher prefers, for a link in epoch e, chunks whose owner the LP sends on that link by
/// e + lookahead more often than the matcher has so far; `seed` > 0 randomizes ties.
struct greedy_guide {
  std::int32_t K = 0;  ///< LP horizon: cum holds epochs 0..K-1
  std::size_t links = 0;
  std::vector<std::size_t> owner;  ///< per demand chunk: its owner row
  std::vector<double> cum;         ///< [(owner * links + l) * K + k]
  std::int32_t lookahead = 0;
  std::int32_t epoch_scale = 1;  ///< network epochs per LP epoch (the LP may run on coarser epochs)
  bool lp_first = true;  ///< LP preference before rarity (else rarity, then the LP)
  unsigned seed = 0;
};
method_result plan_greedy_guided(const network& net, const demand& d, const plan_options& opt, const greedy_guide& g);
/// Solver methods (COIN-OR); throw "not built" without it.
/// With a known schedule (`opt.hint_sends`, or `incumbent`: e.g. the greedy plan around fixed
/// sends) the epoch search starts at its horizon and goes down (first feasible schedule per
/// horizon, the bound probed first when it is ≥ 2 epochs below), else upward from the bound.
method_result plan_milp(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb,
                        std::int32_t upper_epochs, const std::vector<send>* incumbent = nullptr);
/// The MILP from the state at epoch t0 (re-planning): `history` (sends before t0, valid for d) is
/// fixed, the model places only sends at epochs ≥ t0; downward search from `known` (a whole valid
/// schedule of d containing the history). Returns the new sends only (epochs ≥ t0).
method_result plan_milp_from(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb,
                             std::int32_t t0, const std::vector<send>& history, const std::vector<send>& known);
method_result plan_lp(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb);
/// TE-CCL's LP on the time-expanded network (per-source fractional flows, no copy), rounded to paths.
method_result plan_telp(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb);
/// Re-planning at `opt.replan_epoch` from `opt.warm_start` (replan.cpp): the history before it
/// kept, the rest planned again from the state there; validated.
plan_result replan_at(const network& net, const demand& d, const plan_options& opt);
/// Throws unless the warm start's schedule has this plan's chunk size and epoch length (both named).
void check_warm_start(const network& net, const demand& d, const schedule& old);

/// The sends of `old` that stay valid for `d` when replayed in epoch order (the chunk is in the
/// demand, the link exists, the sender holds the chunk: its source, an earlier kept arrival, or for
/// a switch the same epoch's kept inflow), restricted to epochs < `until` (replan.cpp).
std::vector<send> replay_valid(const network& net, const demand& d, const std::vector<send>& old, std::int32_t until);
method_result plan_astar(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb);

}  // namespace doppler::comm::detail
