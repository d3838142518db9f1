// The work-conserving discrete-event model (and its bsp variant). docs/simulator.md is the spec.
//
// Events live in one binary heap ordered by (time, sequence number): equal times pop in the order
// they were pushed, so a run is a pure function of its inputs and seed. All events of one instant
// are applied before any device picks its next op, so an op that becomes ready at t competes with
// every other op ready at t. Everything per op, per device and per link is a flat vector sized up
// front; the event loop allocates nothing.
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/transfer_plan.hpp>

#include "sim_detail.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <queue>

namespace doppler::detail {

namespace {

/// A pending event: an op finishing, or a transfer arriving (the high bit of the payload). Times are
/// ≥ 0, so their IEEE-754 bits order like the times themselves: the heap compares integers only.
struct event {
  std::uint64_t t;    // std::bit_cast<std::uint64_t>(time)
  std::uint64_t key;  // sequence number << 32 | payload
};
struct later {
  bool operator()(const event& a, const event& b) const noexcept {
    return a.t != b.t ? a.t > b.t : a.key > b.key;
  }
};
constexpr std::uint32_t arrival_bit = 1u << 31;
constexpr std::uint32_t copy_bit = 1u << 30;  // host-core sharing: a transfer's copy starts
constexpr std::uint32_t payload_mask = 0xffffffffu;

constexpr std::uint32_t none = UINT32_MAX;

/// One tensor moving to one device (it serves every consumer of `op` placed there), or one hop of a
/// planned transfer (`plan` ≠ none). Transfers that start on the same link form a FIFO list through
/// `next`; only the list's head is in the heap.
struct transfer {
  op_index op;
  device_index dst;
  link_index first;    // the route's first link (a hop's only link): the list it queues in
  std::uint32_t next;  // next transfer queued on `first`, or none
  double end;
  std::uint32_t plan = none;  // index into the run's active plans
  std::uint32_t hop = 0;      // hop of that plan
};

/// A planned transfer in flight: the plan, the op whose output it moves, and per destination the
/// chunks that arrived (`got[base + k]` for the plan's k-th destination).
struct active_plan {
  std::shared_ptr<const transfer_plan> plan;
  op_index op;
  double chunk_bytes;
  std::uint32_t base;
};

/// Per-device ready queues in one flat buffer: device d owns [off[d], off[d + 1]); each op enters
/// its device's queue once. With an `order`, a queue is a min-heap of order positions; without, a
/// FIFO of op indices.
class ready_queues {
 public:
  ready_queues(const placement& p, std::size_t devices) : order_(p.order), prio_(!p.order.empty()) {
    const std::size_t n = p.device.size();
    std::vector<std::uint32_t> off(devices + 1, 0);
    for (device_index d : p.device) ++off[d + 1];
    for (std::size_t d = 0; d < devices; ++d) off[d + 1] += off[d];
    head_.assign(off.begin(), off.end() - 1);
    tail_ = head_;
    buf_.resize(n);
    if (prio_) {
      pos_.resize(n);
      for (std::size_t i = 0; i < n; ++i) pos_[p.order[i]] = static_cast<std::uint32_t>(i);
    }
  }
  bool empty(device_index d) const noexcept { return head_[d] == tail_[d]; }
  void push(device_index d, op_index v) {
    if (!prio_) {
      buf_[tail_[d]++] = v;
      return;
    }
    buf_[tail_[d]++] = pos_[v];
    std::push_heap(buf_.data() + head_[d], buf_.data() + tail_[d], std::greater<>{});
  }
  op_index pop(device_index d) {
    if (!prio_) return buf_[head_[d]++];
    std::pop_heap(buf_.data() + head_[d], buf_.data() + tail_[d], std::greater<>{});
    return order_[buf_[--tail_[d]]];
  }

