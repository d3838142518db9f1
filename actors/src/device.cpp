// The device actor (protocol.hpp): buffers, worker threads with a priority ready queue, peer copies.

#include <doppler/actors/device.hpp>
#include <doppler/actors/run_plan.hpp>

#include <doppler/runtime/error.hpp>

#include "worker_pool.hpp"

#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <span>
#include <unordered_map>
#include <thread>
#include <algorithm>
#include <utility>

namespace doppler::actors {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// An empty tensor that lives as long as the process (never freed), referenced by a shared_ptr that
/// owns nothing (the aliasing constructor with an empty owner): its copies are plain pointer copies.
std::shared_ptr<const tensor> immortal_empty() {
  static const tensor* const t = new tensor();
  return std::shared_ptr<const tensor>(std::shared_ptr<const tensor>(), t);
}

/// Emulated links: a copy that started at `t0_ns` takes at least `floor_s` seconds (0: no floor).
void hold_until(std::int64_t t0_ns, double floor_s) {
  if (floor_s > 0)
    std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t0_ns)) +
                                  std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(floor_s)));
}

/// Completions of the worker threads, handed to the device actor in batches: a worker appends its
/// kernel_done and rings the doorbell (one kernel_done_msg with op = doorbell_op) only when the box was
/// empty, so under load one message carries every kernel that finished meanwhile.
constexpr op_index doorbell_op = UINT32_MAX;
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

void make_ready(device_pointer self, std::uint32_t hs);
bool ship(device_pointer self, std::uint32_t hs);

/// Device release: an output is now in this device's buffers (computed here or copied from a peer);
/// every op of this device waiting for it (`succ`: their home slots) counts one producer less, and
/// runs at 0.
void release_successors(device_pointer self, const std::uint32_t* first, const std::uint32_t* last) {
  auto& st = self->state;
  for (; first != last; ++first) {
    auto& n = st.pending[*first];
    if (n > 0 && --n == 0) make_ready(self, *first);
  }
}
/// Op i's output arrived here (remote_dest entry e): its consumers here count one producer less.
void release_remote_successors(device_pointer self, std::uint32_t e) {
  const auto& t = *self->state.sl;
  release_successors(self, t.remote_succ.data() + t.rs_off[e], t.remote_succ.data() + t.rs_off[e + 1]);
}

/// Output of the kernel of home slot hs, finished: keep it while local consumers or transfers need it.
/// With device release the output also goes to the consuming devices and releases the local consumers.
void on_kernel_done(device_pointer self, std::uint32_t hs, std::int64_t start, std::int64_t end, tensor_ref out) {
  auto& st = self->state;
  const auto& r = st.recs[hs];
  if (out) st.store(hs, std::move(out), r.uses);
  st.done.push_back(op_done_msg{st.run, r.op, st.opt.index, start, end});
  if (st.self_release && ship(self, hs)) {
    const std::uint32_t* succ = st.sl->home_succ.data() + r.succ_begin;
    release_successors(self, succ, succ + r.n_succ);
  }
}

/// Closes the open group of inline ops (device_state::clock_group): reads the clock once and gives
/// each op of the group its share of [group_t0, now], in the order they ran. Returns now.
std::int64_t close_group(device_state& st) {
  const std::int64_t t1 = now_ns();
  if (st.group_n == 0) return t1;
  const std::int64_t t0 = st.group_t0, span = t1 - t0, n = st.group_n;
  for (std::int64_t k = 0; k < n; ++k) {
    auto& d = st.done[st.group_first + static_cast<std::size_t>(k)];
    d.start_ns = t0 + span * k / n;
    d.end_ns = t0 + span * (k + 1) / n;
  }
  st.group_n = 0;
  return t1;
}

/// Sends the buffered outgoing tensors, one `tensor` message per destination device, once the
/// mailbox is drained or many are waiting (or at once with `force`).
void flush_out(device_pointer self, bool force) {
  auto& st = self->state;
  if (st.outgoing_n == 0 || (!force && st.outgoing_n < 64 && !self->mailbox().empty())) return;
  for (device_index d = 0; d < st.outgoing.size(); ++d) {
    auto& o = st.outgoing[d];
    if (o.ops.empty()) continue;
    const std::size_t n = o.ops.size();
    self->send(st.plan->devices[d], tensor_atom::value, st.run, st.opt.index, std::move(o.ops), std::move(o.values));
    o = {};
    o.ops.reserve(n);  // the next batch is likely as large: one allocation instead of a growth sequence
    o.values.reserve(n);
  }
  st.outgoing_n = 0;
}

