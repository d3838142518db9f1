#pragma once
// Shared by the simulator's tests (test_sim.cpp, test_lower_bound.cpp, tests/comm/test_comm_transfers.cpp):
// synthetic ops, graphs from op lists, a full-mesh cluster, placements by op id, a trace's event
// for an op, every placement of a small graph.
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

namespace sim_fixtures {

using namespace doppler;

/// A synthetic op: `flops` FLOPs producing `bytes` bytes.
inline op_spec syn(std::string id, std::vector<std::string> inputs, double flops, double bytes) {
  return op_spec{std::move(id), op_kind::synthetic, std::move(inputs), {}, {}, flops, bytes, ""};
}

inline graph make_graph(std::vector<op_spec> specs) {
  graph_builder b("t");
  for (auto& s : specs) b.add(std::move(s));
  return std::move(b).build();
}

/// `n` devices of `flops` FLOP/s, a duplex full mesh of `bw` B/s links with `lat` s latency.
inline cluster mesh(int n, double flops, double bw, double lat) {
  std::vector<device> ds;
  for (int i = 0; i < n; ++i) ds.push_back({"d" + std::to_string(i), device_kind::gpu, flops, 1e12, "h"});
  std::vector<link_spec> ls;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) ls.push_back({"d" + std::to_string(i), "d" + std::to_string(j), bw, lat, true});
  return cluster("mesh", std::move(ds), {}, std::move(ls));
}

/// Placement by op id → device index.
inline placement place(const graph& g, const std::map<std::string, device_index>& where,
                std::vector<std::string> order = {}) {
  placement p;
  p.device.resize(g.size());
  for (const auto& [id, d] : where) p.device[*g.find(id)] = d;
  for (const auto& id : order) p.order.push_back(*g.find(id));
  return p;
}

inline const trace_event& op_event(const sim_result& r, const graph& g, const std::string& id) {
  op_index v = *g.find(id);
  for (const auto& e : r.events)
    if (e.what == trace_event::kind::op && e.id == v) return e;
  FAIL("no trace event for op " << id);
  return r.events.front();
}


/// Every placement of `g` on `c` (D^n of them), in counting order: calls f(placement).
template <class F>
void each_placement(const graph& g, const cluster& c, F&& f) {
  placement p;
  p.device.assign(g.size(), 0);
  const auto D = static_cast<device_index>(c.device_count());
  for (;;) {
    f(p);
    std::size_t i = 0;
    while (i < p.device.size() && ++p.device[i] == D) p.device[i++] = 0;
    if (i == p.device.size()) return;
  }
}

}  // namespace sim_fixtures
