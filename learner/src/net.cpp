// The policy network (net.hpp).
#include "net.hpp"

#include <cmath>
#include <limits>

namespace doppler::learner::detail {

namespace {

torch::Tensor long_tensor(const std::vector<std::int64_t>& v) {
  return torch::tensor(torch::ArrayRef<std::int64_t>(v), torch::kLong);
}

/// Sparse [rows, cols] float matrix from coordinate lists.
torch::Tensor sparse(const std::vector<std::int64_t>& r, const std::vector<std::int64_t>& c,
                     const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  auto idx = torch::stack({long_tensor(r), long_tensor(c)});
  auto val = torch::tensor(torch::ArrayRef<float>(v), torch::kFloat);
  return torch::sparse_coo_tensor(idx, val, {rows, cols}).coalesce();
}

/// Masked log-softmax along dim 1 with 0 where masked, and the entropy per row.
std::pair<torch::Tensor, torch::Tensor> masked_log_softmax(const torch::Tensor& logits,
                                                           const torch::Tensor& mask) {
  auto lp = torch::log_softmax(logits.masked_fill(mask.logical_not(), -INFINITY), 1);
  auto safe = lp.masked_fill(mask.logical_not(), 0.0);
  auto ent = -(safe.exp().masked_fill(mask.logical_not(), 0.0) * safe).sum(1);
  return {safe, ent};
}

}  // namespace

graph_tensors make_graph_tensors(const graph_features& f) {
  graph_tensors gt;
  const auto n = static_cast<std::int64_t>(f.ops);
  gt.x = torch::from_blob(const_cast<float*>(f.z.data()), {n, node_feature_count}, torch::kFloat).clone();
  const auto e = static_cast<std::int64_t>(f.msg_src.size());
  gt.edge_feat =
      torch::from_blob(const_cast<float*>(f.msg_feat.data()), {e, edge_feature_count}, torch::kFloat).clone();
  std::vector<std::int64_t> src(f.msg_src.begin(), f.msg_src.end()), dst(f.msg_dst.begin(), f.msg_dst.end());
  gt.src = long_tensor(src);
  std::vector<double> indeg(f.ops, 0.0);
  for (auto d : f.msg_dst) indeg[d] += 1;
  std::vector<std::int64_t> eidx(static_cast<std::size_t>(e));
  std::vector<float> w(static_cast<std::size_t>(e));
  for (std::int64_t i = 0; i < e; ++i) {
    eidx[i] = i;
    w[i] = static_cast<float>(1.0 / indeg[f.msg_dst[i]]);
  }
  gt.agg = sparse(dst, eidx, w, n, e);
  // Longest-path sums: row v has a 1/L at every op of v's path (v included).
  const float scale = 1.0f / static_cast<float>(f.max_path_ops);
  std::vector<std::int64_t> r, c;
  std::vector<float> val;
  auto path = [&](const std::vector<std::uint32_t>& next) {
    r.clear();
    c.clear();
    val.clear();
    for (std::int64_t v = 0; v < n; ++v) {
      std::uint32_t u = static_cast<std::uint32_t>(v);
      while (true) {
        r.push_back(v);
        c.push_back(u);
        val.push_back(scale);
        if (next[u] == u) break;
        u = next[u];
      }
    }
    return sparse(r, c, val, n, n);
  };
  gt.down = path(f.down_next);
  gt.up = path(f.up_prev);
  return gt;
}

episode_tensors make_episode_tensors(const episode& ep, std::size_t n_ops, std::size_t n_dev) {
  episode_tensors et;
  const auto t = static_cast<std::int64_t>(ep.steps());
  const auto n = static_cast<std::int64_t>(n_ops), d = static_cast<std::int64_t>(n_dev);
  auto csr_mask = [t](const std::vector<std::uint32_t>& off, auto const& items, std::int64_t width) {
    auto m = torch::zeros({t, width}, torch::kBool);
    auto a = m.accessor<bool, 2>();
    for (std::int64_t s = 0; s < t; ++s)
      for (std::uint32_t k = off[s]; k < off[s + 1]; ++k) a[s][items[k]] = true;
    return m;
  };
  et.ready_mask = csr_mask(ep.ready_off, ep.ready, n);
  std::vector<std::int64_t> ops(ep.result.order.begin(), ep.result.order.end()), devs(ops.size());
  for (std::size_t s = 0; s < ops.size(); ++s) devs[s] = ep.result.device[ep.result.order[s]];
  et.ops = long_tensor(ops);
  et.devs = long_tensor(devs);
  et.dev_feat = torch::from_blob(const_cast<float*>(ep.dev_feat.data()), {t, d, device_feature_count},
                                 torch::kFloat).clone();
  et.dev_valid = torch::from_blob(const_cast<std::uint8_t*>(ep.dev_valid.data()), {t, d}, torch::kUInt8)
                     .to(torch::kBool);
  if (!ep.teacher_op_off.empty()) {
    et.teacher_ops = csr_mask(ep.teacher_op_off, ep.teacher_ops, n);
    et.teacher_devs = csr_mask(ep.teacher_dev_off, ep.teacher_devs, d);
  }
  return et;
}

net_impl::net_impl(const policy_options& o) : opt(o) {
  const int h = o.hidden, p = o.proj, m = o.mlp;
  in = register_module("input_proj", torch::nn::Linear(node_feature_count, h));
  edge1 = register_module("edge1", torch::nn::Linear(edge_feature_count, 32));
  edge2 = register_module("edge2", torch::nn::Linear(32, h * h));
  root = register_module("root", torch::nn::Linear(h, h));
  gru = register_module("gru", torch::nn::GRUCell(h, h));
  sel_proj = register_module("sel_proj", torch::nn::Linear(node_feature_count, p));
  sel1 = register_module("sel1", torch::nn::Linear(p + 3 * h, m));
  sel2 = register_module("sel2", torch::nn::Linear(m, 1));
  plc_dev = register_module("plc_dev", torch::nn::Linear(device_feature_count, p));
  plc_op = register_module("plc_op", torch::nn::Linear(node_feature_count, p));
  plc_w_dev = register_module("plc_w_dev", torch::nn::Linear(torch::nn::LinearOptions(p, m).bias(false)));
  plc_w_op = register_module("plc_w_op", torch::nn::Linear(p + h, m));
  plc_w_sum = register_module("plc_w_sum", torch::nn::Linear(torch::nn::LinearOptions(h, m).bias(false)));
  plc_out = register_module("plc_out", torch::nn::Linear(m, 1));
  // Θ(e) starts near a scaled identity-free random map: shrink the edge network's output layer so
  // messages keep the scale of h.
  torch::NoGradGuard ng;
  edge2->weight.mul_(1.0 / std::sqrt(static_cast<double>(h)));
  edge2->bias.mul_(1.0 / std::sqrt(static_cast<double>(h)));
}

encoded net_impl::encode(const graph_tensors& gt, std::size_t n_ops) {
  const int h = opt.hidden;
  const auto n = static_cast<std::int64_t>(n_ops);
  auto x = gt.x;
  auto hs = torch::relu(in(x));
  const auto e = gt.src.size(0);
  if (e > 0) {
    // Θ(e): [E, h, h], computed once per encode (edge features are static).
    auto theta = edge2(torch::relu(edge1(gt.edge_feat))).view({e, h, h});
    for (int k = 0; k < opt.steps; ++k) {
      auto msg = torch::bmm(theta, hs.index_select(0, gt.src).unsqueeze(2)).squeeze(2);  // [E, h]
      auto agg = torch::mm(gt.agg, msg);                                                   // [N, h]
      hs = gru(torch::relu(agg + root(hs)), hs);
    }
  } else {
    for (int k = 0; k < opt.steps; ++k) hs = gru(torch::relu(root(hs)), hs);
  }
  encoded out;
  auto down = torch::mm(gt.down, hs), up = torch::mm(gt.up, hs);
  auto sel_in = torch::cat({torch::relu(sel_proj(x)), hs, down, up}, 1);
  out.sel_logits = sel2(torch::relu(sel1(sel_in))).squeeze(1);
  out.op_part = plc_w_op(torch::cat({torch::relu(plc_op(x)), hs}, 1));
  out.sum_part = plc_w_sum(hs) / static_cast<double>(std::max<std::int64_t>(n, 1));
  return out;
}

torch::Tensor net_impl::plc_logits(const encoded& e, const episode_tensors& et) {
  const auto t = et.ops.size(0), d = et.dev_valid.size(1);
  auto dev_term = plc_w_dev(torch::relu(plc_dev(et.dev_feat)));  // [T, D, m]
  auto op_term = e.op_part.index_select(0, et.ops).unsqueeze(1);   // [T, 1, m]
  // Σ over ops already on d before step t: exclusive cumulative sum of the chosen contributions.
  auto onehot = torch::one_hot(et.devs, d).to(torch::kFloat).unsqueeze(2);       // [T, D, 1]
  auto contrib = onehot * e.sum_part.index_select(0, et.ops).unsqueeze(1);       // [T, D, m]
  auto before = contrib.cumsum(0) - contrib;
  (void)t;
  return plc_out(torch::relu(dev_term + op_term + before)).squeeze(2);  // [T, D]
}

step_terms net_impl::terms(const encoded& e, const episode_tensors& et, double tau) {
  step_terms st;
  const auto t = et.ops.size(0);
  auto sel = e.sel_logits.unsqueeze(0).expand({t, e.sel_logits.size(0)}) / tau;
  std::tie(st.sel_lp, st.sel_ent) = masked_log_softmax(sel, et.ready_mask);
  std::tie(st.plc_lp, st.plc_ent) = masked_log_softmax(plc_logits(e, et) / tau, et.dev_valid);
  st.sel_taken = st.sel_lp.gather(1, et.ops.unsqueeze(1)).squeeze(1);
  st.plc_taken = st.plc_lp.gather(1, et.devs.unsqueeze(1)).squeeze(1);
  return st;
}

}  // namespace doppler::learner::detail
