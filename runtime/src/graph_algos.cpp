#include <doppler/runtime/graph_algos.hpp>

#include <algorithm>

namespace doppler {

std::vector<std::uint32_t> levels(const graph& g) {
  std::vector<std::uint32_t> lv(g.size(), 0);
  for (op_index v : g.topo_order())
    for (op_index u : g.preds(v)) lv[v] = std::max(lv[v], lv[u] + 1);
  return lv;
}

std::uint32_t depth(const graph& g) {
  if (g.size() == 0) return 0;
  auto lv = levels(g);
  return *std::max_element(lv.begin(), lv.end()) + 1;
}

std::vector<double> top_levels(const graph& g, std::span<const double> node_cost,
                               std::span<const double> edge_cost) {
  std::vector<double> tl(g.size(), 0.0);
  for (op_index v : g.topo_order())
    for (op_index u : g.preds(v))
      tl[v] = std::max(tl[v], tl[u] + node_cost[u] + (edge_cost.empty() ? 0.0 : edge_cost[u]));
  return tl;
}

std::vector<double> bottom_levels(const graph& g, std::span<const double> node_cost,
                                  std::span<const double> edge_cost) {
  std::vector<double> bl(g.size(), 0.0);
  auto order = g.topo_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    op_index v = *it;
    double tail = 0;
    for (op_index s : g.succs(v)) tail = std::max(tail, (edge_cost.empty() ? 0.0 : edge_cost[v]) + bl[s]);
    bl[v] = node_cost[v] + tail;
  }
  return bl;
}

double critical_path(const graph& g, std::span<const double> node_cost, std::span<const double> edge_cost) {
  auto bl = bottom_levels(g, node_cost, edge_cost);
  return bl.empty() ? 0.0 : *std::max_element(bl.begin(), bl.end());
}

std::vector<double> op_flops(const graph& g) {
  std::vector<double> out(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) out[i] = g[static_cast<op_index>(i)].flops;
  return out;
}

std::vector<double> op_bytes(const graph& g) {
  std::vector<double> out(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) out[i] = g[static_cast<op_index>(i)].bytes;
  return out;
}

}  // namespace doppler
