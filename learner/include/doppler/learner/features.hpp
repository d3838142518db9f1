#pragma once
/// The static inputs of DOPPLER's policies for one (graph, cluster): per-op features, the edge
/// feature, the bidirectional message-passing edge list and the longest paths SEL sums over.
/// Torch-free; docs/learner.md states every definition.
///
/// Costs are the list schedulers' (critical_path_costs): node[v] = v's op time on its fastest device,
/// edge[v] = "comm of the source", the mean uncontended transfer time of v's output.

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace doppler::learner {

/// Columns of the per-op feature matrix, in order.
enum class node_feature : std::uint8_t {
  compute,        ///< node cost (op time on the fastest device)
  bottom_level,   ///< longest path from v's start to an exit, v included
  top_level,      ///< longest path from an entry to v's start
  pred_comm,      ///< Σ comm of v's (distinct) predecessors
  out_comm,       ///< out-degree × comm of v
};
inline constexpr int node_feature_count = 5;
/// Edge feature columns of a message-passing edge: z-scored comm of the source, direction (+1 along
/// the dataflow edge, −1 for its reverse).
inline constexpr int edge_feature_count = 2;

/// Everything static the policies read, computed once per (graph, cluster, cost model).
struct graph_features {
  std::size_t ops = 0;
  /// raw[v * node_feature_count + f]: unnormalized features (seconds).
  std::vector<double> raw;
  /// z[v * node_feature_count + f]: each column z-scored over the ops (mean 0, population σ 1;
  /// a constant column becomes 0).
  std::vector<float> z;
  /// node and edge costs (critical_path_costs), bottom and top levels, in seconds.
  std::vector<double> node_cost, edge_cost, bottom_level, top_level;
  /// Message-passing edges: both directions of every dataflow edge (src → dst, then dst → src).
  std::vector<std::uint32_t> msg_src, msg_dst;
  /// msg_feat[e * edge_feature_count + k].
  std::vector<float> msg_feat;
  /// The next op on v's longest (bottom-level) path to an exit; v itself for an exit.
  std::vector<std::uint32_t> down_next;
  /// The previous op on v's longest (top-level) path from an entry; v itself for an entry.
  std::vector<std::uint32_t> up_prev;
  /// Number of ops on the longest path (in ops) any of the above path sums can have; ≥ 1.
  std::uint32_t max_path_ops = 1;
  /// Time scale for the dynamic device features: the critical-path length (max bottom level), or 1.
  double time_scale = 1;
};

/// Computes the features. Works for any graph (an empty graph gives empty vectors).
graph_features compute_features(const graph& g, const cluster& c, const cost_model& cm);

/// Z-scores `values` (population σ) into `out`; a constant (or empty) input gives zeros.
void z_score(const std::vector<double>& values, std::vector<float>& out);

}  // namespace doppler::learner
