#pragma once
/// When a producer's output reaches a candidate device, as the list schedulers (cp, heft) estimate it
/// in their earliest start time. docs/placers.md, "Planned-aware EST".

#include "placer_common.hpp"

#include <doppler/runtime/transfer_plan.hpp>

#include <memory>
#include <unordered_map>
#include <vector>

namespace doppler::detail {

/// Without a planner: end(u) + the uncontended route time of u's output (the per-edge constant of
/// DOPPLER's teacher). With one (`sim_options::transfers`): the tensor moves the way the simulator
/// would move it to every device it already goes to plus the candidate: when `wants_plan` holds and
/// the planner returns a plan, end(u) + the time the candidate holds every chunk in an α-β replay of
/// the plan's hops alone (chunks pipelined, shared first links crossed once, each link FIFO in hop
/// order); otherwise end(u) + the route time.
class arrival_estimator {
 public:
  /// `planner` may be null (then estimates equal the per-edge rule exactly).
  arrival_estimator(const graph& g, const cluster& c, transfer_planner* planner);

  /// When op u's output (u on device du, finished at end_u) is on device d.
  double arrival(op_index u, device_index du, double end_u, device_index d);
  /// Records that u's output goes to device d (a consumer of u was placed there).
  void commit(op_index u, device_index du, device_index d);

 private:
  const graph& g_;
  const cluster& c_;
  transfer_table tt_;
  transfer_planner* planner_;
  std::vector<std::vector<device_index>> sent_to_;  ///< per op: sorted destination devices (planner only)
  std::vector<double> memo_;                        ///< per op × device: offset for S(u) (NaN: not yet)
  std::vector<device_index> dsts_;                  ///< scratch
  /// Per plan: seconds from the start until each device holds every chunk (the plan kept alive).
  struct replayed {
    std::shared_ptr<const transfer_plan> plan;
    std::vector<double> at;
  };
  std::unordered_map<const transfer_plan*, replayed> replays_;
  /// Seconds after u ends until d holds u's output under the plan for S(u) ∪ {d}.
  double planned_offset(op_index u, device_index du, device_index d, double bytes, double route);
  const std::vector<double>& replay(const std::shared_ptr<const transfer_plan>& p, double bytes);
};

}  // namespace doppler::detail
