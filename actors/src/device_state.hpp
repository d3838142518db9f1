#pragma once
// The device actor's state and the helpers its two source files share (internal to doppler_actors):
// device.cpp (buffers, kernels, peer copies, the behavior) and device_relay.cpp (planned transfers).

#include <doppler/actors/device.hpp>
#include <doppler/actors/run_plan.hpp>

#include "worker_pool.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace doppler::actors::device_detail {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// An empty tensor that lives as long as the process (never freed), referenced by a shared_ptr that
/// owns nothing (the aliasing constructor with an empty owner): its copies are plain pointer copies.
inline std::shared_ptr<const tensor> immortal_empty() {
  static const tensor* const t = new tensor();
  return std::shared_ptr<const tensor>(std::shared_ptr<const tensor>(), t);
}

/// Emulated links: a copy that started at `t0_ns` takes at least `floor_s` seconds (0: no floor).
inline void hold_until(std::int64_t t0_ns, double floor_s) {
  if (floor_s > 0)
    std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t0_ns)) +
                                  std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(floor_s)));
}

/// Completions of the worker threads, handed to the device actor in batches: a worker appends its
/// kernel_done and rings the doorbell (one kernel_done_msg with op = doorbell_op) only when the box was
/// empty, so under load one message carries every kernel that finished meanwhile.
inline constexpr op_index doorbell_op = UINT32_MAX;
struct completion_box {
  std::mutex m;
  std::vector<kernel_done_msg> items;
  /// Appends; true when the box was empty (the caller rings the doorbell).
  bool put(kernel_done_msg&& k) {
    std::lock_guard lock(m);
    items.push_back(std::move(k));
    return items.size() == 1;
  }
  void take(std::vector<kernel_done_msg>& out) {
    out.clear();
    std::lock_guard lock(m);
    out.swap(items);
  }
};

struct device_state {
  device_options opt;
  std::shared_ptr<completion_box> box = std::make_shared<completion_box>();
  std::vector<kernel_done_msg> taken;  // the batch being handled (reused)
  std::unique_ptr<worker_pool> streams;  // kernels
  std::unique_ptr<worker_pool> copier;   // received tensors → own buffers
  bool resident = false;                 // the backend keeps outputs in device memory (backend.hpp)

  // ---- the current run ----
  std::shared_ptr<const run_plan> plan;
  std::uint64_t run = 0;
  bool active = false;
  dispatcher_actor dispatcher;
  // ---- turns between engines (a worker's device serves one run at a time) ----
  std::uint64_t last_engine = 0;  // the engine of the current or last run from another process
  std::int64_t waiter_ns = 0;     // when another engine was last refused while a run held this device
  std::int64_t turn_ns = 0;       // when last_engine's turn began (its first run after another engine's)
  // Compact buffer slots (run_plan::slots): slot s holds op slot_op[base + s]'s output on this device;
  // home slots (this device's own ops) come first. The arrays keep their capacity between runs.
  const slot_tables* sl = nullptr;
  std::uint32_t base = 0;    // this device's first entry in the slot tables
  std::uint32_t home_n = 0;  // this device's home slots
  const slot_tables::home_op* recs = nullptr;  // recs[home slot]: that op's record
  // buf[slot]: that op's output held on this device; with a resident backend mem[slot] instead (its
  // device memory; mem is empty otherwise, so host backends' buffers stay one pointer per slot).
  std::vector<std::shared_ptr<const tensor>> buf;
  std::vector<std::shared_ptr<const device_memory>> mem;
  std::vector<std::uint32_t> refs;                 // uses left before buf[slot] can go
  std::uint64_t bytes = 0;
  std::vector<op_done_msg> done;  // completions not yet reported
  std::vector<transfer_done_msg> arrived;  // received copies not yet reported
  std::vector<const tensor*> ptrs;  // inline kernels' argument list (reused)
  /// Inline kernels' time stamps: the back-to-back inline ops of one burst are timed in groups of up
  /// to `clock_group` ops, one clock read per group; the ops of a group split its measured interval
  /// evenly, in the order they ran (their op_done entries wait at the end of `done` until it closes).
  static constexpr std::uint32_t clock_group = 8;
  std::int64_t group_t0 = 0;    // start of the open group
  std::size_t group_first = 0;  // its first entry in `done`
  std::uint32_t group_n = 0;    // its ops (0: none open)
  struct outbox {
    std::vector<op_index> ops;
    std::vector<tensor_ref> values;
  };
  std::vector<outbox> outgoing;  // per destination device: tensors not yet sent
  std::size_t outgoing_n = 0;    // entries in `outgoing`
  /// Device release (run_plan::device_release, wc): this device counts, for each of its own ops, the
  /// producers whose output is not yet in its buffers, and runs the op when that reaches 0.
  bool self_release = false;
  std::vector<std::uint32_t> pending;  // pending[home slot]: producers not yet in the buffers
  /// Inline backends: ops ready to run, a min-heap on (rank, home slot) — the placement's priority.
  std::vector<std::pair<std::uint32_t, op_index>> ready;
  /// The output of no-op kernels: one immortal empty tensor held without a control block, so that
  /// copying it (every no-op output, on every device thread) touches no reference count.
  std::shared_ptr<const tensor> empty = immortal_empty();
  /// Planned transfers arriving here (as a destination or a relay): this device's copy of the tensor,
  /// filled chunk by chunk, and how many chunks are in.
  struct incoming {
    std::shared_ptr<tensor> copy;  // host backends
    tensor_ref held;               // resident backends: the copy in this device's memory
    std::uint32_t got = 0;
    std::int64_t start_ns = 0;
  };
  std::unordered_map<op_index, incoming> receiving;

