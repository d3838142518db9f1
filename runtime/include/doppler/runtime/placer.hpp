#pragma once
/// Placers: one interface, chosen by name from one registry (StarPU-style). Every placer returns a
/// complete placement; those that model memory respect device memory and throw
/// `errc::infeasible` when the graph cannot fit.

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace doppler {

struct placer_options {
  std::uint64_t seed = 0;
  int budget = 2000;                 ///< search: simulator evaluations
  /// How `search` scores candidates (model, mode, streams); `sim.transfers` also makes cp's and heft's
  /// EST planned-aware (docs/placers.md, "Planned-aware EST").
  sim_options sim;
  bool respect_memory = true;
  std::function<void(double)> progress;  ///< optional: called with fraction done (0..1)
  /// search: start from this placement (its devices and order) instead of the best heuristic one,
  /// e.g. to refine a learned placement (`place --method search --start FILE`). Checked against the
  /// graph and cluster; must fit device memory when respect_memory.
  std::shared_ptr<const placement> start;
};

class placer {
 public:
  virtual ~placer() = default;
  virtual std::string_view name() const noexcept = 0;
  virtual placement place(const graph& g, const cluster& c, const cost_model& cm,
                          const placer_options& opt) = 0;
};

/// Names: single, round-robin, random, cp, heft, m-etf, metis, search.
std::vector<std::string> placer_names();
/// Whether `name` is one of placer_names().
bool is_placer(std::string_view name);
/// placer_names() as "single, round-robin, ..." (for error messages).
std::string placer_list();
std::string placer_description(std::string_view name);
/// Throws `errc::unknown_kind` listing the valid names.
std::unique_ptr<placer> make_placer(std::string_view name);

/// One decision of the critical-path teacher, with every choice that tied (the learner's imitation
/// phase trains on all of them).
struct cp_decision {
  op_index op = 0;
  device_index device = 0;
  std::vector<op_index> tied_ops;        ///< ready ops of the same (max) bottom level, `op` included
  std::vector<device_index> tied_devices;///< devices of the same (min) earliest start time, `device` included
};

/// The DOPPLER critical-path teacher exactly: ready set; select max bottom level; place on the device
/// of minimum earliest start time, EST = max(device available, max over preds of pred end + comm if on
/// another device); ties broken by an RNG seeded with `seed`. Fills `decisions` when given.
/// Bottom levels use `critical_path_costs`; docs/placers.md states every rule. With `respect_memory`
/// a device whose placed output bytes would exceed its memory is skipped (errc::infeasible when none
/// has room). With `transfers` (the `cp` placer passes `placer_options::sim.transfers`) the comm term
/// is the planned-aware arrival (docs/placers.md, "Planned-aware EST"); null = the per-edge time.
placement cp_place(const graph& g, const cluster& c, const cost_model& cm, std::uint64_t seed,
                   std::vector<cp_decision>* decisions = nullptr, bool respect_memory = true,
                   transfer_planner* transfers = nullptr);

/// The costs the list schedulers rank ops by: node[v] = v's op time on its fastest device;
/// edge[v] = the "comm of the source" (DOPPLER's edge feature): the mean, over ordered pairs of
/// distinct devices, of the uncontended transfer time of v's output (bytes / 1e10 on doppler-paper:N).
struct path_costs {
  std::vector<double> node, edge;
};
/// errc::bad_value naming the op and device when an op's time on any device is not finite.
path_costs critical_path_costs(const graph& g, const cluster& c, const cost_model& cm);

/// A topological order that, among ready ops, prefers larger `priority` (then lower index):
/// the priority order placers store in `placement::order`.
std::vector<op_index> priority_topo_order(const graph& g, std::span<const double> priority);

}  // namespace doppler
