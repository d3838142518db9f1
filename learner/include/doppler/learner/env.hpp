#pragma once
/// The assignment episode DOPPLER's policies act in, Torch-free: |V| steps, each one SEL choice (an
/// op of the ready set: all its producers assigned) and one PLC choice (a device). The environment
/// keeps the list-schedule timeline the critical-path teacher keeps (per device: time available; per
/// op: start and end), computes PLC's dynamic device features, and answers what the teacher would do
/// in the current state (the DAgger labels of phase I): the `cp` rule, or a given placement's.

#include <doppler/learner/features.hpp>
#include <doppler/learner/symmetry.hpp>
#include <doppler/runtime/placement.hpp>

#include <span>
#include <memory>
#include <utility>
#include <vector>

namespace doppler {
class transfer_planner;
namespace detail {
class arrival_estimator;  // runtime/src/placer_arrivals.hpp
}
}  // namespace doppler

namespace doppler::learner {

/// Columns of PLC's device features for op v on device d, in order (times divided by the graph's
/// critical-path length `graph_features::time_scale`; est_gap and est_rank are additions to the
/// paper's list that make cp's rule scale-free to learn; the two hint columns are 0 without a hint
/// placement, and a policy without a hint does not read them — policy_options::hint; a policy reads
/// sibling_work only with policy_options::sibling):
enum class device_feature : std::uint8_t {
  load,            ///< total compute already assigned to d
  pred_compute,    ///< compute of v's predecessors on d
  pred_start,      ///< earliest start of v's predecessors on d (0 if none)
  pred_end,        ///< latest end of v's predecessors on d (0 if none)
  est,             ///< v's earliest start time on d, transfers included (cp's EST)
  est_gap,         ///< est − the minimum est over valid devices (0 on cp's choices)
  est_rank,        ///< fraction of valid devices with a strictly smaller est (0 on cp's choices)
  hint_same,       ///< compute on d of the ops whose hint device is v's hint device
  hint_match,      ///< 1: d is the image of v's hint device t; neither matched yet (and d
                   ///< interchangeable with t): 0.5 when d is t itself, else 0.25; 0 otherwise
                   ///< (the matching as for a teacher, below)
  sibling_work,    ///< compute on d of v's siblings: the other producers of v's consumers, once
                   ///< per shared consumer (policy_options::sibling)
};
inline constexpr int device_feature_count = 10;
/// The columns a policy without a hint reads (the first ones).
inline constexpr int device_feature_count_no_hint = 7;

/// Columns of SEL's dynamic features for a ready op v (policy_options::dynamic_sel; an addition to
/// the paper, whose SEL reads only static inputs), in order. Times are divided by the graph's
/// critical-path length; the two lags are relative to the ready set, so the op that could start
/// first has 0:
enum class sel_feature : std::uint8_t {
  est_lag,       ///< v's earliest start on its best valid device (cp's EST, transfers included)
                 ///< − the smallest such EST over the ready set
  ready_lag,     ///< the latest end of v's producers (0 for none) − the smallest over the ready set
  follows_last,  ///< 1 when v consumes the output of the op assigned just before, else 0
};
inline constexpr int sel_feature_count = 3;

class assignment_env {
 public:
  /// The graph, cluster, cost model and features must outlive the environment. With
  /// `respect_memory`, a device is invalid for v when v's output would exceed its memory (cp's rule).
  /// With `transfers` (planned transfers: `sim_options::transfers`), a predecessor's output reaches a
  /// device when the planner's plan for it would deliver it there (the estimate of cp/heft's
  /// planned-aware EST, docs/placers.md), not after the per-edge transfer time. With `teacher` (a
  /// placement of g on c — problem::with_teacher runs check_placement; here only its sizes and indices are checked; it must outlive the
  /// environment) the teacher is that placement, not cp:
  /// its ops are the ready ops next on their teacher device in the placement's order (every op
  /// before them on that device assigned: any of them keeps each device's order; when none is, the
  /// ready op earliest in the order; cp's tie set when the placement has no order), its device the
  /// placement's up to a relabelling of interchangeable devices (same kind, FLOP/s
  /// and memory), fixed as the episode goes: the first op assigned from teacher device t to a
  /// device d (both not yet matched) matches t to d; the label of an op of an unmatched t is t
  /// itself while no other teacher device was matched to it (interchangeable devices may still
  /// differ in their links: the identity is the faithful copy), else any unmatched interchangeable
  /// device. Where no such device is valid, cp's devices.
  /// With `teacher_symmetry` (find_symmetry of g; it must outlive the environment) the teacher's ops
  /// are also relabelled: an op of an interchangeable part whose part is not matched yet stands for
  /// its counterpart in any unmatched teacher part of its kind (the labels are the union over them:
  /// SEL's when any counterpart is next on its teacher device, PLC's every counterpart's device),
  /// and the part's first assigned op matches the part to one of those, scored: 2 when the chosen
  /// device is among that counterpart's label devices, 2 more when the counterpart is next in the
  /// order, 1 more for the part itself (the faithful copy, as for devices); ties go to the counterpart
  /// earliest in the order (without an order: the lowest part). After that the part's ops stand for
  /// that part's. Without it every op stands for itself.
  /// With `hint` (a placement of g on c, e.g. metis's; it must outlive the environment), the two
  /// hint columns of the device features describe it: its devices are matched to the episode's as
  /// the teacher's are (the first op of an unmatched hint device assigned to an unmatched
  /// interchangeable device matches the two), so a policy reading them can follow a partition
  /// whatever the devices are called, or leave it.
  assignment_env(const graph& g, const cluster& c, const cost_model& cm, const graph_features& f,
                 bool respect_memory = true, transfer_planner* transfers = nullptr,
                 const placement* teacher = nullptr, const placement* hint = nullptr,
                 const op_symmetry* teacher_symmetry = nullptr);
  ~assignment_env();
  assignment_env(const assignment_env&) = delete;
  assignment_env& operator=(const assignment_env&) = delete;