/// Reports the batched completions once the mailbox is drained (or the batch is large).
void flush_done(device_pointer self) {
  auto& st = self->state;
  if (st.group_n != 0) close_group(st);  // no completion leaves without its time stamps
  std::size_t n = st.done.size() + st.arrived.size();
  if (n == 0 || (n < 256 && !self->mailbox().empty())) return;
  const std::size_t nd = st.done.size(), na = st.arrived.size();
  if (nd != 0) self->send(st.dispatcher, std::move(st.done));
  if (na != 0) self->send(st.dispatcher, std::move(st.arrived));
  st.done = {};
  st.arrived = {};
  st.done.reserve(nd);  // the next batches are likely as large (one allocation, no growth copies)
  st.arrived.reserve(na);
}

/// Fails the op of home slot hs (to the dispatcher) when an input is missing from this device's buffers.
bool inputs_present(device_pointer self, std::uint32_t hs) {
  auto& st = self->state;
  const auto& r = st.recs[hs];
  const std::uint32_t* in = st.sl->in_slot.data() + r.in_begin;
  for (std::uint32_t k = 0; k < r.n_in; ++k)
    if (!st.holds(in[k])) {
      const auto& plan = *st.plan;
      op_index p = plan.in_op[plan.in_off[r.op] + k];
      self->send(st.dispatcher, op_failed_msg{st.run, r.op, st.opt.index,
                                              "input '" + (*plan.g)[p].id + "' is not in the device's buffers"});
      return false;
    }
  return true;
}

/// Runs the op of home slot hs (its inputs are here). `clock`, for inline kernels: the time the
/// previous group of inline ops of this burst ended (0: read the clock), updated when this op closes
/// a group (device_state::clock_group: one clock read per group of back-to-back inline ops).
void launch(device_pointer self, std::uint32_t hs, std::int64_t& clock) {
  auto& st = self->state;
  const auto& plan = *st.plan;
  if (!inputs_present(self, hs)) return;
  const slot_tables& tab = *st.sl;
  const auto& r = st.recs[hs];
  const op_index i = r.op;
  const std::uint32_t* in = tab.in_slot.data() + r.in_begin;
  auto release_inputs = [&] {  // one use of each distinct predecessor's output
    const std::uint32_t* p = tab.pred_slot.data() + r.pred_begin;
    for (std::uint32_t k = 0; k < r.n_pred; ++k) st.release_use(p[k]);
  };
  if (st.opt.kernels->runs_inline()) {
    // The per-op path of no-op kernels: no argument vector, no shared_ptr copies; the inputs' uses are
    // released once the kernel has returned (it reads them through plain pointers).
    st.ptrs.clear();
    for (std::uint32_t k = 0; k < r.n_in; ++k) st.ptrs.push_back(st.buf[in[k]].get());
    if (st.group_n == 0) {  // opens a group
      st.group_t0 = clock != 0 ? clock : now_ns();
      st.group_first = st.done.size();
    }
    clock = 0;
    try {
      tensor out = st.opt.kernels->execute_on(st.opt.index, *plan.g, i, st.ptrs, plan.seed);
      release_inputs();
      // start / end: set when the group closes (its op_done entry is the group's next one in `done`)
      on_kernel_done(self, hs, 0, 0, tensor_ref{out.empty() ? st.empty : std::make_shared<const tensor>(std::move(out)), nullptr});
      if (++st.group_n == device_state::clock_group) clock = close_group(st);
    } catch (const std::exception& e) {
      if (st.group_n != 0) close_group(st);
      release_inputs();
      self->send(st.dispatcher, op_failed_msg{st.run, i, st.opt.index, e.what()});
    }
    return;
  }
  std::vector<tensor_ref> args;
  args.reserve(r.n_in);
  for (std::uint32_t k = 0; k < r.n_in; ++k) args.push_back(st.value(in[k]));
  release_inputs();
  device_actor me = self;
  st.streams->post(plan.rank[i], [me, plan = st.plan, kernels = st.opt.kernels, args = std::move(args), i,
                    dev = st.opt.index, box = st.box, empty = st.empty, resident = st.resident] {
    try {
      std::int64_t start = 0, end = 0;
      tensor_ref out;
      if (resident) {  // the inputs and the output stay in the device's memory
        std::vector<const tensor_ref*> refs;
        refs.reserve(args.size());
        for (auto& a : args) refs.push_back(&a);
        start = now_ns();
        out = kernels->execute_held(dev, *plan->g, i, refs, plan->seed);
        end = now_ns();
      } else {
        std::vector<const tensor*> ptrs;
        ptrs.reserve(args.size());
        for (auto& a : args) ptrs.push_back(a.ptr.get());
        start = now_ns();
        tensor t = kernels->execute_on(dev, *plan->g, i, ptrs, plan->seed);
        end = now_ns();
        out.ptr = t.empty() ? empty : std::make_shared<const tensor>(std::move(t));
      }
      if (box->put(kernel_done_msg{plan->run, i, start, end, std::move(out)}))
        caf::anon_send(me, kernel_done_msg{plan->run, doorbell_op, 0, 0, tensor_ref{}});
    } catch (const std::exception& e) {
      caf::anon_send(me, op_failed_msg{plan->run, i, dev, e.what()});
    } catch (...) {
      caf::anon_send(me, op_failed_msg{plan->run, i, dev, "unknown exception"});
    }
  });
}

