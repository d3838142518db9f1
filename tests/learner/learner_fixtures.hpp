#pragma once
// Helpers the learner tests share: the DOPPLER paper's graphs, per-process temporary file names, and a
// tiny two-op problem with a known optimum.
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/sim.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace learner_fixtures {

/// One of the paper's graphs (workloads/doppler-paper/NAME).
inline doppler::graph paper(const char* name) {
  return doppler::load_graph(std::string(DOPPLER_PAPER_DIR) + "/" + name);
}

/// A file name in the temporary directory, unique to this test process.
inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("doppler_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

/// A synthetic op: `flops` of work, an output of `bytes`.
inline doppler::op_spec synth(std::string id, std::vector<std::string> inputs, double flops, double bytes) {
  doppler::op_spec s;
  s.id = std::move(id);
  s.kind = doppler::op_kind::synthetic;
  s.inputs = std::move(inputs);
  s.flops = flops;
  s.bytes = bytes;
  return s;
}

/// a → b, a → c, b → d, c → d. On doppler-paper:2 (1e10 FLOP/s, 1e10 B/s, no latency) the node
/// costs are a 2, b 1, c 3, d 1 s and the comm costs a 1, b 3, c 1, d 2 s (critical path 8 s).
inline doppler::graph diamond() {
  doppler::graph_builder b("diamond");
  b.add(synth("a", {}, 2e10, 1e10));
  b.add(synth("b", {"a"}, 1e10, 3e10));
  b.add(synth("c", {"a"}, 3e10, 1e10));
  b.add(synth("d", {"b", "c"}, 1e10, 2e10));
  return std::move(b).build();
}

/// Two independent ops: w3 (3e10 FLOP, 100 MB output) and w1 (1e10 FLOP, 1 MB).
inline doppler::graph two_ops() {
  doppler::graph_builder b("two-ops");
  b.add(synth("w3", {}, 3e10, 1e8));
  b.add(synth("w1", {}, 1e10, 1e6));
  return std::move(b).build();
}

/// A fast device (3e10 FLOP/s) and a slow one (1e10 FLOP/s, 10 MB: w3 does not fit there). The
/// optimum runs w3 on the fast device and w1 on the slow one (1 s); w1 next to w3 ends at 4/3 s.
inline doppler::cluster fast_slow() {
  using doppler::device_kind;
  return doppler::cluster("fast-slow", {{"fast", device_kind::gpu, 3e10, 1e15, "h"}, {"slow", device_kind::gpu, 1e10, 1e7, "h"}},
                          {}, {{"fast", "slow", 1e10, 0, true}});
}

/// The best simulated makespan over all |D|^|V| placements.
inline double brute_force_optimum(const doppler::graph& g, const doppler::cluster& c, const doppler::cost_model& cm,
                                  const doppler::sim_options& so) {
  const std::size_t n = g.size(), d = c.device_count();
  std::size_t total = 1;
  for (std::size_t i = 0; i < n; ++i) total *= d;
  double best = std::numeric_limits<double>::infinity();
  doppler::placement p;
  p.device.resize(n);
  p.order.assign(g.topo_order().begin(), g.topo_order().end());
  for (std::size_t code = 0; code < total; ++code) {
    std::size_t x = code;
    for (std::size_t i = 0; i < n; ++i, x /= d) p.device[i] = static_cast<doppler::device_index>(x % d);
    best = std::min(best, doppler::simulate(g, c, p, cm, so).makespan);
  }
  return best;
}

}  // namespace learner_fixtures
