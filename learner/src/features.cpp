// Static policy features (features.hpp).
#include <doppler/learner/features.hpp>

#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/placer.hpp>

#include <algorithm>
#include <cmath>

namespace doppler::learner {

void z_score(const std::vector<double>& values, std::vector<float>& out) {
  out.assign(values.size(), 0.0f);
  if (values.empty()) return;
  double mean = 0;
  for (double x : values) mean += x;
  mean /= static_cast<double>(values.size());
  double var = 0;
  for (double x : values) var += (x - mean) * (x - mean);
  double sd = std::sqrt(var / static_cast<double>(values.size()));
  if (!(sd > 1e-12 * std::max(1.0, std::abs(mean)))) return;
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = static_cast<float>((values[i] - mean) / sd);
}

graph_features compute_features(const graph& g, const cluster& c, const cost_model& cm) {
  graph_features f;
  const std::size_t n = g.size();
  f.ops = n;
  auto pc = critical_path_costs(g, c, cm);
  f.node_cost = std::move(pc.node);
  f.edge_cost = std::move(pc.edge);
  f.bottom_level = bottom_levels(g, f.node_cost, f.edge_cost);
  f.top_level = top_levels(g, f.node_cost, f.edge_cost);

  constexpr int nf = node_feature_count;
  f.raw.assign(n * nf, 0.0);
  for (op_index v = 0; v < n; ++v) {
    double pred_comm = 0;
    for (op_index u : g.preds(v)) pred_comm += f.edge_cost[u];
    double* r = &f.raw[v * nf];
    r[static_cast<int>(node_feature::compute)] = f.node_cost[v];
    r[static_cast<int>(node_feature::bottom_level)] = f.bottom_level[v];
    r[static_cast<int>(node_feature::top_level)] = f.top_level[v];
    r[static_cast<int>(node_feature::pred_comm)] = pred_comm;
    r[static_cast<int>(node_feature::out_comm)] = static_cast<double>(g.succs(v).size()) * f.edge_cost[v];
  }
  f.z.assign(n * nf, 0.0f);
  std::vector<double> column(n);
  std::vector<float> zc;
  for (int k = 0; k < nf; ++k) {
    for (std::size_t v = 0; v < n; ++v) column[v] = f.raw[v * nf + k];
    z_score(column, zc);
    for (std::size_t v = 0; v < n; ++v) f.z[v * nf + k] = zc[v];
  }

  // Message-passing edges: every dataflow edge u → v, then every reverse v → u.
  const std::size_t m = g.edge_count();
  f.msg_src.reserve(2 * m);
  f.msg_dst.reserve(2 * m);
  std::vector<double> comm;
  comm.reserve(m);
  for (op_index v = 0; v < n; ++v)
    for (op_index u : g.preds(v)) {
      f.msg_src.push_back(u);
      f.msg_dst.push_back(v);
      comm.push_back(f.edge_cost[u]);
    }
  std::vector<float> comm_z;
  z_score(comm, comm_z);
  f.msg_feat.assign(2 * m * edge_feature_count, 0.0f);
  for (std::size_t e = 0; e < m; ++e) {
    f.msg_src.push_back(f.msg_dst[e]);
    f.msg_dst.push_back(f.msg_src[e]);
    f.msg_feat[e * edge_feature_count] = comm_z[e];
    f.msg_feat[e * edge_feature_count + 1] = 1.0f;
    f.msg_feat[(m + e) * edge_feature_count] = comm_z[e];
    f.msg_feat[(m + e) * edge_feature_count + 1] = -1.0f;
  }

  // Longest paths: the successor that realizes v's bottom level, the predecessor that realizes its
  // top level (first in adjacency order on ties).
  f.down_next.resize(n);
  f.up_prev.resize(n);
  for (op_index v = 0; v < n; ++v) {
    f.down_next[v] = v;
    double best = -1;
    for (op_index s : g.succs(v))
      if (f.bottom_level[s] > best) {
        best = f.bottom_level[s];
        f.down_next[v] = s;
      }
    f.up_prev[v] = v;
    best = -1;
    for (op_index u : g.preds(v)) {
      double t = f.top_level[u] + f.node_cost[u] + f.edge_cost[u];
      if (t > best) {
        best = t;
        f.up_prev[v] = u;
      }
    }
  }
  // Path lengths in ops (topological order: predecessors first).
  std::vector<std::uint32_t> up_len(n, 1), down_len(n, 1);
  auto topo = g.topo_order();
  for (op_index v : topo)
    if (f.up_prev[v] != v) up_len[v] = up_len[f.up_prev[v]] + 1;
  for (auto it = topo.rbegin(); it != topo.rend(); ++it)
    if (f.down_next[*it] != *it) down_len[*it] = down_len[f.down_next[*it]] + 1;
  for (std::size_t v = 0; v < n; ++v) f.max_path_ops = std::max({f.max_path_ops, up_len[v], down_len[v]});

  double cp = 0;
  for (double b : f.bottom_level) cp = std::max(cp, b);
  f.time_scale = cp > 0 ? cp : 1.0;
  return f;
}

}  // namespace doppler::learner
