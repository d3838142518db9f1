#pragma once
/// Workload generators: executable `doppler-graph/1` graphs of real op kinds and shapes.
/// docs/workloads.md describes each graph's structure, its parameters and its op/FLOP counts.

#include <doppler/runtime/graph.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace doppler {

/// Parameters shared by the generators; each generator reads the ones it needs.
/// Defaults are small enough that one block executes in well under a second on one CPU core.
struct workload_params {
  std::int64_t dim = 256;     ///< model (hidden) dimension
  std::int64_t heads = 8;     ///< attention heads (dim must divide by heads)
  std::int64_t ffn = 688;     ///< FFN hidden dimension (SwiGLU)
  std::int64_t seq = 128;     ///< sequence length
  std::int64_t batch = 1;     ///< batch size
  std::int64_t shards = 4;    ///< how many pieces each sharded op is split into
  std::int64_t layers = 1;    ///< repeated layers (llama-layer, moe-layer, ffnn, chainmm)
  std::int64_t experts = 8;   ///< moe-layer: experts
  std::int64_t top_k = 2;     ///< moe-layer: experts per token
  std::int64_t matrices = 4;  ///< chainmm: matrices in the chain (each dim × dim)
  dtype type = dtype::f32;

  /// Llama-7B dimensions: dim 4096, 32 heads, FFN 11008, sequence 2048.
  static workload_params llama_7b();
};

/// Names of the generators: chainmm, ffnn, llama-block, llama-layer, moe-layer.
std::vector<std::string> workload_names();
/// One-line description of a generator.
std::string workload_description(std::string_view name);
/// Generates a workload. Throws `doppler::error` (bad_argument / unknown_kind) for bad parameters.
graph make_workload(std::string_view name, const workload_params& p);

}  // namespace doppler
