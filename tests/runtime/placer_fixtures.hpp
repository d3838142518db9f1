// Helpers of the placer tests (test_placers.cpp, test_placer_limits.cpp): synthetic ops in seconds
// on doppler-paper:N, graph building, the six paper graphs, a quick search budget.
#pragma once

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placer.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace doppler::placer_test {

/// A synthetic op: `flops` and `bytes` in units of 1e10, so on doppler-paper:N (1e10 FLOP/s devices,
/// 1e10 B/s links, no latency) they are seconds of compute and of transfer.
inline op_spec syn(std::string id, double flops, double bytes, std::vector<std::string> inputs = {}) {
  op_spec s;
  s.id = std::move(id);
  s.kind = op_kind::synthetic;
  s.inputs = std::move(inputs);
  s.flops = flops * 1e10;
  s.bytes = bytes * 1e10;
  return s;
}

inline graph build(std::string name, std::vector<op_spec> specs) {
  graph_builder b(std::move(name));
  for (auto& s : specs) b.add(std::move(s));
  return std::move(b).build();
}

inline op_index idx(const graph& g, std::string_view id) { return *g.find(id); }

inline const std::vector<std::string> paper_files = {
    "chain_mm_112nodes.txt", "ffnn_192nodes.txt", "transformer_block_215nodes.txt",
    "full_transformer_layer_261nodes.txt", "8gpu_transformer_block.txt", "8gpu_full_transformer.txt"};

inline graph paper(const std::string& f) { return load_graph(std::string(DOPPLER_PAPER_DIR) + "/" + f); }
inline cluster paper_cluster(const std::string& f) { return make_preset(f.starts_with("8gpu") ? "doppler-paper:8" : "doppler-paper:4"); }

inline placer_options quick(std::uint64_t seed = 0) {
  placer_options o;
  o.seed = seed;
  o.budget = 40;
  return o;
}

}  // namespace doppler::placer_test
