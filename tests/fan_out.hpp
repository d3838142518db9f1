#pragma once
// Test fixture shared by the planned-transfer tests (actors, cuda): a line of CPU devices and a
// tensor consumed on three of them, which a planned transfer relays through the middle devices.
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/actors/engine.hpp>  // transfer_options

#include <string>
#include <vector>

namespace doppler::testing {

/// cpu0 - cpu1 - ... - cpu(n−1), duplex, 1 GB/s.
inline cluster cpu_line(int n = 4) {
  std::vector<device> ds;
  for (int i = 0; i < n; ++i) ds.push_back({"cpu" + std::to_string(i), device_kind::cpu, 1e10, 1e9, "localhost"});
  std::vector<link_spec> ls;
  for (int i = 0; i + 1 < n; ++i) ls.push_back({"cpu" + std::to_string(i), "cpu" + std::to_string(i + 1), 1e9, 0, true});
  return cluster("cpu-line" + std::to_string(n), ds, {}, ls);
}

/// x (64 × 256 f32 = 64 KiB) on cpu0; silu(x) on cpu1, cpu2 and cpu3; their sum back on cpu0.
struct fan_out {
  graph g;
  placement p;
  fan_out() {
    graph_builder b("fan-out");
    b.input("x", {64, 256});
    b.unary(op_kind::silu, "b", "x");
    b.unary(op_kind::silu, "c", "x");
    b.unary(op_kind::silu, "d", "x");
    b.reduce_sum("sum", {"b", "c", "d"});
    g = std::move(b).build();
    p.device = {0, 1, 2, 3, 0};
    p.method = "hand";
  }
};

/// Planned transfers by `method`, in 16 KiB chunks (4 chunks of fan_out's x).
inline transfer_options planned(std::string method = "greedy") {
  transfer_options t;
  t.mode = "planned";
  t.method = std::move(method);
  t.chunk_bytes = 16 * 1024;
  return t;
}

}  // namespace doppler::testing