  bool done() const noexcept { return steps_ == g_.size(); }
  std::size_t steps() const noexcept { return steps_; }
  /// The ready ops, ascending.
  std::span<const op_index> ready() const noexcept { return ready_; }

  /// Fills out[d * device_feature_count + k] for op v (must be ready) and valid[d]; returns the
  /// number of valid devices (0 means the op fits nowhere: errc::infeasible on assign).
  std::size_t device_features(op_index v, std::span<float> out, std::span<std::uint8_t> valid);

  /// Fills out[i * sel_feature_count + k] for the i-th op of ready() (sel_feature above).
  void sel_features(std::span<float> out);

  /// The teacher's choice set now: the ready ops of maximum bottom level (cp ties, relative 1e-9);
  /// with a teacher placement that has an order, the ready ops next on their teacher devices.
  void teacher_ops(std::vector<op_index>& out) const;
  /// The teacher's devices for v: the valid devices of minimum EST (call device_features(v) first);
  /// with a teacher placement, its device for v when that one is valid.
  void teacher_devices(op_index v, std::vector<device_index>& out) const;
  /// cp's rules alone, whatever the teacher: the ready ops of maximum bottom level, and the valid
  /// devices of minimum EST for v (after device_features(v)). An ablated head follows these in
  /// training as when it places (a teacher placement's choices there trained SEL against devices
  /// it never met when placing).
  void cp_ops(std::vector<op_index>& out) const;
  void cp_devices(op_index v, std::vector<device_index>& out) const;

  /// Assigns ready op v to device d (throws errc::bad_argument if v is not ready or d invalid).
  void assign(op_index v, device_index d);

  /// The placement so far: device per assigned op (others 0), order = the assignment order.
  const placement& result() const noexcept { return p_; }
  /// End time of the list schedule so far (the teacher's own makespan estimate).
  double schedule_end() const noexcept { return schedule_end_; }

 private:
  void compute_est(op_index v);
  /// Whether v's output fits in d's memory now (always without respect_memory).
  bool fits(op_index v, device_index d) const;
  /// The smallest EST over the devices compute_est's op fits on (+inf when none).
  double min_fitting_est() const;
  /// The smallest EST of v over the devices it fits on (over all devices when it fits on none).
  double best_est(op_index v);

  const graph& g_;
  const cluster& c_;
  const cost_model& cm_;
  const graph_features& f_;
  bool respect_memory_;
  std::size_t steps_ = 0;
  std::vector<op_index> ready_;
  std::vector<std::uint32_t> missing_;
  std::vector<double> start_, end_, avail_, load_, mem_used_;
  std::vector<double> est_;        // per device, for est_op_
  std::vector<std::uint8_t> fits_; // per device, for est_op_
  op_index est_op_ = static_cast<op_index>(-1);
  placement p_;
  double schedule_end_ = 0;
  std::unique_ptr<doppler::detail::arrival_estimator> arrivals_;  // planned transfers only
  const placement* teacher_ = nullptr;  // null: cp's rule
  std::vector<std::uint32_t> teacher_rank_;  // position in teacher_->order (empty: no order)
  std::vector<std::vector<op_index>> teacher_queue_;  // per teacher device, its ops in order
  std::vector<std::size_t> teacher_next_;  // per teacher device, its first op not yet done in the queue
  std::vector<std::uint8_t> assigned_;  // per op: assigned yet
  std::vector<std::uint8_t> teacher_done_;  // per teacher op: the episode op standing for it assigned
  const op_symmetry* sym_ = nullptr;  // with a teacher: its interchangeable parts (null: none)
  std::vector<int> part_image_, part_preimage_;  // episode part -> teacher part, and back (-1: none)
  /// The teacher ops episode op v may stand for, each with its teacher part (−1: fixed): itself
  /// when fixed, its counterpart in its part's match, else its counterparts in every unmatched
  /// teacher part of its kind.
  void stand_ins(op_index v, std::vector<std::pair<op_index, int>>& out) const;
  mutable std::vector<std::pair<op_index, int>> stand_in_buf_;
  /// The teacher's valid devices for teacher device t, appended to out where not there yet.
  void devices_for(device_index t, std::vector<device_index>& out) const;
  bool next_in_order(op_index w) const;  ///< teacher op w is next on its teacher device
  /// A placement's devices matched to the episode's as it goes (-1: not yet).
  struct matching {
    std::vector<int> image, preimage;  // placement device -> episode device, and back
  };
  matching teacher_match_;
  const placement* hint_ = nullptr;  // null: no hint columns
  matching hint_match_;
  std::vector<double> hint_work_;  // [hint device t][device d]: compute of ops with hint t on d
  std::vector<double> sibling_;  // per device: sibling_work of device_features' op
  std::vector<double> sel_times_;  // sel_features' scratch
  std::vector<device_index> by_avail_;  // sel_features' scratch: devices by time available
  bool interchangeable(device_index a, device_index b) const;
  /// The first op of an unmatched placement device t assigned to an unmatched interchangeable d matches them.
  void match(matching& m, device_index t, device_index d) const;
};

}  // namespace doppler::learner