  static inline const char* name = "doppler.device";

  /// The output in slot s stays after its last use (an exit, or every own op with keep_outputs::all).
  bool keeps(std::uint32_t s) const {
    return plan->keep == keep_outputs::all ? s < home_n : sl->slot_exit[base + s] != 0;
  }
  /// Slot s holds an output.
  bool holds(std::uint32_t s) const { return s < buf.size() && (buf[s] || (resident && mem[s])); }
  /// The output in slot s (which holds one).
  tensor_ref value(std::uint32_t s) const { return tensor_ref{buf[s], resident ? mem[s] : nullptr}; }
  std::uint64_t value_bytes(std::uint32_t s) const { return buf[s] ? buf[s]->numel() * sizeof(float) : mem[s]->bytes(); }
  /// Op i's slot on this device (UINT32_MAX: none — neither placed here nor sent here).
  std::uint32_t slot_of(op_index i) const { return plan->slot_on(i, opt.index); }
  /// The index e into run_plan::remote_dest of op i's output coming to this device, or UINT32_MAX.
  std::uint32_t remote_entry(op_index i) const {
    for (std::uint32_t e = plan->remote_off[i]; e < plan->remote_off[i + 1]; ++e)
      if (plan->remote_dest[e] == opt.index) return e;
    return UINT32_MAX;
  }
  void store(std::uint32_t s, tensor_ref t, std::uint32_t uses) {
    if (s >= buf.size() || (uses == 0 && !keeps(s))) return;
    bytes += t.bytes();
    buf[s] = std::move(t.ptr);
    if (resident) mem[s] = std::move(t.mem);
    refs[s] = uses;
  }
  void release_use(std::uint32_t s) {
    if (s < refs.size() && refs[s] > 0 && --refs[s] == 0 && holds(s) && !keeps(s)) {
      bytes -= value_bytes(s);
      buf[s].reset();
      if (resident) mem[s].reset();
    }
  }
  void clear() {
    // The run is over: kernels of it still running here may stop (emulate's holds do).
    if (active && opt.kernels) opt.kernels->interrupt(opt.index);
    plan.reset();
    sl = nullptr;
    recs = nullptr;
    active = false;
    buf.clear();
    mem.clear();
    refs.clear();
    bytes = 0;
    if (streams) streams->drop_queued();
    self_release = false;
    pending.clear();
    ready.clear();
    for (auto& o : outgoing) o = {};
    outgoing_n = 0;
    done.clear();
    group_n = 0;
    arrived.clear();
    receiving.clear();
    dispatcher = nullptr;
  }
};

using device_pointer = device_actor::stateful_pointer<device_state>;

// device.cpp
/// Op i's output arrived here (remote_dest entry e): its consumers here count one producer less.
void release_remote_successors(device_pointer self, std::uint32_t e);

// device_relay.cpp: planned (chunked) transfers
/// Starts the planned transfer of op i's output (held here): the legs that leave the source. False
/// (after failing the op to the dispatcher) when this device does not hold it.
bool start_relay(device_pointer self, op_index i);
/// Chunk `leg` of op i's planned transfer arrived in `from` (the sender's copy): copy its range into
/// this device's copy (on the copy thread, or at once for inline backends), then forward and count.
void receive_chunk(device_pointer self, op_index i, std::uint32_t leg, tensor_ref from);
/// Chunk `leg` of op's planned transfer is in this device's copy: forward it along the legs that wait
/// for it, and once every chunk meant for this device is in, keep the tensor (a destination) and report.
void chunk_copied(device_pointer self, const chunk_copied_msg& m);

}  // namespace doppler::actors::device_detail