/// A copy of a peer's tensor is in this device's buffers: keep it for the local consumers, report.
void copy_done(device_pointer self, copy_done_msg m) {
  auto& st = self->state;
  std::uint64_t bytes = m.copy.bytes();
  std::uint32_t e = st.remote_entry(m.op);  // UINT32_MAX: not a consumer here, nothing to keep
  if (m.copy && e != UINT32_MAX) st.store(st.sl->remote_slot[e], std::move(m.copy), st.sl->remote_uses[e]);
  st.arrived.push_back(transfer_done_msg{m.run, m.op, m.src, st.opt.index, m.start_ns, m.end_ns, bytes});
  if (st.self_release && e != UINT32_MAX) release_remote_successors(self, e);
}

/// Elements [first, last) of chunk k of a tensor of n elements cut into `chunks` pieces.
std::pair<std::size_t, std::size_t> chunk_range(std::size_t n, std::uint32_t k, std::uint32_t chunks) {
  return {n * k / chunks, n * (k + 1) / chunks};
}

/// Sends leg `leg` of op's planned transfer: its chunk is in `from` (this device's copy).
void send_leg(device_pointer self, op_index i, std::uint32_t leg, const tensor_ref& from) {
  auto& st = self->state;
  const transfer_leg& l = st.plan->planned(i)->legs[leg];
  self->send(st.plan->devices[l.to], chunk_atom::value, st.run, i, leg, from);
}

/// Chunk `leg` of op's planned transfer is in this device's copy: forward it along the legs that wait
/// for it, and once every chunk meant for this device is in, keep the tensor (a destination) and report.
void chunk_copied(device_pointer self, const chunk_copied_msg& m) {
  auto& st = self->state;
  const transfer_plan& tp = *st.plan->planned(m.op);
  auto it = st.receiving.find(m.op);
  if (it == st.receiving.end()) return;
  auto& in = it->second;
  tensor_ref copy = st.resident ? in.held : tensor_ref{in.copy, nullptr};
  for (std::uint32_t k = 0; k < tp.legs.size(); ++k)
    if (tp.legs[k].after == static_cast<std::int32_t>(m.leg)) send_leg(self, m.op, k, copy);
  if (++in.got < tp.chunks_reaching(st.opt.index)) return;
  if (std::binary_search(tp.destinations.begin(), tp.destinations.end(), st.opt.index)) {
    std::uint64_t bytes = copy.bytes();
    std::uint32_t e = st.remote_entry(m.op);
    if (e != UINT32_MAX) st.store(st.sl->remote_slot[e], std::move(copy), st.sl->remote_uses[e]);
    st.arrived.push_back(transfer_done_msg{m.run, m.op, tp.source, st.opt.index, in.start_ns, m.end_ns, bytes});
    st.receiving.erase(it);
    if (st.self_release && e != UINT32_MAX) release_remote_successors(self, e);
    return;
  }
  st.receiving.erase(it);
}

