// The DOPPLER paper's public simulator (`sim_model::simple`). docs/simulator.md is the spec.
//
// One FIFO queue per device, filled in priority order (the placement's `order`, else the graph's
// topological order); an op starts at max(device free, max over producers of producer end + (on
// another device ? producer bytes / route bottleneck bandwidth : 0)). Transfers never contend and
// pay no latency; every cross-device edge pays its producer's full output, even when several
// consumers share a device. Because the priority order is topological, one pass over it in order
// is the whole simulation.
#include <doppler/runtime/graph_algos.hpp>

#include "sim_detail.hpp"

#include <algorithm>

namespace doppler::detail {

sim_result simulate_simple(const graph& g, const cluster& c, const placement& p, sim_inputs& in,
                           const sim_options& opt) {
  const std::size_t n = g.size(), devices = c.device_count();
  sim_result r;
  r.busy.assign(devices, 0.0);
  r.link_bytes.assign(c.links().size(), 0.0);
  if (n == 0) return r;

  std::span<const op_index> order = p.order.empty() ? g.topo_order() : std::span<const op_index>(p.order);
  const bool bsp = opt.mode == exec_mode::bsp;
  std::vector<std::uint32_t> lv;
  std::vector<op_index> by_level;
  if (bsp) {
    // Level by level, each level in priority order; a barrier after each level waits for its ops
    // and for their outputs to reach every consuming device.
    lv = levels(g);
    by_level.assign(order.begin(), order.end());
    std::stable_sort(by_level.begin(), by_level.end(),
                     [&](op_index a, op_index b) { return lv[a] < lv[b]; });
    order = by_level;
  }

  const device_index* dev = p.device.data();
  std::vector<double> dev_free(devices, 0.0), end(n, 0.0);
  if (opt.record_trace) r.events.reserve(n + g.edge_count());
  double barrier = 0, next_barrier = 0;
  std::uint32_t level = 0;
  for (op_index v : order) {
    if (bsp && lv[v] != level) {
      level = lv[v];
      barrier = next_barrier;
    }
    const device_index d = dev[v];
    double start = std::max(dev_free[d], barrier);
    for (op_index u : g.preds(v)) {
      double arrive = end[u];
      if (dev[u] != d) {
        const route& rt = c.route_between(dev[u], d);
        arrive += in.bytes[u] / rt.bandwidth * in.factor();
        for (link_index l : rt.links) {
          r.link_bytes[l] += in.bytes[u];
          if (opt.record_trace)
            r.events.push_back({trace_event::kind::transfer, u, l, d, end[u], arrive});
        }
        ++r.event_count;
      }
      start = std::max(start, arrive);
    }
    const double finish = start + in.op_time[v];
    end[v] = finish;
    dev_free[d] = finish;
    r.busy[d] += in.op_time[v];
    r.makespan = std::max(r.makespan, finish);
    ++r.event_count;
    if (opt.record_trace) r.events.push_back({trace_event::kind::op, v, d, 0, start, finish});
    if (bsp) {
      next_barrier = std::max(next_barrier, finish);
      for (op_index s : g.succs(v))
        if (dev[s] != d)
          next_barrier = std::max(next_barrier, finish + in.bytes[v] / c.route_between(d, dev[s]).bandwidth);
    }
  }
  return r;
}

}  // namespace doppler::detail
