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
method_result plan_greedy(const network& net, const demand& d, const plan_options& opt);
/// Solver methods (COIN-OR); throw "not built" without it.
method_result plan_milp(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb,
                        std::int32_t upper_epochs);
method_result plan_lp(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb);
/// TE-CCL's LP on the time-expanded network (per-source fractional flows, no copy), rounded to paths.
method_result plan_telp(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb);
method_result plan_astar(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb);

}  // namespace doppler::comm::detail