/// Resident backends: chunk `leg` of op i's planned transfer arrived (`from`: the sender's copy, in
/// its device's memory); this device's copy thread copies the chunk's range into this device's copy
/// (allocated with the first chunk), device to device.
void receive_chunk_held(device_pointer self, op_index i, std::uint32_t leg, tensor_ref from, std::int64_t start) {
  auto& st = self->state;
  const transfer_plan& tp = *st.plan->planned(i);
  auto& in = st.receiving[i];
  if (!in.held) {
    try {
      in.held = st.opt.kernels->allocate_held(st.opt.index, from.shape());
    } catch (const std::exception& e) {
      self->send(st.dispatcher, op_failed_msg{st.run, i, st.opt.index, std::string("planned transfer: ") + e.what()});
      return;
    }
    in.start_ns = start;
  }
  auto [first, last] = chunk_range(from.numel(), tp.legs[leg].chunk, tp.chunks);
  const transfer_leg& l = tp.legs[leg];
  device_actor me = self;
  // As for host chunks: only this copy thread writes `held`, each range once.
  st.copier->post(0, [me, run = st.run, i, leg, first, last, from_dev = l.from, to_dev = l.to,
                      kernels = st.opt.kernels, chunk_bytes = (*st.plan->g)[i].bytes / tp.chunks,
                      src = std::move(from), dst = in.held] {
    auto t0 = now_ns();
    double floor_s = kernels->copy_seconds(from_dev, to_dev, chunk_bytes);
    try {
      if (last > first) kernels->copy_range_held(from_dev, to_dev, src, dst, first, last);
    } catch (const std::exception& e) {
      caf::anon_send(me, op_failed_msg{run, i, to_dev, "planned transfer, chunk from device " +
                                                           std::to_string(from_dev) + ": " + e.what()});
      return;
    }
    hold_until(t0, floor_s);
    caf::anon_send(me, chunk_copied_msg{run, i, leg, t0, now_ns()});
  });
}

/// Starts the planned transfer of op i's output (held here): the legs that leave the source.
bool start_relay(device_pointer self, op_index i) {
  auto& st = self->state;
  const transfer_plan* tp = st.plan->planned(i);
  const std::uint32_t s = st.slot_of(i);
  if (!st.holds(s) || !tp) {
    self->send(st.dispatcher, op_failed_msg{st.run, i, st.opt.index,
                                            "planned transfer of an output this device does not hold"});
    return false;
  }
  for (std::uint32_t k = 0; k < tp->legs.size(); ++k)
    if (tp->legs[k].after < 0) send_leg(self, i, k, st.value(s));
  for (std::size_t k = 0; k < tp->destinations.size(); ++k) st.release_use(s);
  return true;
}

/// Device release: op i just finished here; its output goes to every other device that consumes it
/// (buffered per destination, see flush_out; or along its planned transfer). False when it cannot.
bool ship(device_pointer self, std::uint32_t hs) {
  auto& st = self->state;
  const auto& plan = *st.plan;
  const auto& r = st.recs[hs];
  if (r.n_remote == 0) return true;
  const op_index i = r.op;
  if (plan.planned(i)) return start_relay(self, i);
  if (!st.holds(hs)) {
    self->send(st.dispatcher, op_failed_msg{st.run, i, st.opt.index, "output to send is not in the device's buffers"});
    return false;
  }
  for (std::uint32_t e = r.remote_begin; e < r.remote_begin + r.n_remote; ++e) {
    auto& o = st.outgoing[plan.remote_dest[e]];
    o.ops.push_back(i);
    o.values.push_back(st.value(hs));
    ++st.outgoing_n;
    st.release_use(hs);
  }
  return true;
}

/// An op is ready: inline backends queue it on the device's ready heap (run_ready runs it), the
/// others hand it to the worker pool (ordered by rank there).
void make_ready(device_pointer self, std::uint32_t hs) {
  auto& st = self->state;
  if (st.opt.kernels->runs_inline()) {
    st.ready.emplace_back(st.recs[hs].rank, hs);
    std::push_heap(st.ready.begin(), st.ready.end(), std::greater<>{});
    return;
  }
  std::int64_t clock = 0;
  launch(self, hs, clock);
}

/// Inline backends: runs the ready ops, highest priority first, including the ones they release;
/// outgoing tensors leave every 64 ops (when the mailbox is drained or many are waiting).
void run_ready(device_pointer self) {
  auto& st = self->state;
  std::int64_t clock = 0;
  std::uint32_t since = 0;
  while (!st.ready.empty() && st.active) {
    std::pop_heap(st.ready.begin(), st.ready.end(), std::greater<>{});
    std::uint32_t hs = st.ready.back().second;
    st.ready.pop_back();
    launch(self, hs, clock);
    if (++since == 64) {
      since = 0;
      if (st.group_n != 0) clock = close_group(st);
      flush_out(self, false);
      flush_done(self);
    }
  }
  if (st.group_n != 0) close_group(st);
}

