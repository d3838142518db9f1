#pragma once
/// The immutable plan of one run, shared (read-only) by the dispatcher, the devices and their worker
/// threads: the graph, the placement, the device handles and the tables both sides precompute once.

#include <doppler/actors/backend.hpp>
#include <doppler/actors/fwd.hpp>
#include <doppler/actors/protocol.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace doppler::actors {

struct run_plan {
  std::uint64_t run = 0;                    ///< run id; messages of other runs are dropped
  std::shared_ptr<const graph> g;
  std::shared_ptr<const cluster> c;
  placement p;
  std::vector<device_actor> devices;        ///< one handle per cluster device
  std::vector<std::string> where;           ///< per device: "" (this process) or "worker HOST:PORT"
  exec_mode mode = exec_mode::wc;
  std::uint64_t seed = 0;                   ///< fills inputs (and synthetic outputs)
  keep_outputs keep = keep_outputs::exits;
  bool record_trace = true;
  std::chrono::milliseconds timeout{60000}; ///< the run fails when it is not done by then
  /// wc only: each device holds the dependency counters of its own ops, runs an op the moment its last
  /// input is in its buffers and sends outputs to the consuming devices itself; the dispatcher only
  /// starts the entries and counts completions. false: the dispatcher releases every op (`execute`)
  /// and orders every transfer (`send` / `relay`), as bsp always does.
  bool device_release = true;

  std::vector<std::uint32_t> rank;          ///< rank[op]: position in the priority order (lower first)
  /// remote_dest[off[op] .. off[op+1]): distinct devices ≠ p.device[op] that consume op's output.
  std::vector<std::uint32_t> remote_off;
  std::vector<device_index> remote_dest;
  /// in_op[in_off[op] .. in_off[op+1]): op's inputs in argument order (a copy of graph::op::inputs in
  /// one flat array: the device's per-op path reads it instead of the 232-byte op records, which
  /// miss the cache on large graphs).
  std::vector<std::uint32_t> in_off;
  std::vector<op_index> in_op;
  /// uses_home[op]: consumers of op on its own device + remote_dests(op).size() (the uses of its
  /// output in its device's buffers).
  std::vector<std::uint32_t> uses_home;
  /// Planned transfers: transfer_plan[op] moves op's output to exactly remote_dests(op) (null, or an
  /// empty vector: one direct copy per destination). Set after finish_plan (engine, from the comm
  /// planner); process-local, so runs with devices in other processes copy directly.
  std::vector<std::shared_ptr<const transfer_plan>> transfer_plans;

  std::size_t size() const noexcept { return g->size(); }
  device_index device_of(op_index i) const noexcept { return p.device[i]; }
  std::span<const device_index> remote_dests(op_index i) const noexcept {
    return {remote_dest.data() + remote_off[i], remote_dest.data() + remote_off[i + 1]};
  }
  std::span<const op_index> inputs(op_index i) const noexcept {
    return {in_op.data() + in_off[i], in_op.data() + in_off[i + 1]};
  }
  /// Distinct consumers of op i placed on device d.
  std::uint32_t consumers_on(op_index i, device_index d) const noexcept;
  bool is_exit(op_index i) const noexcept { return g->succs(i).empty(); }
  /// Devices release their own ops (wc with device_release).
  bool released_by_devices() const noexcept { return mode == exec_mode::wc && device_release; }
  /// The plan for op's output, or nullptr (direct copies).
  const transfer_plan* planned(op_index i) const noexcept {
    return transfer_plans.empty() ? nullptr : transfer_plans[i].get();
  }
};

/// Builds the tables of a plan whose graph, cluster, placement and devices are set (checks the
/// placement; throws `doppler::error` naming the op when it is invalid). With `previous`, a finished
/// plan of the same graph, cluster and placement (the same objects and equal placement vectors: a
/// repeated run), its tables are copied instead of computed.
void finish_plan(run_plan& plan, const run_plan* previous = nullptr);

/// The plan as data for a device in another process (graph and cluster as JSON text).
plan_text to_text(const run_plan& plan);
/// Rebuilds a plan from its text form (parses and checks everything; throws `doppler::error`).
std::shared_ptr<run_plan> from_text(const plan_text& t);

}  // namespace doppler::actors
