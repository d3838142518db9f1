#pragma once
/// Graph algorithms every part uses: levels/depth and top-/bottom-level (critical-path) lengths
/// under a cost model given as per-op times and per-producer transfer times.

#include <doppler/runtime/graph.hpp>

#include <span>
#include <vector>

namespace doppler {

/// Level of every op: 0 for ops without inputs, else 1 + max level of its producers.
std::vector<std::uint32_t> levels(const graph& g);
/// Number of levels (longest path in ops); 0 for an empty graph.
std::uint32_t depth(const graph& g);

/// Top level: the longest path from an entry to the *start* of op v,
/// tl(v) = max over producers u of tl(u) + node_cost[u] + edge_cost[u].
/// `edge_cost[u]` is the cost of moving u's output to a consumer (the DOPPLER edge feature: comm of
/// the source); pass an empty span for zero communication.
std::vector<double> top_levels(const graph& g, std::span<const double> node_cost,
                               std::span<const double> edge_cost = {});
/// Bottom level: the longest path from the start of v to an exit, v's own cost included,
/// bl(v) = node_cost[v] + max over consumers s of edge_cost[v] + bl(s).
std::vector<double> bottom_levels(const graph& g, std::span<const double> node_cost,
                                  std::span<const double> edge_cost = {});
/// Critical-path length: max over ops of bottom level.
double critical_path(const graph& g, std::span<const double> node_cost,
                     std::span<const double> edge_cost = {});

/// Per-op FLOPs as a cost vector (for FLOP-weighted paths).
std::vector<double> op_flops(const graph& g);
/// Per-op output bytes.
std::vector<double> op_bytes(const graph& g);

}  // namespace doppler
