// The placer registry, the shared helpers (path costs, priority order, memory accounting) and the
// simple placers: single, round-robin, random.

#include "placer_common.hpp"

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_algos.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <random>

namespace doppler {

namespace detail {

transfer_table::transfer_table(const cluster& c) : n_(c.device_count()) {
  lat_.assign(n_ * n_, 0.0);
  inv_bw_.assign(n_ * n_, 0.0);
  for (device_index a = 0; a < n_; ++a)
    for (device_index b = 0; b < n_; ++b) {
      if (a == b) continue;
      const route& r = c.route_between(a, b);
      lat_[a * n_ + b] = r.latency;
      inv_bw_[a * n_ + b] = 1.0 / r.bandwidth;
    }
}

memory_tracker::memory_tracker(const graph& g, const cluster& c, bool enabled)
    : g_(g), c_(c), enabled_(enabled), used_(c.device_count(), 0.0), cap_(c.device_count(), 0.0) {
  for (device_index d = 0; d < c.device_count(); ++d) cap_[d] = c[d].memory;
}

void memory_tracker::fail(op_index v, std::string_view method) const {
  double free_max = 0, cap_max = 0;
  for (std::size_t d = 0; d < cap_.size(); ++d) {
    free_max = std::max(free_max, cap_[d] - used_[d]);
    cap_max = std::max(cap_max, cap_[d]);
  }
  if (g_[v].bytes > cap_max)  // no placement at all can hold it
    throw error(errc::infeasible, "", "",
                fmt::format("{}: graph '{}' does not fit in the memory of cluster '{}': op '{}' needs {:.4g} "
                            "bytes but the largest device holds {:.4g} bytes",
                            method, g_.name(), c_.name(), g_[v].id, g_[v].bytes, cap_max));
  throw error(errc::infeasible, "", "",
              fmt::format("{}: could not place graph '{}' in the memory of cluster '{}': op '{}' needs {:.4g} "
                          "bytes but after {}'s earlier choices the most free memory on any device is {:.4g} "
                          "bytes (graph outputs total {:.4g} bytes); another placement may fit{}",
                          method, g_.name(), c_.name(), g_[v].id, g_[v].bytes, method, free_max,
                          g_.total_bytes(), method == "metis" ? "" : " (metis balances memory)"));
}

void memory_tracker::check_total(std::string_view method) const {
  if (!enabled_) return;
  double cap = 0;
  for (double x : cap_) cap += x;
  if (g_.total_bytes() > cap)
    throw error(errc::infeasible, "", "",
                fmt::format("{}: graph '{}' does not fit in cluster '{}': its op outputs total {:.4g} bytes, "
                            "the devices hold {:.4g} bytes together",
                            method, g_.name(), c_.name(), g_.total_bytes(), cap));
}

std::vector<double> default_bottom_levels(const graph& g, const cluster& c, const cost_model& cm) {
  auto pc = critical_path_costs(g, c, cm);
  auto bl = bottom_levels(g, pc.node, pc.edge);
  check_finite_levels(g, c, bl);
  return bl;
}

[[noreturn]] void refuse_op_time(const graph& g, const cluster& c, op_index v, device_index d, double t) {
  throw error(errc::bad_value,
              fmt::format("op '{}' would take {} s on device '{}' of cluster '{}' ({:g} FLOPs at {:g} FLOP/s): "
                          "not a finite time",
                          excerpt(g[v].id), t, excerpt(c[d].id), excerpt(c.name()), g[v].flops, c[d].flops));
}

void check_finite_levels(const graph& g, const cluster& c, std::span<const double> levels) {
  auto bad = std::find_if(levels.begin(), levels.end(), [](double x) { return !std::isfinite(x); });
  if (bad == levels.end()) return;
  // Every op's time is finite on every device (critical_path_costs, run before, refuses it): the
  // sum along a path overflowed.
  auto v = static_cast<op_index>(bad - levels.begin());
  throw error(errc::bad_value, fmt::format("the path from op '{}' to the end of graph '{}' takes longer than a "
                                           "double can hold on cluster '{}': costs out of range",
                                           excerpt(g[v].id), excerpt(g.name()), excerpt(c.name())));
}

}  // namespace detail

path_costs critical_path_costs(const graph& g, const cluster& c, const cost_model& cm) {
  path_costs pc;
  pc.node.assign(g.size(), 0.0);
  pc.edge.assign(g.size(), 0.0);
  const std::size_t n_dev = c.device_count();
  // Mean latency and mean 1/bandwidth over ordered pairs of distinct devices: the mean transfer time
  // of b bytes is then mean_lat + b · mean_inv_bw exactly.
  double mean_lat = 0, mean_inv_bw = 0;
  if (n_dev > 1) {
    for (device_index a = 0; a < n_dev; ++a)
      for (device_index b = 0; b < n_dev; ++b)
        if (a != b) {
          mean_lat += c.route_between(a, b).latency;
          mean_inv_bw += 1.0 / c.route_between(a, b).bandwidth;
        }
    double pairs = static_cast<double>(n_dev * (n_dev - 1));
    mean_lat /= pairs;
    mean_inv_bw /= pairs;
  }
  for (op_index v = 0; v < g.size(); ++v) {
    double best = std::numeric_limits<double>::infinity();
    for (device_index d = 0; d < n_dev; ++d) {
      // Every device's time must be finite, not only the fastest's: cp and m-etf choose a device by
      // start time alone, and put an op where it would never end (found by a placer audit).
      const double t = cm.op_time(g[v], c[d]);
      if (!std::isfinite(t)) detail::refuse_op_time(g, c, v, d, t);
      best = std::min(best, t);
    }
    pc.node[v] = n_dev ? best : 0.0;
    pc.edge[v] = n_dev > 1 && g[v].bytes > 0 ? mean_lat + g[v].bytes * mean_inv_bw : 0.0;
  }
  return pc;
}

std::vector<op_index> priority_topo_order(const graph& g, std::span<const double> priority) {
  std::vector<std::uint32_t> missing(g.size());
  auto cmp = [&](op_index a, op_index b) {
    return priority[a] != priority[b] ? priority[a] < priority[b] : a > b;
  };
  std::priority_queue<op_index, std::vector<op_index>, decltype(cmp)> ready(cmp);
  for (op_index v = 0; v < g.size(); ++v) {
    missing[v] = static_cast<std::uint32_t>(g.preds(v).size());
    if (missing[v] == 0) ready.push(v);
  }
  std::vector<op_index> order;
  order.reserve(g.size());
  while (!ready.empty()) {
    op_index v = ready.top();
    ready.pop();
    order.push_back(v);
    for (op_index s : g.succs(v))
      if (--missing[s] == 0) ready.push(s);
  }
  return order;
}

namespace {

using detail::memory_tracker;

/// All ops on device 0.
class single_placer final : public placer {
 public:
  std::string_view name() const noexcept override { return "single"; }
  placement place(const graph& g, const cluster& c, const cost_model& cm, const placer_options& opt) override {
    memory_tracker mem(g, c, opt.respect_memory);
    placement p;
    p.device.assign(g.size(), 0);
    if (mem.enabled() && g.total_bytes() > c[0].memory)
      throw error(errc::infeasible, "", "",
                  fmt::format("single: graph '{}' does not fit on device '{}' of cluster '{}': its op outputs total "
                              "{:.4g} bytes, the device holds {:.4g}",
                              g.name(), c[0].id, c.name(), g.total_bytes(), c[0].memory));
    p.order = priority_topo_order(g, detail::default_bottom_levels(g, c, cm));
    p.method = name();
    return p;
  }
};

/// Device i mod D for the i-th op of the graph's topological order; a full device passes its turn
/// to the next one with room.
class round_robin_placer final : public placer {
 public:
  std::string_view name() const noexcept override { return "round-robin"; }
  placement place(const graph& g, const cluster& c, const cost_model& cm, const placer_options& opt) override {
    memory_tracker mem(g, c, opt.respect_memory);
    mem.check_total(name());
    const auto n_dev = static_cast<device_index>(c.device_count());
    placement p;
    p.device.assign(g.size(), 0);
    device_index next = 0;
    for (op_index v : g.topo_order()) {
      device_index d = next;
      std::size_t tried = 0;
      while (!mem.fits(d, v) && ++tried < n_dev) d = (d + 1) % n_dev;
      if (!mem.fits(d, v)) mem.fail(v, name());
      mem.add(d, v);
      p.device[v] = d;
      next = (d + 1) % n_dev;
    }
    p.order = priority_topo_order(g, detail::default_bottom_levels(g, c, cm));
    p.method = name();
    return p;
  }
};

/// A uniform device per op (std::mt19937_64 seeded with opt.seed), redrawn among devices with room.
class random_placer final : public placer {
 public:
  std::string_view name() const noexcept override { return "random"; }
  placement place(const graph& g, const cluster& c, const cost_model& cm, const placer_options& opt) override {
    memory_tracker mem(g, c, opt.respect_memory);
    mem.check_total(name());
    std::mt19937_64 rng(opt.seed);
    const auto n_dev = static_cast<device_index>(c.device_count());
    placement p;
    p.device.assign(g.size(), 0);
    std::vector<device_index> room;
    for (op_index v = 0; v < g.size(); ++v) {
      device_index d = static_cast<device_index>(std::uniform_int_distribution<std::uint32_t>(0, n_dev - 1)(rng));
      if (!mem.fits(d, v)) {
        room.clear();
        for (device_index e = 0; e < n_dev; ++e)
          if (mem.fits(e, v)) room.push_back(e);
        if (room.empty()) mem.fail(v, name());
        d = room[std::uniform_int_distribution<std::size_t>(0, room.size() - 1)(rng)];
      }
      mem.add(d, v);
      p.device[v] = d;
    }
    p.order = priority_topo_order(g, detail::default_bottom_levels(g, c, cm));
    p.method = name();
    return p;
  }
};

struct registry_entry {
  const char* name;
  const char* description;
  std::unique_ptr<placer> (*make)();
};

const registry_entry registry[] = {
    {"single", "every op on device 0 (the one-device baseline)",
     [] { return std::unique_ptr<placer>(std::make_unique<single_placer>()); }},
    {"round-robin", "device i mod D for the i-th op in topological order",
     [] { return std::unique_ptr<placer>(std::make_unique<round_robin_placer>()); }},
    {"random", "a uniformly random device per op (seeded)",
     [] { return std::unique_ptr<placer>(std::make_unique<random_placer>()); }},
    {"cp", "DOPPLER's critical-path teacher: max bottom level first, earliest-start device, seeded ties",
     detail::make_cp_placer},
    {"heft", "HEFT: upward rank order, earliest-finish-time device (append policy)", detail::make_heft_placer},
    {"m-etf", "Baechi's memory-aware earliest task first: earliest-start (op, device) pair with memory left",
     detail::make_metf_placer},
    {"metis", "libmetis k-way partition of the op graph, vertices weighted by FLOPs, edges by bytes",
     detail::make_metis_placer},
    {"search", "simulated annealing over assignments from the best of cp/heft/m-etf/round-robin/single, scored by the simulator",
     detail::make_search_placer},
};

}  // namespace

std::vector<std::string> placer_names() {
  std::vector<std::string> out;
  for (const auto& e : registry) out.emplace_back(e.name);
  return out;
}

std::string placer_description(std::string_view name) {
  for (const auto& e : registry)
    if (name == e.name) return e.description;
  return {};
}

bool is_placer(std::string_view name) {
  return std::any_of(std::begin(registry), std::end(registry), [&](const auto& e) { return name == e.name; });
}

std::string placer_list() {
  std::string known;
  for (const auto& e : registry) known += (known.empty() ? "" : ", ") + std::string(e.name);
  return known;
}

std::unique_ptr<placer> make_placer(std::string_view name) {
  for (const auto& e : registry)
    if (name == e.name) return e.make();
  throw error(errc::unknown_kind, "", "", "unknown placement method \"" + std::string(name) + "\" (known: " + placer_list() + ")");
}

}  // namespace doppler
