// The dispatcher of one run (protocol.hpp): entries, completions, the bsp barrier and (without device
// release) dependency counters and transfer orders, faults.

#include <doppler/actors/dispatcher.hpp>
#include <doppler/runtime/graph_algos.hpp>

#include <algorithm>
#include <chrono>
#include <optional>

namespace doppler::actors {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

enum class op_state : std::uint8_t { waiting, dispatched, done };

struct dispatcher_state {
  std::shared_ptr<const run_plan> plan;
  caf::typed_response_promise<run_report> promise;
  run_report report;
  std::vector<std::uint32_t> remaining;  // inputs not yet on the op's device
  std::vector<op_state> state;
  std::size_t ops_done = 0;
  /// Transfers announced by op_done and not yet reported done. Signed: with device release a
  /// destination's transfer_done may overtake its source's op_done.
  std::int64_t transfers_open = 0;
  std::int64_t t0 = 0;
  bool finished = false;
  // per-device op intervals (busy time = their union)
  std::vector<std::vector<std::pair<double, double>>> intervals;
  // bsp: ops by level, the level running, ops + transfers of it not yet done
  std::vector<std::uint32_t> level_off, level_ops;
  std::uint32_t level = 0;
  std::size_t outstanding = 0;
  std::vector<std::vector<op_index>> to_execute;  // per device: ready ops not yet sent
  std::vector<std::vector<op_index>> to_send_ops;  // per source device: transfers not yet ordered
  std::vector<std::vector<device_index>> to_send_dsts;
  std::vector<std::vector<op_index>> to_relay;     // per source device: planned transfers to start
  std::size_t buffered = 0;

  static inline const char* name = "doppler.dispatcher";

