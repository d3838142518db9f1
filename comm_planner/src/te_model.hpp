#pragma once
// The TE-CCL MILP over a window of epochs, built in memory for CBC: binaries F[c,l,k] (chunk c
// crosses link l starting in epoch k), continuous holdings B[c,v,k] ∈ [0,1] (device v holds c at
// the start of epoch k), store-and-forward, copy at devices (and optionally switches), switch flow
// without storage, window capacities, and either "every demand met by the end" or (rounds) a
// progress reward. Used by the milp method (one window = the whole horizon) and by astar (rounds).
#include "plan_common.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace doppler::comm::detail {

struct window_spec {
  std::int32_t first_epoch = 0;  ///< global epoch of local epoch 0
  std::int32_t epochs = 0;       ///< K: sends in local epochs 0..K-1, holdings checked at K
  /// Per (chunk, device), row-major C × D: local epoch from which the chunk is held (≤ 0: from the
  /// start; > 0: an earlier send lands then), or unreachable_epochs.
  std::vector<std::int32_t> held_from;
  /// Per (chunk, destination) whether it still has to be delivered (C × D, 1 = pending).
  std::vector<char> pending;
  bool require_all = true;  ///< every pending demand met at K (else rewarded for progress)
  /// Sends already on the links (global epochs): earlier rounds, fixed sends of other jobs.
  const slot_table* prior = nullptr;
  /// A known schedule of this window (global epochs) handed to CBC as a MIP start; may be null.
  const std::vector<send>* hint = nullptr;
  /// Per (chunk, link, local epoch), [(c * links + l) * epochs + k]: whether a send may be made
  /// (0: its binary is fixed to 0, e.g. outside an LP's support); null: all may.
  const std::vector<char>* allowed = nullptr;
};

struct window_result {
  enum class status { solved, infeasible, no_solution } state = status::no_solution;
  bool proved_optimal = false;
  std::vector<send> sends;  ///< global epochs
  std::size_t binaries = 0, rows = 0;
  std::string message;
};

/// Builds and solves one window with CBC within `seconds`.
window_result solve_window(const network& net, const demand& d, const plan_options& opt, const window_spec& w,
                           double seconds);

/// Binaries solve_window would create (after pruning), without building the model.
std::size_t count_binaries(const network& net, const demand& d, const window_spec& w);

/// The window spec of a fresh start: chunks at their sources, every demand pending.
window_spec initial_window(const network& net, const demand& d, std::int32_t epochs);

}  // namespace doppler::comm::detail
