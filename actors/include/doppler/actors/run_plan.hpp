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

/// Per-device compact buffer slots, shared read-only by every device of a plan (built by finish_plan,
/// reused with the plan's other tables): device d indexes only the ops it holds — its own ops (home
/// slots 0 .. home_n[d]-1, in op order) and the outputs copied to it (the following slots) — instead
/// of arrays the size of the graph on every device. The per-op path reads one record per op and flat
/// arrays laid out in the same order, so the ops of one device are adjacent in memory.
struct slot_tables {
  /// One op placed on a device, at home[hbase[d] + home slot].
  struct home_op {
    op_index op;
    std::uint32_t rank;          ///< run_plan::rank[op]
    std::uint32_t uses;          ///< run_plan::uses_home[op]
    std::uint32_t in_begin;      ///< in_slot[in_begin .. + n_in): its inputs' slots, argument order
    std::uint32_t pred_begin;    ///< pred_slot[pred_begin .. + n_pred): distinct predecessors' slots
    std::uint32_t succ_begin;    ///< home_succ[succ_begin .. + n_succ): its consumers' home slots here
    std::uint32_t remote_begin;  ///< run_plan::remote_dest[remote_begin .. + n_remote)
    std::uint32_t n_in, n_pred, n_succ, n_remote;
  };
  std::vector<std::uint32_t> base;        ///< base[d] .. base[d+1]: device d's slots in slot_op
  std::vector<std::uint32_t> hbase;       ///< hbase[d] .. hbase[d+1]: device d's records in home
  std::vector<home_op> home;
  std::vector<op_index> slot_op;          ///< slot_op[base[d] + s]: the op held in slot s of device d
  std::vector<std::uint8_t> slot_exit;    ///< slot_exit[base[d] + s]: that op is an exit of the graph
  std::vector<std::uint32_t> pending0;    ///< pending0[hbase[d] + s]: home slot s's predecessors
  std::vector<std::uint32_t> home_slot;   ///< home_slot[op]: op's slot on its own device
  std::vector<std::uint32_t> remote_slot; ///< parallel to run_plan::remote_dest: op's slot there
  std::vector<std::uint32_t> remote_uses; ///< parallel to run_plan::remote_dest: op's consumers there
  std::vector<std::uint32_t> in_slot;
  std::vector<std::uint32_t> pred_slot;
  std::vector<std::uint32_t> home_succ;
  /// remote_succ[rs_off[e] .. rs_off[e+1]), e an index into run_plan::remote_dest: the home slots of
  /// the op's consumers on that destination device.
  std::vector<std::uint32_t> rs_off;
  std::vector<std::uint32_t> remote_succ;

  std::uint32_t count(device_index d) const noexcept { return base[d + 1] - base[d]; }
  std::uint32_t home_n(device_index d) const noexcept { return hbase[d + 1] - hbase[d]; }
};

struct run_plan {
  std::uint64_t engine = 0;                 ///< the engine's random id (a worker's devices take turns between engines)
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
  /// op_bytes[op]: the graph's size of op's output (a flat copy: the dispatcher reads it per transfer
  /// instead of the op records).
  std::vector<double> op_bytes;
  /// Planned transfers: transfer_plan[op] moves op's output to exactly remote_dests(op) (null, or an
  /// empty vector: one direct copy per destination). Set after finish_plan (engine, from the comm
  /// planner); process-local, so runs with devices in other processes copy directly.
  std::vector<std::shared_ptr<const transfer_plan>> transfer_plans;
  /// The devices' compact buffer slots (see slot_tables).
  std::shared_ptr<const slot_tables> slots;

  std::size_t size() const noexcept { return g->size(); }
  device_index device_of(op_index i) const noexcept { return p.device[i]; }
  std::span<const device_index> remote_dests(op_index i) const noexcept {
    return {remote_dest.data() + remote_off[i], remote_dest.data() + remote_off[i + 1]};
  }
  std::span<const op_index> inputs(op_index i) const noexcept {
    return {in_op.data() + in_off[i], in_op.data() + in_off[i + 1]};
  }
  /// Op i's slot on device d (its own device, or a destination of its output), or UINT32_MAX.
  std::uint32_t slot_on(op_index i, device_index d) const noexcept {
    if (p.device[i] == d) return slots->home_slot[i];
    for (std::uint32_t e = remote_off[i]; e < remote_off[i + 1]; ++e)
      if (remote_dest[e] == d) return slots->remote_slot[e];
    return UINT32_MAX;
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