  double seconds(std::int64_t ns) const { return static_cast<double>(ns - t0) * 1e-9; }
};

using dispatcher_pointer = dispatcher_actor::stateful_pointer<dispatcher_state>;

/// How long a device may take to take the plan, or to hand back its outputs: 30 s, or the run's own
/// timeout where that is longer (a large plan that a slow link carries to a worker).
std::chrono::milliseconds handshake_limit(const run_plan& p) {
  return std::max<std::chrono::milliseconds>(std::chrono::seconds(30), p.timeout);
}

/// "cpu2", or "cpu2 (worker 127.0.0.1:4000)" for a device in another process.
std::string device_name(const run_plan& plan, device_index d) {
  std::string s = (*plan.c)[d].id;
  if (d < plan.where.size() && !plan.where[d].empty()) s += " (" + plan.where[d] + ")";
  return s;
}

std::string describe(const run_plan& plan, op_index i, device_index d) {
  return "op '" + (*plan.g)[i].id + "' (index " + std::to_string(i) + ") on device " + device_name(plan, d);
}

/// Ends the run: releases every device's buffers, answers, quits.
void finish(dispatcher_pointer self) {
  auto& st = self->state;
  st.finished = true;
  for (auto& d : st.plan->devices) self->send(d, end_atom::value, st.plan->run);
  st.promise.deliver(std::move(st.report));
  self->quit();
}

void fail(dispatcher_pointer self, op_index i, device_index d, const std::string& why) {
  auto& st = self->state;
  if (st.finished) return;
  st.report.ok = false;
  st.report.failed_op = i;
  st.report.failed_device = d;
  st.report.failure = describe(*st.plan, i, d) + ": " + why;
  st.report.outputs.clear();
  finish(self);
}

/// A failure that is no op's (a device that would not take the plan or hand over outputs).
void fail_run(dispatcher_pointer self, const std::string& why) {
  auto& st = self->state;
  if (st.finished) return;
  st.report.ok = false;
  st.report.failure = why;
  st.report.outputs.clear();
  finish(self);
}

/// The op to name when device d (or, with d = none, any device) fails or the run times out: the
/// highest-priority op that was released and is not done — with dispatcher release one it dispatched;
/// with device release (the dispatcher does not see releases) one whose producers all reported done.
/// nullopt: none.
constexpr device_index any_device = UINT32_MAX;
std::optional<op_index> running_op(const dispatcher_state& st, device_index d) {
  const auto& p = *st.plan;
  const bool devices_release = p.released_by_devices();
  op_index victim = 0;
  std::uint32_t best = UINT32_MAX;
  for (op_index i = 0; i < p.size(); ++i) {
    if (d != any_device && p.device_of(i) != d) continue;
    if (p.rank[i] >= best) continue;
    bool released = st.state[i] == op_state::dispatched;
    if (devices_release && st.state[i] == op_state::waiting) {
      released = true;
      for (op_index q : p.g->preds(i))
        if (st.state[q] != op_state::done) {
          released = false;
          break;
        }
    }
    if (released) best = p.rank[i], victim = i;
  }
  if (best == UINT32_MAX) return std::nullopt;
  return victim;
}

void dispatch(dispatcher_pointer self, op_index i) {
  auto& st = self->state;
  st.state[i] = op_state::dispatched;
  st.to_execute[st.plan->device_of(i)].push_back(i);
  ++st.buffered;
}

/// Sends the ready ops, one message per device, once the mailbox is drained (or many are waiting):
/// under load this batches, when idle every op goes out at once.
void flush(dispatcher_pointer self) {
  auto& st = self->state;
  if (st.buffered == 0 || st.finished || (st.buffered < 64 && !self->mailbox().empty())) return;
  for (device_index d = 0; d < st.to_execute.size(); ++d) {
    if (st.to_execute[d].empty()) continue;
    self->send(st.plan->devices[d], execute_atom::value, st.plan->run, std::move(st.to_execute[d]));
    st.to_execute[d] = {};
  }
  for (device_index d = 0; d < st.to_send_ops.size(); ++d) {
    if (st.to_send_ops[d].empty()) continue;
    self->send(st.plan->devices[d], send_atom::value, st.plan->run, std::move(st.to_send_ops[d]),
               std::move(st.to_send_dsts[d]));
    st.to_send_ops[d] = {};
    st.to_send_dsts[d] = {};
  }
  for (device_index d = 0; d < st.to_relay.size(); ++d) {
    if (st.to_relay[d].empty()) continue;
    self->send(st.plan->devices[d], relay_atom::value, st.plan->run, std::move(st.to_relay[d]));
    st.to_relay[d] = {};
  }
  st.buffered = 0;
}

/// In wc mode an op goes to its device the moment its last input is there.
void input_arrived(dispatcher_pointer self, op_index s) {
  auto& st = self->state;
  if (--st.remaining[s] == 0 && st.plan->mode == exec_mode::wc) dispatch(self, s);
}

void release_level(dispatcher_pointer self) {
  auto& st = self->state;
  st.outstanding = st.level_off[st.level + 1] - st.level_off[st.level];
  for (auto k = st.level_off[st.level]; k < st.level_off[st.level + 1]; ++k) {
    op_index i = st.level_ops[k];
    if (st.remaining[i] != 0) return fail(self, i, st.plan->device_of(i), "not ready at its bsp barrier");
    dispatch(self, i);
  }
}

void collect_and_finish(dispatcher_pointer self) {
  auto& st = self->state;
  auto& r = st.report;
  r.ok = true;
  const auto& c = *st.plan->c;
  r.busy.assign(c.device_count(), 0.0);
  for (std::size_t d = 0; d < st.intervals.size(); ++d) {
    auto& iv = st.intervals[d];
    if (!std::is_sorted(iv.begin(), iv.end())) std::sort(iv.begin(), iv.end());  // inline ops come in order
    double cover = 0, lo = 0, hi = -1;
    for (auto [a, b] : iv) {
      if (a > hi) {
        if (hi > lo) cover += hi - lo;
        lo = a;
        hi = b;
      } else {
        hi = std::max(hi, b);
      }
    }
    if (hi > lo) cover += hi - lo;
    r.busy[d] = cover;
  }
  if (!st.plan->record_trace) r.events.clear();
  auto pending = std::make_shared<std::size_t>(st.plan->devices.size());
  for (auto& d : st.plan->devices) {
    self->request(d, handshake_limit(*st.plan), collect_atom::value, st.plan->run)
        .then(
            [=](std::vector<op_output>& outs) {
              auto& rep = self->state.report;
              for (auto& o : outs) rep.outputs.push_back(std::move(o));
              if (--*pending == 0 && !self->state.finished) {
                std::sort(rep.outputs.begin(), rep.outputs.end(),
                          [](const op_output& a, const op_output& b) { return a.op < b.op; });
                finish(self);
              }
            },
            [=](caf::error& err) {
              fail_run(self, "collecting outputs failed: " + self->system().render(err));
            });
  }
}

void maybe_done(dispatcher_pointer self) {
  auto& st = self->state;
  if (st.finished) return;
  if (st.plan->mode == exec_mode::bsp && st.outstanding == 0 && st.level + 2 < st.level_off.size()) {
    ++st.level;
    release_level(self);
    return;
  }
  if (st.ops_done == st.plan->size() && st.transfers_open == 0) collect_and_finish(self);
}

void op_done(dispatcher_pointer self, const op_done_msg& m) {
  auto& st = self->state;
  const auto& p = *st.plan;
  op_index i = m.op;
  st.state[i] = op_state::done;
  ++st.ops_done;
  double a = st.seconds(m.start_ns), b = st.seconds(m.end_ns);
  st.report.makespan = std::max(st.report.makespan, b);
  st.intervals[m.device].emplace_back(a, b);
  if (p.record_trace)
    st.report.events.push_back(trace_event{trace_event::kind::op, i, m.device, 0, a, b});
  const bool devices_release = p.released_by_devices();
  if (!devices_release)
    for (op_index s : p.g->succs(i))
      if (p.device_of(s) == m.device) input_arrived(self, s);
  if (const transfer_plan* tp = p.planned(i)) {
    // One relay starts the whole planned transfer; each destination reports when it has every chunk.
    // The links carry what the plan says: every hop one chunk.
    const auto dests = p.remote_dests(i);
    st.transfers_open += static_cast<std::int64_t>(dests.size());
    if (p.mode == exec_mode::bsp) st.outstanding += dests.size();
    if (!devices_release) {  // with device release the source starts it itself
      st.to_relay[m.device].push_back(i);
      ++st.buffered;
    }
    const double chunk = (*p.g)[i].bytes / tp->chunks;
    for (const auto& h : tp->hops) st.report.link_bytes[h.link] += chunk;
    st.report.bytes_moved += static_cast<std::uint64_t>(chunk * static_cast<double>(tp->legs.size()));
    if (p.mode == exec_mode::bsp) --st.outstanding;
    return maybe_done(self);
  }
  if (devices_release) {  // the source sends its output to these devices itself
    st.transfers_open += static_cast<std::int64_t>(p.remote_dests(i).size());
    return maybe_done(self);
  }
  for (device_index dst : p.remote_dests(i)) {
    ++st.transfers_open;
    if (p.mode == exec_mode::bsp) ++st.outstanding;
    st.to_send_ops[m.device].push_back(i);
    st.to_send_dsts[m.device].push_back(dst);
    ++st.buffered;
  }
  if (p.mode == exec_mode::bsp) --st.outstanding;
  maybe_done(self);
}

void transfer_done(dispatcher_pointer self, const transfer_done_msg& m) {
  auto& st = self->state;
  const auto& p = *st.plan;
  --st.transfers_open;
  ++st.report.transfers;
  double a = st.seconds(m.start_ns), b = st.seconds(m.end_ns);
  st.report.makespan = std::max(st.report.makespan, b);
  const auto& rt = p.c->route_between(m.src, m.dst);
  if (!p.planned(m.op)) {  // planned transfers were counted hop by hop when they started
    // bytes as the graph sizes the tensor (what the simulator counts; an emulated device copies none)
    const double bytes = p.op_bytes[m.op];
    st.report.bytes_moved += static_cast<std::uint64_t>(bytes);
    for (link_index l : rt.links) st.report.link_bytes[l] += bytes;
  }
  if (p.record_trace)
    st.report.events.push_back(trace_event{trace_event::kind::transfer, m.op,
                                           rt.links.empty() ? 0u : rt.links.front(), m.dst, a, b});
  if (!p.released_by_devices())
    for (op_index s : p.g->succs(m.op))
      if (p.device_of(s) == m.dst) input_arrived(self, s);
  if (p.mode == exec_mode::bsp) --st.outstanding;
  maybe_done(self);
}

dispatcher_actor::behavior_type dispatcher_impl(dispatcher_pointer self,
                                                std::shared_ptr<const run_plan> plan) {
  auto& st0 = self->state;
  st0.plan = std::move(plan);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.finished) return;
    const auto& p = *st.plan;
    for (device_index d = 0; d < p.devices.size(); ++d) {
      if (p.devices[d].address() != dm.source) continue;
      // Name the op the device was running (the first released, not done, by priority).
      auto victim = running_op(st, d);
      bool remote = d < p.where.size() && !p.where[d].empty();
      bool lost = remote && dm.reason == caf::exit_reason::remote_link_unreachable;
      std::string why = lost ? "connection lost (" + self->system().render(dm.reason) + ")"
                               : "device actor died (" + self->system().render(dm.reason) + ")";
      if (!victim) {
        st.report.ok = false;
        st.report.failed_device = d;
        st.report.failed_op = 0;
        st.report.failure = "device " + device_name(p, d) + ": " + why + " with no op running";
        finish(self);
        return;
      }
      return fail(self, *victim, d, why);
    }
  });
  return {
      [=](run_atom) -> caf::typed_response_promise<run_report> {
        auto& st = self->state;
        st.promise = self->make_response_promise<run_report>();
        const auto& p = *st.plan;
        const auto& g = *p.g;
        std::size_t n = g.size();
        st.remaining.resize(n);
        st.state.assign(n, op_state::waiting);
        if (!p.released_by_devices())  // with device release the devices count
          for (op_index i = 0; i < n; ++i) st.remaining[i] = static_cast<std::uint32_t>(g.preds(i).size());
        st.intervals.assign(p.c->device_count(), {});
        {  // one interval per op: no reallocation on the per-op path
          std::vector<std::size_t> per_device(p.c->device_count(), 0);
          for (op_index i = 0; i < n; ++i) ++per_device[p.device_of(i)];
          for (std::size_t d = 0; d < per_device.size(); ++d) st.intervals[d].reserve(per_device[d]);
        }
        st.to_execute.assign(p.c->device_count(), {});
        st.to_send_ops.assign(p.c->device_count(), {});
        st.to_send_dsts.assign(p.c->device_count(), {});
        st.to_relay.assign(p.c->device_count(), {});
        st.report.link_bytes.assign(p.c->links().size(), 0.0);
        if (p.record_trace) st.report.events.reserve(n + p.remote_dest.size());
        for (auto& d : p.devices) self->monitor(d);
        // every device takes the plan first; then the clock starts and entries go out
        auto pending = std::make_shared<std::size_t>(p.devices.size());
        std::shared_ptr<plan_text> text;  // for devices in other processes, built once
        for (device_index di = 0; di < p.devices.size(); ++di) {
          const auto& d = p.devices[di];
          auto req = [&] {
            if (d.node() == self->node())
              return self->request(d, handshake_limit(p), begin_atom::value, plan_ref{st.plan});
            if (!text) text = std::make_shared<plan_text>(to_text(p));
            return self->request(d, handshake_limit(p), begin_atom::value, *text);
          }();
          std::move(req).then(
                  [=](caf::ok_atom) {
                    auto& s = self->state;
                    if (--*pending != 0 || s.finished) return;
                    s.t0 = now_ns();
                    self->delayed_send(self, s.plan->timeout, timeout_atom::value, s.plan->run);
                    if (s.plan->size() == 0) return collect_and_finish(self);
                    if (s.plan->mode == exec_mode::bsp) {
                      auto lv = levels(*s.plan->g);
                      std::uint32_t depth = 0;
                      for (auto l : lv) depth = std::max(depth, l + 1);
                      s.level_off.assign(depth + 1, 0);
                      for (auto l : lv) ++s.level_off[l + 1];
                      for (std::uint32_t l = 0; l < depth; ++l) s.level_off[l + 1] += s.level_off[l];
                      s.level_ops.resize(lv.size());
                      auto fill = s.level_off;
                      for (op_index i = 0; i < lv.size(); ++i) s.level_ops[fill[lv[i]]++] = i;
                      release_level(self);
                    } else {
                      // the entries; with device release the devices take it from there
                      const auto& gr = *s.plan->g;
                      for (op_index i = 0; i < s.plan->size(); ++i)
                        if (gr.preds(i).empty()) dispatch(self, i);
                    }
                    s.buffered = std::max<std::size_t>(s.buffered, 64);  // send now
                    flush(self);
                  },
                  [=](caf::error& err) {
                    auto& s = self->state;
                    if (s.finished) return;
                    s.report.failed_device = di;
                    s.report.devices_busy = err == device_busy;
                    fail_run(self, "device " + device_name(*s.plan, di) + " did not take the plan: " +
                                       self->system().render(err));
                  });
        }
        return st.promise;
      },
      [=](std::vector<op_done_msg>& batch) {
        for (auto& m : batch) {
          auto& st = self->state;
          if (st.finished || m.run != st.plan->run) return;
          op_done(self, m);
        }
        flush(self);
      },
      [=](std::vector<transfer_done_msg>& batch) {
        for (auto& m : batch) {
          if (self->state.finished || m.run != self->state.plan->run) return;
          transfer_done(self, m);
        }
        flush(self);
      },
      [=](op_failed_msg& m) {
        if (m.run != self->state.plan->run || m.op >= self->state.plan->size()) return;
        fail(self, m.op, m.device, m.what);
      },
      [=](timeout_atom, std::uint64_t run) {
        auto& st = self->state;
        if (st.finished || run != st.plan->run) return;
        const auto& p = *st.plan;
        auto victim = running_op(st, any_device);
        auto ms = std::to_string(p.timeout.count());
        st.report.timed_out = true;
        if (!victim) {
          st.report.ok = false;
          st.report.failure = "run timed out after " + ms + " ms waiting on transfers";
          return finish(self);
        }
        fail(self, *victim, p.device_of(*victim), "run timed out after " + ms + " ms with this op unfinished");
      },
  };
}

}  // namespace

dispatcher_actor spawn_dispatcher(caf::actor_system& sys, std::shared_ptr<const run_plan> plan) {
  return sys.spawn(dispatcher_impl, std::move(plan));
}

run_report execute_plan(caf::actor_system& sys, std::shared_ptr<const run_plan> plan) {
  // The handshake, the run, the collection, and a margin: the dispatcher answers before this.
  auto grace = plan->timeout + 2 * handshake_limit(*plan) + std::chrono::seconds(5);
  auto disp = spawn_dispatcher(sys, plan);
  caf::scoped_actor self{sys};
  run_report out;
  self->request(disp, grace, run_atom::value)
      .receive([&](run_report& r) { out = std::move(r); },
               [&](caf::error& err) {
                 out.ok = false;
                 out.timed_out = true;  // not even the run's limits and a margin got an answer
                 out.failure = "dispatcher did not answer: " + sys.render(err);
               });
  return out;
}

}  // namespace doppler::actors