/// The end of every handler that may have completed, received or released something.
void settle(device_pointer self) {
  auto& st = self->state;
  if (!st.active) return;
  if (!st.ready.empty()) run_ready(self);
  flush_out(self, false);
  flush_done(self);
}

/// Takes the plan of a new run: fresh buffers, the sender is the run's dispatcher.
void begin_run(device_pointer self, std::shared_ptr<const run_plan> plan) {
  auto& st = self->state;
  st.clear();
  st.run = plan->run;
  st.sl = plan->slots.get();
  const auto me = st.opt.index;
  st.base = st.sl->base[me];
  st.home_n = st.sl->home_n(me);
  st.recs = st.sl->home.data() + st.sl->hbase[me];
  st.buf.resize(st.sl->count(me));
  if (st.resident) st.mem.resize(st.sl->count(me));
  st.refs.assign(st.sl->count(me), 0);
  st.outgoing.resize(plan->devices.size());
  st.self_release = plan->released_by_devices();
  if (st.self_release) {
    const auto* p0 = st.sl->pending0.data() + st.sl->hbase[me];
    st.pending.assign(p0, p0 + st.home_n);
  }
  st.plan = std::move(plan);
  st.active = true;
  st.dispatcher = caf::actor_cast<dispatcher_actor>(self->current_sender());
}

