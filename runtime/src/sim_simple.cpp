// The DOPPLER paper's public simulator (`sim_model::simple`). docs/simulator.md is the spec.
//
// The paper's env/cost.py (a SimPy model) semantics: an op becomes ready on its device when every
// input has arrived — producer end + (producer on another device ? producer bytes / route bottleneck
// bandwidth : 0); transfers never contend and pay no latency; every cross-device edge pays its
// producer's full output, even when several consumers share a device. Each device serves its ready
// ops one at a time, FIFO by ready time (ties: lower op index). The placement's `order` does not
// matter here: the paper's queues are FIFO. In `bsp` mode a level starts only after the previous
// level's ops and their outgoing transfers are done.
#include <doppler/runtime/graph_algos.hpp>

#include "sim_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>

namespace doppler::detail {

namespace {

/// (time key, op): ordered by time, then op index.
using timed_op = std::pair<std::int64_t, op_index>;
using min_heap = std::priority_queue<timed_op, std::vector<timed_op>, std::greater<>>;

}  // namespace

sim_result simulate_simple(const graph& g, const cluster& c, const placement& p, sim_inputs& in,
                           const sim_options& opt) {
  const std::size_t n = g.size(), devices = c.device_count();
  sim_result r;
  r.busy.assign(devices, 0.0);
  r.link_bytes.assign(c.links().size(), 0.0);
  if (n == 0) return r;
  if (opt.record_trace) r.events.reserve(n + g.edge_count());

  const device_index* dev = p.device.data();
  const bool bsp = opt.mode == exec_mode::bsp;
  std::vector<std::uint32_t> lv;
  if (bsp) lv = levels(g);

  std::vector<double> ready_at(n, 0.0), start(n, 0.0);
  std::vector<std::uint32_t> missing(n);
  std::vector<min_heap> queue(devices);   // ready ops per device
  std::vector<bool> busy(devices, false);
  // Events: ready (kind 0) before finish (kind 1) at equal times, as the paper's replica orders them.
  // Orders compare times snapped to a grid of 1e-12 of the total work: sums taken in different
  // orders (a + b + c vs a + c + b) must not break the paper's exact ties (its costs are integers).
  // The grid is never coarser than 1e-17 of the longest the run could take (every op and every
  // transfer at the slowest link, one after another): with every op at 0 s the grid was 1 s and an op
  // started at 0 before its 0.3 s input had arrived; and no time is 2^63 grid steps away.
  double work = 0, longest = 0;
  for (double t : in.op_time) work += t;
  double slowest_link = std::numeric_limits<double>::infinity();
  for (const link& l : c.links()) slowest_link = std::min(slowest_link, l.bandwidth);
  if (std::isfinite(slowest_link))
    for (op_index v = 0; v < n; ++v) longest += in.bytes[v] * static_cast<double>(g.succs(v).size()) / slowest_link;
  longest += work;
  const double quantum = longest > 0 ? std::max(work * 1e-12, longest * 1e-17) : 1.0;
  auto key = [quantum](double t) { return static_cast<std::int64_t>(std::llround(t / quantum)); };
  struct event {
    double time;
    std::int64_t key;
    int kind;
    op_index v;
    bool operator>(const event& o) const {
      if (key != o.key) return key > o.key;
      if (kind != o.kind) return kind > o.kind;
      return v > o.v;
    }
  };
  std::priority_queue<event, std::vector<event>, std::greater<>> events;

  // bsp: ops of level L wait for every op of level L-1 and its outgoing transfers.
  std::vector<std::uint32_t> level_left;
  std::vector<double> level_done;  // completion time of level L incl. outgoing transfers
  std::vector<std::vector<op_index>> held;  // ops of level L whose inputs are in, waiting for the barrier
  if (bsp) {
    std::uint32_t levels_n = *std::max_element(lv.begin(), lv.end()) + 1;
    level_left.assign(levels_n, 0);
    level_done.assign(levels_n, 0.0);
    held.resize(levels_n);
    for (op_index v = 0; v < n; ++v) ++level_left[lv[v]];
  }

  auto release = [&](op_index v) {  // inputs of v are all in: ready_at[v] is final
    if (bsp && lv[v] > 0 && level_left[lv[v] - 1] > 0) {
      held[lv[v]].push_back(v);
      return;
    }
    if (bsp && lv[v] > 0) ready_at[v] = std::max(ready_at[v], level_done[lv[v] - 1]);
    events.push({ready_at[v], key(ready_at[v]), 0, v});
  };

  for (op_index v = 0; v < n; ++v) {
    missing[v] = static_cast<std::uint32_t>(g.preds(v).size());
    if (missing[v] == 0) release(v);
  }

  auto start_next = [&](device_index d, double t) {
    if (busy[d] || queue[d].empty()) return;
    op_index v = queue[d].top().second;
    queue[d].pop();
    busy[d] = true;
    start[v] = t;
    events.push({t + in.op_time[v], key(t + in.op_time[v]), 1, v});
  };

  while (!events.empty()) {
    event e = events.top();
    events.pop();
    const op_index v = e.v;
    const device_index d = dev[v];
    ++r.event_count;
    if (e.kind == 0) {
      queue[d].push({e.key, v});
    } else {
      busy[d] = false;
      r.busy[d] += in.op_time[v];
      r.makespan = std::max(r.makespan, e.time);
      if (opt.record_trace) r.events.push_back({trace_event::kind::op, v, d, 0, start[v], e.time});
      double out_done = e.time;
      for (op_index s : g.succs(v)) {
        double arrive = e.time;
        if (dev[s] != d) {
          const route& rt = c.route_between(d, dev[s]);
          arrive += in.bytes[v] / rt.bandwidth * in.factor();
          for (link_index l : rt.links) {
            r.link_bytes[l] += in.bytes[v];
            if (opt.record_trace) r.events.push_back({trace_event::kind::transfer, v, l, dev[s], e.time, arrive});
          }
        }
        out_done = std::max(out_done, arrive);
        ready_at[s] = std::max(ready_at[s], arrive);
        if (--missing[s] == 0) release(s);
      }
      if (bsp) {
        auto L = lv[v];
        level_done[L] = std::max(level_done[L], out_done);
        if (--level_left[L] == 0 && L + 1 < held.size()) {
          if (L > 0) level_done[L] = std::max(level_done[L], level_done[L - 1]);
          auto waiting = std::move(held[L + 1]);
          for (op_index s : waiting) release(s);
        }
      }
    }
    start_next(d, e.time);
  }
  return r;
}

}  // namespace doppler::detail