 private:
  const std::vector<op_index>& order_;
  bool prio_;
  std::vector<std::uint32_t> buf_, head_, tail_, pos_;
};

}  // namespace

sim_result simulate_wc(const graph& g, const cluster& c, const placement& p, sim_inputs& in,
                       const sim_options& opt) {
  const std::size_t n = g.size(), devices = c.device_count();
  sim_result r;
  r.busy.assign(devices, 0.0);
  r.link_bytes.assign(c.links().size(), 0.0);
  if (n == 0) return r;
  if (n >= arrival_bit || g.edge_count() >= arrival_bit)
    throw error(errc::bad_argument, "graph too large for the simulator (2^31 ops or edges)");

  const bool bsp = opt.mode == exec_mode::bsp;
  const bool tracing = opt.record_trace;
  const auto streams = static_cast<std::uint32_t>(opt.streams);

  // What the loop touches per op, in one 16-byte record: one cache miss per op visit, not three.
  struct op_state {
    double time;                 // seconds on its device
    device_index dev;
    std::uint32_t remaining;     // producers whose output is not yet on `dev`
  };
  std::vector<op_state> ops(n);
  for (op_index v = 0; v < n; ++v)
    ops[v] = {in.op_time[v], p.device[v], static_cast<std::uint32_t>(g.preds(v).size())};

  ready_queues ready(p, devices);
  std::vector<std::uint32_t> running(devices, 0);
  std::vector<double> busy_since(devices, 0.0), link_free(c.links().size(), 0.0), op_start;
  std::vector<device_index> stamp(devices, UINT32_MAX);  // stamp[d] == u: u already sent to d
  std::vector<device_index> dirty;
  std::vector<char> is_dirty(devices, 0);
  dirty.reserve(devices);
  std::vector<transfer> transfers;
  transfers.reserve(g.edge_count());
  if (tracing) {
    op_start.resize(n);
    r.events.reserve(n + g.edge_count());
  }
  std::vector<event> heap_storage;
  heap_storage.reserve(devices * streams + c.links().size() + 1);  // running ops + link list heads
  std::priority_queue<event, std::vector<event>, later> heap(later{}, std::move(heap_storage));
  std::uint64_t seq = 0;
  auto push_event = [&](double t, std::uint32_t payload) {
    heap.push(event{std::bit_cast<std::uint64_t>(t + 0.0), (seq++ << 32) | payload});
  };
  auto make_ready = [&](op_index v) {
    device_index d = ops[v].dev;
    ready.push(d, v);
    if (!is_dirty[d]) {
      is_dirty[d] = 1;
      dirty.push_back(d);
    }
  };

  // bsp: ops grouped by level; a level is released when the previous one, transfers included, is done.
  std::vector<std::uint32_t> level_off, level_ops;
  std::uint32_t level = 0, outstanding = 0;
  if (bsp) {
    auto lv = levels(g);
    std::uint32_t depth = 0;
    for (auto l : lv) depth = std::max(depth, l + 1);
    level_off.assign(depth + 1, 0);
    for (auto l : lv) ++level_off[l + 1];
    for (std::uint32_t l = 0; l < depth; ++l) level_off[l + 1] += level_off[l];
    level_ops.resize(n);
    auto fill = level_off;
    for (op_index v = 0; v < n; ++v) level_ops[fill[lv[v]]++] = v;
    for (std::uint32_t i = level_off[0]; i < level_off[1]; ++i) make_ready(level_ops[i]);
    outstanding = level_off[1] - level_off[0];
  } else {
    for (op_index v = 0; v < n; ++v)
      if (ops[v].remaining == 0) make_ready(v);
  }

  // Host-core sharing (in.host_cores > 0): the k ops running and the c copies in progress on all
  // devices together; each op progresses at min(1, cores / (k + c)) of its full speed (a copy takes
  // a core for its bytes / bandwidth part and keeps its own duration). `left` is an op's remaining
  // full-speed seconds; whenever the running set changes, every running op's finish is pushed again
  // and `due` keeps the one that counts (a popped finish whose time is not its op's `due` is stale
  // and skipped). Without sharing none of this runs and the loop is the plain one.
  const double cores = in.host_cores;
  const bool sharing = cores > 0;
  std::vector<op_index> run_set;
  std::vector<double> left;
  std::vector<std::uint64_t> due;
  double shared_since = 0, share = 1;
  std::uint32_t copies = 0;
  bool share_changed = false;
  if (sharing) {
    if (n >= copy_bit || g.edge_count() >= copy_bit)
      throw error(errc::bad_argument, "graph too large for host-core sharing (2^30 ops or edges)");
    left.resize(n);
    due.resize(n);
    run_set.reserve(devices * streams);
  }
  auto advance_shared = [&](double t) {
    for (op_index v : run_set) left[v] = std::max(0.0, left[v] - (t - shared_since) * share);
    shared_since = t;
  };

  // A transfer reserves every link of its route from the moment all of them are free, for latency +
  // bytes / bottleneck. Reservations only move a link's free time forward, so the transfers queued on
  // one link end in the order they were sent: the heap holds the head of each link's list only (its
  // size stays near devices × streams + links, not the number of transfers in flight).
  std::vector<std::uint32_t> link_head(c.links().size(), none), link_tail(c.links().size(), none);
  auto enqueue = [&](const transfer& tr) {
    const auto idx = static_cast<std::uint32_t>(transfers.size());
    transfers.push_back(tr);
    if (link_head[tr.first] == none) {
      link_head[tr.first] = idx;
      push_event(tr.end, idx | arrival_bit);
    } else {
      transfers[link_tail[tr.first]].next = idx;
    }
    link_tail[tr.first] = idx;
  };
  auto send = [&](op_index u, device_index a, device_index b, double t) {
    const route& rt = c.route_between(a, b);
    double start = t;
    for (link_index l : rt.links) start = std::max(start, link_free[l]);
    double end = start + rt.time(in.bytes[u]) * in.factor();
    if (sharing) push_event(std::max(start, end - in.bytes[u] / rt.bandwidth), copy_bit);
    for (link_index l : rt.links) {
      link_free[l] = end;
      r.link_bytes[l] += in.bytes[u];
      if (tracing) r.events.push_back({trace_event::kind::transfer, u, l, b, start, end});
    }
    enqueue(transfer{u, b, rt.links.front(), none, end});
  };

  // Planned transfers: each hop reserves its one link from the moment its chunk is at the link's
  // source and the link is free; a destination has the tensor when every chunk has arrived.
  std::vector<active_plan> plans;
  std::vector<std::uint32_t> got;
  std::vector<device_index> dests;
  auto send_hop = [&](std::uint32_t k, std::uint32_t h, double t) {
    const active_plan& ap = plans[k];
    const transfer_hop& hop = ap.plan->hops[h];
    const link& lk = c.links()[hop.link];
    double start = std::max(t, link_free[hop.link]);
    double end = start + (lk.latency + ap.chunk_bytes / lk.bandwidth) * in.factor();
    if (sharing) push_event(std::max(start, end - ap.chunk_bytes / lk.bandwidth), copy_bit);  // a copy, too
    link_free[hop.link] = end;
    r.link_bytes[hop.link] += ap.chunk_bytes;
    if (tracing) r.events.push_back({trace_event::kind::transfer, ap.op, hop.link, hop.toward, start, end, ap.chunk_bytes});
    enqueue(transfer{ap.op, hop.toward, hop.link, none, end, k, h});
  };
  // The output of u (on device d, at time t) to every device of `dests`: planned when the planner
  // has a plan for it, else one copy per destination.
  auto send_all = [&](op_index u, device_index d, double t) {
    std::shared_ptr<const transfer_plan> tp;
    if (opt.transfers && wants_plan(c, d, dests)) tp = opt.transfers->plan(d, dests, in.bytes[u]);
    if (!tp) {
      for (device_index ds : dests) send(u, d, ds, t);
      return;
    }
    const auto k = static_cast<std::uint32_t>(plans.size());
    plans.push_back({tp, u, in.bytes[u] / tp->chunks, static_cast<std::uint32_t>(got.size())});
    got.resize(got.size() + tp->destinations.size(), 0);
    for (std::uint32_t h : tp->roots) send_hop(k, h, t);
  };

  std::size_t done = 0;
  double now = 0;
  for (;;) {
    // Start what can start on every device touched at this instant.
    for (device_index d : dirty) {
      is_dirty[d] = 0;
      while (running[d] < streams && !ready.empty(d)) {
        op_index v = ready.pop(d);
        if (running[d]++ == 0) busy_since[d] = now;
        if (tracing) op_start[v] = now;
        if (sharing) {
          advance_shared(now);
          run_set.push_back(v);
          left[v] = ops[v].time;
          due[v] = UINT64_MAX;
          share_changed = true;
        } else {
          push_event(now + ops[v].time, v);
        }
      }
    }
    dirty.clear();
    if (sharing && share_changed) {
      share_changed = false;
      const auto k = static_cast<double>(run_set.size() + copies);
      share = k > cores ? cores / k : 1.0;
      for (op_index v : run_set) {
        const double t = now + left[v] / share;
        const auto bits = std::bit_cast<std::uint64_t>(t + 0.0);
        if (bits == due[v]) continue;  // its pending finish still holds
        due[v] = bits;
        push_event(t, v);
      }
    }
    if (sharing)  // superseded finishes must not move the clock (nor the makespan)
      while (!heap.empty()) {
        const auto payload = static_cast<std::uint32_t>(heap.top().key & payload_mask);
        if ((payload & (arrival_bit | copy_bit)) || due[payload] == heap.top().t) break;
        heap.pop();
      }
    if (heap.empty()) break;

    const std::uint64_t now_bits = heap.top().t;
    now = std::bit_cast<double>(now_bits);
    do {
      const auto payload = static_cast<std::uint32_t>(heap.top().key & payload_mask);
      heap.pop();
      ++r.event_count;
      if (sharing && payload == copy_bit) {
        advance_shared(now);
        ++copies;
        share_changed = true;
        continue;
      }
      if (payload & arrival_bit) {
        if (sharing) {
          advance_shared(now);
          --copies;
          share_changed = true;
        }
        const transfer tr = transfers[payload & ~arrival_bit];
        link_head[tr.first] = tr.next;
        if (tr.next == none)
          link_tail[tr.first] = none;
        else
          push_event(transfers[tr.next].end, tr.next | arrival_bit);
        if (tr.plan != none) {  // a hop: forward the chunk, and count it where it is needed
          const active_plan& ap = plans[tr.plan];
          const transfer_plan& tp = *ap.plan;
          for (std::uint32_t i = tp.child_off[tr.hop]; i < tp.child_off[tr.hop + 1]; ++i)
            send_hop(tr.plan, tp.children[i], now);
          const node_index at = c.links()[tr.first].dst;
          auto it = std::lower_bound(tp.destinations.begin(), tp.destinations.end(), at);
          if (at >= devices || it == tp.destinations.end() || *it != at ||
              ++got[ap.base + static_cast<std::uint32_t>(it - tp.destinations.begin())] != tp.chunks)
            continue;  // a relay, a switch, or chunks still missing
        }
        for (op_index s : g.succs(tr.op))
          if (ops[s].dev == tr.dst && --ops[s].remaining == 0 && !bsp) make_ready(s);
        if (bsp) --outstanding;
        continue;
      }
      const op_index u = payload;
      if (sharing) {
        if (due[u] != now_bits) continue;  // superseded when the running set changed
        due[u] = UINT64_MAX;
        advance_shared(now);
        *std::find(run_set.begin(), run_set.end(), u) = run_set.back();
        run_set.pop_back();
        share_changed = true;
      }
      const device_index d = ops[u].dev;
      if (--running[d] == 0) r.busy[d] += now - busy_since[d];
      if (!is_dirty[d]) {
        is_dirty[d] = 1;
        dirty.push_back(d);
      }
      ++done;
      if (tracing) r.events.push_back({trace_event::kind::op, u, d, 0, op_start[u], now});
      dests.clear();
      for (op_index s : g.succs(u)) {
        const device_index ds = ops[s].dev;
        if (ds == d) {
          if (--ops[s].remaining == 0 && !bsp) make_ready(s);
        } else if (stamp[ds] != u) {
          stamp[ds] = u;
          dests.push_back(ds);
        }
      }
      if (!dests.empty()) {
        if (opt.transfers) std::sort(dests.begin(), dests.end());
        send_all(u, d, now);
        if (bsp) outstanding += static_cast<std::uint32_t>(dests.size());
      }
      if (bsp) --outstanding;
    } while (!heap.empty() && heap.top().t == now_bits);

    if (bsp && outstanding == 0 && level + 2 < level_off.size()) {
      ++level;  // the barrier: every op of the level and every transfer it caused is done
      for (std::uint32_t i = level_off[level]; i < level_off[level + 1]; ++i) {
        if (ops[level_ops[i]].remaining != 0)
          throw error(errc::internal, "bsp: an op of level " + std::to_string(level) +
                                          " is not ready at its barrier");
        make_ready(level_ops[i]);
      }
      outstanding = level_off[level + 1] - level_off[level];
    }
  }
  if (done != n)
    throw error(errc::internal, "simulation ended with " + std::to_string(n - done) +
                                    " ops never run (an invalid placement?)");
  r.makespan = now;
  return r;
}

}  // namespace doppler::detail
