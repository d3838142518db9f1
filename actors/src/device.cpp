// The device actor (protocol.hpp): buffers, worker threads with a priority ready queue, peer copies.

#include "device_state.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <utility>

namespace doppler::actors {
namespace device_detail {
namespace {

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
}  // namespace

/// Op i's output arrived here (remote_dest entry e): its consumers here count one producer less.
void release_remote_successors(device_pointer self, std::uint32_t e) {
  const auto& t = *self->state.sl;
  release_successors(self, t.remote_succ.data() + t.rs_off[e], t.remote_succ.data() + t.rs_off[e + 1]);
}

namespace {

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

/// The end of every handler — also of those that drop a stale message (an older run's, another
/// engine's) or take a down message: flush_out and flush_done hold batches back while the mailbox is
/// not empty, counting on the handler of the next message to send them. A handler that skipped this
/// left a finished op unreported whenever a stale message happened to be next, and the run hung until
/// its timeout (seen over a worker: the previous run's dispatcher's down message arrives late).
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

/// Turns between engines on a worker's device: after `turn_quantum_ns` of runs of one engine, the
/// device refuses its next run while another engine was refused within the last `turn_window_ns`
/// (longer than the longest back-off between an engine's tries, engine.cpp's busy_backoff: 75 ms),
/// so that one waits at most about a quantum and a turn costs the devices one back-off of idling.
constexpr std::int64_t turn_quantum_ns = 200'000'000;
constexpr std::int64_t turn_window_ns = 250'000'000;

/// Why device `self` refuses a run of `engine` from another process now ("": it does not). A worker's
/// device serves one run at a time: another engine's run is refused while this one's dispatcher lives
/// (its `end`, or its down message when that engine goes away, frees the device). Engines take turns:
/// one refused while a run held the device is waiting (it asks again within 75 ms, engine.cpp), so the
/// engine of that run yields to it once its turn is a quantum long. `own_run`: the request comes from
/// the dispatcher of the run the device serves.
std::string turn_refusal(device_pointer self, std::uint64_t engine, bool own_run) {
  auto& st = self->state;
  const auto now = now_ns();
  if (st.active && st.dispatcher && !own_run) {
    if (engine != st.last_engine) st.waiter_ns = now;
    return "device busy: it is serving a run of another engine (a worker serves one run at a time)";
  }
  if (engine == st.last_engine && st.waiter_ns != 0 && now - st.waiter_ns < turn_window_ns &&
      now - st.turn_ns >= turn_quantum_ns)
    return "device busy: another engine is waiting for it (engines take turns on a worker's devices)";
  return {};
}

device_actor::behavior_type device_impl(device_pointer self, device_options opt) {
  self->state.opt = std::move(opt);
  self->state.resident = self->state.opt.kernels->resident();
  self->set_down_handler([=](caf::down_msg& dm) {  // the dispatcher of a remote run is gone
    auto& st = self->state;
    if (st.dispatcher && dm.source == st.dispatcher.address()) return st.clear();
    settle(self);  // an earlier run's dispatcher: the current run's batches may be waiting on this message
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
        auto& st = self->state;
        bool own = st.dispatcher && self->current_sender() == caf::actor_cast<caf::strong_actor_ptr>(st.dispatcher);
        if (auto why = turn_refusal(self, text.engine, own); !why.empty()) {
          settle(self);
          return caf::make_error(device_busy, std::move(why));
        }
        if (text.engine != st.last_engine) {  // a new engine's turn: nobody waits now
          st.waiter_ns = 0;
          st.turn_ns = now_ns();
        }
        st.last_engine = text.engine;
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
      [=](probe_atom, std::uint64_t engine) {
        auto why = turn_refusal(self, engine, false);
        settle(self);
        return why;
      },
      [=](execute_atom, std::uint64_t run, std::vector<op_index>& ops) {
        auto& st = self->state;
        if (!st.active || run != st.run) return settle(self);
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
        if (!st.active || run != st.run) return settle(self);
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
        if (!st.active || run != st.run) return settle(self);
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
        if (!st.active || run != st.run) return settle(self);
        for (op_index i : ops)
          if (!start_relay(self, i)) break;
        settle(self);
      },
      [=](chunk_atom, std::uint64_t run, op_index i, std::uint32_t leg, tensor_ref& from) {
        auto& st = self->state;
        if (!st.active || run != st.run || !from) return settle(self);
        receive_chunk(self, i, leg, std::move(from));
        settle(self);
      },
      [=](chunk_copied_msg& m) {
        auto& st = self->state;
        if (!st.active || m.run != st.run) return settle(self);
        chunk_copied(self, m);
        settle(self);
      },
      [=](kernel_done_msg& m) {
        auto& st = self->state;
        if (m.op != doorbell_op) {  // a single completion sent directly
          if (!st.active || m.run != st.run || m.op >= st.plan->size() || st.plan->device_of(m.op) != st.opt.index)
            return settle(self);
          on_kernel_done(self, st.sl->home_slot[m.op], m.start_ns, m.end_ns, std::move(m.out));
          return settle(self);
        }
        st.box->take(st.taken);  // every completion since the doorbell rang (older runs' dropped)
        for (auto& k : st.taken)
          if (st.active && k.run == st.run && k.op < st.plan->size() && st.plan->device_of(k.op) == st.opt.index)
            on_kernel_done(self, st.sl->home_slot[k.op], k.start_ns, k.end_ns, std::move(k.out));
        st.taken.clear();
        settle(self);
      },
      [=](op_failed_msg& m) {
        auto& st = self->state;
        if (!st.active || m.run != st.run) return settle(self);
        m.device = st.opt.index;
        self->send(st.dispatcher, std::move(m));
        settle(self);
      },
      [=](copy_done_msg& m) {
        auto& st = self->state;
        if (!st.active || m.run != st.run || m.op >= st.plan->size()) return settle(self);
        copy_done(self, std::move(m));
        settle(self);
      },
      [=](collect_atom, std::uint64_t run) -> caf::result<std::vector<op_output>> {
        auto& st = self->state;
        std::vector<op_output> outs;
        if (!st.active || run != st.run) {
          settle(self);
          return outs;
        }
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
          return st.clear();
        settle(self);
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
}  // namespace device_detail

device_actor spawn_device(caf::actor_system& sys, device_options opt) {
  if (!opt.kernels) throw doppler::error(errc::bad_argument, "spawn_device: no backend");
  return sys.spawn(device_detail::device_impl, std::move(opt));
}

}  // namespace doppler::actors