device_actor::behavior_type device_impl(device_pointer self, device_options opt) {
  self->state.opt = std::move(opt);
  self->state.resident = self->state.opt.kernels->resident();
  self->set_down_handler([=](caf::down_msg& dm) {  // the dispatcher of a remote run is gone
    auto& st = self->state;
    if (st.dispatcher && dm.source == st.dispatcher.address()) st.clear();
  });
  if (!self->state.opt.kernels->runs_inline()) {
    self->state.streams = std::make_unique<worker_pool>(std::max(1, self->state.opt.streams));
    self->state.copier = std::make_unique<worker_pool>(1);
  }
  return {
      [=](begin_atom, const plan_ref& ref) {
        begin_run(self, ref.ptr);
        return caf::ok_atom::value;
      },
      [=](begin_atom, const plan_text& text) -> caf::result<caf::ok_atom> {
        // A worker's device serves one run at a time: another engine's run is refused while this one's
        // dispatcher lives (its `end`, or its down message when that engine goes away, frees the device).
        auto& st = self->state;
        if (st.active && st.dispatcher && self->current_sender() != caf::actor_cast<caf::strong_actor_ptr>(st.dispatcher))
          return caf::make_error(caf::sec::invalid_argument,
                                 "device busy: it is serving run " + std::to_string(st.run) +
                                     " of another engine (a worker serves one run at a time)");
        try {
          auto plan = from_text(text);
          // A worker's device learns its index in the run's cluster from its place in the plan
          // (an anonymous `cpu:N` worker device may stand for any device of the run).
          for (device_index d = 0; d < plan->devices.size(); ++d)
            if (plan->devices[d].address() == self->address()) self->state.opt.index = d;
          begin_run(self, std::move(plan));
          self->monitor(st.dispatcher);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::invalid_argument, std::string("device could not build the plan: ") + e.what());
        }
        return caf::ok_atom::value;
      },
      [=](execute_atom, std::uint64_t run, std::vector<op_index>& ops) {
        auto& st = self->state;
        if (!st.active || run != st.run) return;
        // The ready queue is the worker pool's, ordered by the placement's priority; `streams`
        // workers take from it. (Inline backends run the batch — and, with device release, what it
        // releases — in priority order now.)
        for (op_index i : ops)
          if (i >= st.plan->size() || st.plan->device_of(i) != st.opt.index) {  // no slot here for it
            self->send(st.dispatcher, op_failed_msg{run, i < st.plan->size() ? i : 0, st.opt.index,
                                                    "op is not placed on this device"});
            return;
          }
        if (st.opt.kernels->runs_inline()) {
          for (op_index i : ops) make_ready(self, st.sl->home_slot[i]);
        } else {
          const auto& rank = st.plan->rank;
          if (ops.size() > 1)
            std::sort(ops.begin(), ops.end(), [&](op_index a, op_index b) { return rank[a] < rank[b]; });
          std::int64_t clock = 0;
          for (op_index i : ops) launch(self, st.sl->home_slot[i], clock);
        }
        settle(self);
      },
      [=](send_atom, std::uint64_t run, const std::vector<op_index>& ops, const std::vector<device_index>& dsts) {
        auto& st = self->state;
        if (!st.active || run != st.run) return;
        // One `tensor` message per destination device with every output of this order going there.
        auto& out = st.outgoing;
        for (std::size_t k = 0; k < ops.size() && k < dsts.size(); ++k) {
          op_index i = ops[k];
          const std::uint32_t s = st.slot_of(i);
          if (!st.holds(s) || dsts[k] >= out.size()) {
            for (auto& o : out) o = {};
            st.outgoing_n = 0;
            self->send(st.dispatcher, op_failed_msg{run, i, st.opt.index,
                                                    "output to send is not in the device's buffers"});
            return;
          }
          out[dsts[k]].ops.push_back(i);
          out[dsts[k]].values.push_back(st.value(s));
          ++st.outgoing_n;
          st.release_use(s);
        }
        flush_out(self, true);
        flush_done(self);
      },
      [=](tensor_atom, std::uint64_t run, device_index src, std::vector<op_index>& ops, std::vector<tensor_ref>& ts) {
        auto& st = self->state;
        if (!st.active || run != st.run) return;
        const bool inline_copy = st.opt.kernels->runs_inline();
        const std::int64_t at = inline_copy ? now_ns() : 0;  // they arrived together
        for (std::size_t k = 0; k < ops.size() && k < ts.size(); ++k) {
          op_index i = ops[k];
          auto& t = ts[k];
          if (i >= st.plan->size() || (!inline_copy && !t)) {  // malformed: fail rather than wait forever
            self->send(st.dispatcher, op_failed_msg{run, i < st.plan->size() ? i : 0, st.opt.index,
                                                    "tensor message from device " + std::to_string(src) +
                                                        (i < st.plan->size() ? " carries no value" : " names no op")});
            return;
          }
          if (inline_copy) {  // null backend: nothing to copy, done at once
            if (t.ptr && t.ptr->empty()) t.ptr = st.empty;  // keep this device's own empty tensor
            copy_done(self, copy_done_msg{run, i, src, at, at, std::move(t)});
            continue;
          }
          device_actor me = self;
          st.copier->post(0, [me, run, i, src, dst = st.opt.index, kernels = st.opt.kernels,
                              bytes = (*st.plan->g)[i].bytes, in = std::move(t), resident = st.resident] {
            auto start = now_ns();
            double floor_s = kernels->copy_seconds(src, dst, bytes);
            tensor_ref copy;
            try {
              if (resident)  // into this device's memory: device to device, or host to device
                copy = kernels->copy_held(src, dst, in);
              else  // a real copy into this device's memory
                copy.ptr = std::make_shared<const tensor>(in.ptr ? *in.ptr : *in.host());
            } catch (const std::exception& e) {
              caf::anon_send(me, op_failed_msg{run, i, dst, std::string("copy from device ") + std::to_string(src) +
                                                                ": " + e.what()});
              return;
            }
            hold_until(start, floor_s);  // emulated link: the transfer takes at least its modeled time
            caf::anon_send(me, copy_done_msg{run, i, src, start, now_ns(), std::move(copy)});
          });
        }
        settle(self);
      },
      [=](relay_atom, std::uint64_t run, const std::vector<op_index>& ops) {
        auto& st = self->state;
        if (!st.active || run != st.run) return;
        for (op_index i : ops)
          if (!start_relay(self, i)) return;
        flush_done(self);
      },
      [=](chunk_atom, std::uint64_t run, op_index i, std::uint32_t leg, tensor_ref& from) {
        auto& st = self->state;
        if (!st.active || run != st.run || !from) return;
        const transfer_plan* tp = st.plan->planned(i);
        if (!tp || leg >= tp->legs.size()) return;
        auto& in = st.receiving[i];
        auto start = now_ns();
        if (st.resident) return receive_chunk_held(self, i, leg, std::move(from), start);
        if (!from.ptr) from.ptr = from.host();  // a host backend cuts chunks from host memory
        if (!in.copy) {
          in.copy = from.ptr->empty() ? std::make_shared<tensor>() : std::make_shared<tensor>(from.ptr->shape());
          in.start_ns = start;
        }
        auto [first, last] = chunk_range(from.ptr->numel(), tp->legs[leg].chunk, tp->chunks);
        if (st.opt.kernels->runs_inline()) {  // null backend: nothing worth a copy thread
          std::copy(from.ptr->data() + first, from.ptr->data() + last, in.copy->data() + first);
          chunk_copied(self, chunk_copied_msg{run, i, leg, start, now_ns()});
          return settle(self);
        }
        device_actor me = self;
        const transfer_leg& l = tp->legs[leg];
        // Only this device's copy thread writes `copy`, each range once; readers (the next legs) see a
        // range after its chunk_copied message, so no range is read while written.
        st.copier->post(0, [me, run, i, leg, first, last, from_dev = l.from, to_dev = l.to, kernels = st.opt.kernels,
                            chunk_bytes = (*st.plan->g)[i].bytes / tp->chunks, src = std::move(from.ptr),
                            dst = in.copy] {
          auto t0 = now_ns();
          double floor_s = kernels->copy_seconds(from_dev, to_dev, chunk_bytes);
          if (last > first) std::memcpy(dst->data() + first, src->data() + first, (last - first) * sizeof(float));
          hold_until(t0, floor_s);
          caf::anon_send(me, chunk_copied_msg{run, i, leg, t0, now_ns()});
        });
      },
      [=](chunk_copied_msg& m) {
        auto& st = self->state;
        if (!st.active || m.run != st.run) return;
        chunk_copied(self, m);
        settle(self);
      },
      [=](kernel_done_msg& m) {
        auto& st = self->state;
        if (m.op != doorbell_op) {  // a single completion sent directly
          if (!st.active || m.run != st.run || m.op >= st.plan->size() || st.plan->device_of(m.op) != st.opt.index) return;
          on_kernel_done(self, st.sl->home_slot[m.op], m.start_ns, m.end_ns, std::move(m.out));
          return settle(self);
        }
        st.box->take(st.taken);  // every completion since the doorbell rang (older runs' dropped)
        for (auto& k : st.taken)
          if (st.active && k.run == st.run) on_kernel_done(self, st.sl->home_slot[k.op], k.start_ns, k.end_ns, std::move(k.out));
        st.taken.clear();
        settle(self);
      },
      [=](op_failed_msg& m) {
        auto& st = self->state;
        if (!st.active || m.run != st.run) return;
        m.device = st.opt.index;
        self->send(st.dispatcher, std::move(m));
      },
      [=](copy_done_msg& m) {
        auto& st = self->state;
        if (!st.active || m.run != st.run) return;
        copy_done(self, std::move(m));
        settle(self);
      },
      [=](collect_atom, std::uint64_t run) -> caf::result<std::vector<op_output>> {
        auto& st = self->state;
        std::vector<op_output> outs;
        if (!st.active || run != st.run) return outs;
        flush_out(self, true);
        flush_done(self);
        for (std::uint32_t s = 0; s < st.buf.size(); ++s)  // home slots first, in op order
          if (st.holds(s) && st.keeps(s)) {
            const op_index i = st.sl->slot_op[st.base + s];
            try {  // the run's outputs go back in host memory (one copy per output held in device memory)
              outs.push_back(op_output{i, tensor_ref{st.value(s).host(), nullptr}});
            } catch (const std::exception& e) {
              return caf::make_error(caf::sec::runtime_error, "output of op '" + (*st.plan->g)[i].id +
                                                                  "' could not be copied to the host: " + e.what());
            }
          }
        return outs;
      },
      [=](end_atom, std::uint64_t run) {
        auto& st = self->state;
        // only the run's own dispatcher ends it (engines number their runs independently)
        if (run == st.run && self->current_sender() == caf::actor_cast<caf::strong_actor_ptr>(st.dispatcher))
          st.clear();
      },
      [=](bytes_atom) {
        if (self->state.active) {  // a query must not hold back completions
          flush_out(self, true);
          flush_done(self);
        }
        return self->state.bytes;
      },
  };
}

}  // namespace

device_actor spawn_device(caf::actor_system& sys, device_options opt) {
  if (!opt.kernels) throw doppler::error(errc::bad_argument, "spawn_device: no backend");
  return sys.spawn(device_impl, std::move(opt));
}

}  // namespace doppler::actors
