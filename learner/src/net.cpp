// The policy network (net.hpp).
#include "net.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
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

}  // namespace

std::pair<torch::Tensor, torch::Tensor> masked_log_softmax(const torch::Tensor& logits,
                                                           const torch::Tensor& mask) {
  auto lp = torch::log_softmax(logits.masked_fill(mask.logical_not(), -INFINITY), 1);
  auto safe = lp.masked_fill(mask.logical_not(), 0.0);
  auto ent = -(safe.exp().masked_fill(mask.logical_not(), 0.0) * safe).sum(1);
  return {safe, ent};
}

graph_tensors make_graph_tensors(const graph_features& f) {
  graph_tensors gt;
  const auto n = static_cast<std::int64_t>(f.ops);
  gt.x = torch::from_blob(const_cast<float*>(f.z.data()), {n, node_feature_count}, torch::kFloat).clone();
  // Edge types: distinct feature rows, in order of first appearance; messages sorted by type.
  const auto e = static_cast<std::int64_t>(f.msg_src.size());
  constexpr int ef = edge_feature_count;
  std::map<std::array<float, ef>, std::int64_t> types;
  std::vector<std::int64_t> type_of(static_cast<std::size_t>(e));
  std::vector<float> type_rows;
  for (std::int64_t i = 0; i < e; ++i) {
    std::array<float, ef> row;
    std::copy_n(&f.msg_feat[i * ef], ef, row.begin());
    auto [it, fresh] = types.emplace(row, static_cast<std::int64_t>(types.size()));
    if (fresh) type_rows.insert(type_rows.end(), row.begin(), row.end());
    type_of[i] = it->second;
  }
  const auto u = static_cast<std::int64_t>(types.size());
  gt.edge_types = torch::tensor(torch::ArrayRef<float>(type_rows), torch::kFloat).view({u, ef});
  std::vector<std::int64_t> order(static_cast<std::size_t>(e));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return type_of[a] < type_of[b]; });
  gt.type_off.assign(static_cast<std::size_t>(u + 1), 0);
  for (auto t : type_of) ++gt.type_off[t + 1];
  for (std::int64_t t = 0; t < u; ++t) gt.type_off[t + 1] += gt.type_off[t];
  std::vector<std::int64_t> src(e), dst(e), eidx(e), sorted_type(e);
  std::vector<double> indeg(f.ops, 0.0);
  for (auto d : f.msg_dst) indeg[d] += 1;
  std::vector<float> w(static_cast<std::size_t>(e));
  for (std::int64_t i = 0; i < e; ++i) {
    const auto k = order[i];
    src[i] = f.msg_src[k];
    dst[i] = f.msg_dst[k];
    eidx[i] = i;
    sorted_type[i] = type_of[k];
    w[i] = static_cast<float>(1.0 / indeg[f.msg_dst[k]]);
  }
  gt.src = long_tensor(src);
  gt.edge_type = long_tensor(sorted_type);
  gt.agg = sparse(dst, eidx, w, n, e);
  gt.nbr_mean = sparse(dst, src, w, n, n);  // coalesce sums parallel messages
  // Pointer jumping: jump 0 is the next op on the path (the sentinel n after its end).
  gt.path_scale = 1.0f / static_cast<float>(f.max_path_ops);
  auto jumps = [&](const std::vector<std::uint32_t>& next) {
    std::vector<torch::Tensor> out;
    std::vector<std::int64_t> j(static_cast<std::size_t>(n + 1), n);
    for (std::int64_t v = 0; v < n; ++v) j[v] = next[v] == v ? n : next[v];
    for (std::uint64_t span = 1; span < f.max_path_ops; span *= 2) {
      out.push_back(long_tensor(j));
      std::vector<std::int64_t> j2(j.size());
      for (std::size_t v = 0; v < j.size(); ++v) j2[v] = j[j[v]];
      j.swap(j2);
    }
    return out;
  };
  gt.down_jump = jumps(f.down_next);
  gt.up_jump = jumps(f.up_prev);
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
  if (ep.pair_feat.empty()) et.ready_mask = csr_mask(ep.ready_off, ep.ready, n);
  std::vector<std::int64_t> ops(ep.result.order.begin(), ep.result.order.end()), devs(ops.size());
  for (std::size_t s = 0; s < ops.size(); ++s) devs[s] = ep.result.device[ep.result.order[s]];
  et.ops = long_tensor(ops);
  et.devs = long_tensor(devs);
  et.dev_feat = torch::from_blob(const_cast<float*>(ep.dev_feat.data()), {t, d, device_feature_count},
                                 torch::kFloat).clone();
  et.dev_valid = torch::from_blob(const_cast<std::uint8_t*>(ep.dev_valid.data()), {t, d}, torch::kUInt8)
                     .to(torch::kBool);
  if (!ep.pair_feat.empty()) {  // joint: every ready entry, padded per step
    const auto k = static_cast<std::int64_t>(ep.ready.size());
    std::int64_t r = 1;
    for (std::int64_t s = 0; s < t; ++s) r = std::max<std::int64_t>(r, ep.ready_off[s + 1] - ep.ready_off[s]);
    et.pair_feat = torch::from_blob(const_cast<float*>(ep.pair_feat.data()), {k, d, device_feature_count},
                                    torch::kFloat).clone();
    et.pair_valid = torch::from_blob(const_cast<std::uint8_t*>(ep.pair_valid.data()), {k, d}, torch::kUInt8)
                        .to(torch::kBool);
    std::vector<std::int64_t> pop(ep.ready.begin(), ep.ready.end()), pstep(static_cast<std::size_t>(k)),
        pad(static_cast<std::size_t>(t * r), k), taken(static_cast<std::size_t>(t));
    auto mask = torch::zeros({t, r * d}, torch::kBool);
    auto ma = mask.accessor<bool, 2>();
    for (std::int64_t s = 0; s < t; ++s)
      for (std::uint32_t i = ep.ready_off[s]; i < ep.ready_off[s + 1]; ++i) {
        const std::int64_t pos = i - ep.ready_off[s];
        pstep[i] = s;
        pad[s * r + pos] = i;
        for (std::int64_t j = 0; j < d; ++j) ma[s][pos * d + j] = ep.pair_valid[i * d + j] != 0;
        if (ep.ready[i] == ops[s]) taken[s] = pos * d + devs[s];
      }
    et.pair_op = long_tensor(pop);
    et.pair_step = long_tensor(pstep);
    et.pad_idx = long_tensor(pad).view({t, r});
    et.pad_mask = mask;
    et.pair_taken = long_tensor(taken);
    if (!ep.teacher_op_off.empty()) {
      et.teacher_pairs = torch::zeros({t, r * d}, torch::kBool);
      auto ta = et.teacher_pairs.accessor<bool, 2>();
      for (std::int64_t s = 0; s < t; ++s) {
        auto b = ep.ready.begin() + ep.ready_off[s], e = ep.ready.begin() + ep.ready_off[s + 1];
        for (std::uint32_t i = ep.teacher_op_off[s]; i < ep.teacher_op_off[s + 1]; ++i) {
          const auto pos = std::lower_bound(b, e, ep.teacher_ops[i]) - b;
          ta[s][pos * d + ep.teacher_devs[i]] = true;
        }
      }
    }
  } else if (!ep.teacher_op_off.empty()) {
    et.teacher_ops = csr_mask(ep.teacher_op_off, ep.teacher_ops, n);
    et.teacher_devs = csr_mask(ep.teacher_dev_off, ep.teacher_devs, d);
  }
  if (ep.dynamic_sel) {  // every ready entry, and the sparse rows of non-zero SEL features
    const auto k = static_cast<std::int64_t>(ep.ready.size());
    const auto r = static_cast<std::int64_t>(ep.sel_rows.size());
    if (!ep.sel_rows_consistent()) throw error(errc::bad_argument, "learner: the episode's SEL features do not match its ready sets");
    std::vector<std::int64_t> rop(ep.ready.begin(), ep.ready.end()), rstep(static_cast<std::size_t>(k)),
        rows(ep.sel_rows.begin(), ep.sel_rows.end());
    for (std::int64_t s = 0; s < t; ++s)
      for (std::uint32_t i = ep.ready_off[s]; i < ep.ready_off[s + 1]; ++i) rstep[i] = s;
    et.ready_op = long_tensor(rop);
    et.ready_step = long_tensor(rstep);
    et.sel_rows = long_tensor(rows);
    et.sel_feat = r == 0 ? torch::zeros({0, sel_feature_count})
                         : torch::from_blob(const_cast<float*>(ep.sel_feat.data()), {r, sel_feature_count}, torch::kFloat).clone();
  }
  return et;
}

net_impl::net_impl(const policy_options& o) : opt(o) {
  const int h = o.hidden, p = o.proj, m = o.mlp;
  if (is_baseline(o.kind)) {
    baseline = register_module("baseline", baseline_net(o));
    return;
  }
  in = register_module("input_proj", torch::nn::Linear(node_feature_count, h));
  edge1 = register_module("edge1", torch::nn::Linear(edge_feature_count, 32));
  edge2 = register_module("edge2", torch::nn::Linear(32, h * h));
  root = register_module("root", torch::nn::Linear(h, h));
  gru = register_module("gru", torch::nn::GRUCell(h, h));
  if (o.kind == policy_kind::dual) {  // the single-policy ablation has no SEL head
    const int sel_in = node_feature_count + (o.hint.empty() ? 0 : 1);  // a hint adds its order rank
    sel_proj = register_module("sel_proj", torch::nn::Linear(sel_in, p));
    sel1 = register_module("sel1", torch::nn::Linear(p + 3 * h, m));
    sel2 = register_module("sel2", torch::nn::Linear(m, 1));
  }
  plc_dev = register_module("plc_dev", torch::nn::Linear(o.device_inputs(), p));
  plc_op = register_module("plc_op", torch::nn::Linear(node_feature_count, p));
  plc_w_dev = register_module("plc_w_dev", torch::nn::Linear(torch::nn::LinearOptions(p, m).bias(false)));
  plc_w_op = register_module("plc_w_op", torch::nn::Linear(p + h, m));
  plc_w_sum = register_module("plc_w_sum", torch::nn::Linear(torch::nn::LinearOptions(h, m).bias(false)));
  plc_out = register_module("plc_out", torch::nn::Linear(m, 1));
  // Last, so every other module's initial weights are the static-SEL policy's of the same seed.
  if (o.kind == policy_kind::dual && o.dynamic_sel)
    sel_dyn = register_module("sel_dyn", torch::nn::Linear(torch::nn::LinearOptions(sel_feature_count, m).bias(false)));
  // Θ(e) starts near a scaled identity-free random map: shrink the edge network's output layer so
  // messages keep the scale of h.
  torch::NoGradGuard ng;
  // Dynamic SEL starts as the paper's static SEL (W_s = 0); its gradient is not zero, so the
  // per-step term grows where the loss asks for it.
  if (sel_dyn) sel_dyn->weight.zero_();
  edge2->weight.mul_(1.0 / std::sqrt(static_cast<double>(h)));
  edge2->bias.mul_(1.0 / std::sqrt(static_cast<double>(h)));
}

torch::Tensor net_impl::read_columns(const torch::Tensor& feat) const {
  const auto cols = opt.device_columns();
  if (static_cast<int>(cols.size()) == device_feature_count) return feat;
  return feat.index_select(2, torch::tensor(std::vector<std::int64_t>(cols.begin(), cols.end())));
}

torch::Tensor net_impl::path_sum(const torch::Tensor& hs, const std::vector<torch::Tensor>& jump, float scale) {
  const auto n = hs.size(0);
  auto s = torch::cat({hs, torch::zeros({1, hs.size(1)})}, 0);  // row n: the sentinel
  for (const auto& j : jump) s = s + s.index_select(0, j);
  return s.slice(0, 0, n) * scale;
}

encoded net_impl::encode(const graph_tensors& gt, std::size_t n_ops) {
  const int h = opt.hidden;
  const auto n = static_cast<std::int64_t>(n_ops);
  auto x = gt.x;
  auto hs = torch::relu(in(x));
  const auto e = gt.src.size(0);
  if (e > 0) {
    // Θ per edge type: [U, h, h], computed once per encode (edge features are static).
    const auto u = gt.edge_types.size(0);
    auto theta = edge2(torch::relu(edge1(gt.edge_types))).view({u, h, h});
    // Few types (the usual case: repeated layers): one product per type. Many: Θ per edge and bmm.
    const bool grouped = u <= 64;
    auto theta_e = grouped ? torch::Tensor() : theta.index_select(0, gt.edge_type);
    for (int k = 0; k < opt.steps; ++k) {
      auto hsrc = hs.index_select(0, gt.src);  // [E, h]
      torch::Tensor msg;
      if (grouped) {
        std::vector<torch::Tensor> parts;
        parts.reserve(static_cast<std::size_t>(u));
        for (std::int64_t t = 0; t < u; ++t)
          parts.push_back(torch::mm(hsrc.slice(0, gt.type_off[t], gt.type_off[t + 1]), theta[t].t()));
        msg = torch::cat(parts, 0);
      } else {
        msg = torch::bmm(theta_e, hsrc.unsqueeze(2)).squeeze(2);
      }
      auto agg = torch::mm(gt.agg, msg);  // [N, h]
      hs = gru(torch::relu(agg + root(hs)), hs);
    }
  } else {
    for (int k = 0; k < opt.steps; ++k) hs = gru(torch::relu(root(hs)), hs);
  }
  encoded out;
  if (opt.kind == policy_kind::dual) {
    auto down = path_sum(hs, gt.down_jump, gt.path_scale), up = path_sum(hs, gt.up_jump, gt.path_scale);
    auto sel_x = opt.hint.empty() ? x : torch::cat({x, gt.hint_rank}, 1);
    auto sel_in = torch::cat({torch::relu(sel_proj(sel_x)), hs, down, up}, 1);
    if (opt.dynamic_sel) {
      out.sel_hidden = sel1(sel_in);
      out.sel_logits = torch::zeros({n});
    } else {
      out.sel_logits = sel2(torch::relu(sel1(sel_in))).squeeze(1);
    }
  } else {
    out.sel_logits = torch::zeros({n});
  }
  out.op_part = plc_w_op(torch::cat({torch::relu(plc_op(x)), hs}, 1));
  out.sum_part = plc_w_sum(hs) / static_cast<double>(std::max<std::int64_t>(n, 1));
  return out;
}

torch::Tensor net_impl::plc_logits(const encoded& e, const episode_tensors& et) {
  const auto t = et.ops.size(0), d = et.dev_valid.size(1);
  auto dev_term = plc_w_dev(torch::relu(plc_dev(read_columns(et.dev_feat))));  // [T, D, m]
  auto op_term = e.op_part.index_select(0, et.ops).unsqueeze(1);   // [T, 1, m]
  // Σ over ops already on d before step t: exclusive cumulative sum of the chosen contributions.
  auto onehot = torch::one_hot(et.devs, d).to(torch::kFloat).unsqueeze(2);       // [T, D, 1]
  auto contrib = onehot * e.sum_part.index_select(0, et.ops).unsqueeze(1);       // [T, D, m]
  auto before = contrib.cumsum(0) - contrib;
  (void)t;
  auto logits = plc_out(torch::relu(dev_term + op_term + before)).squeeze(2);  // [T, D]
  if (e.plc_bias.defined()) logits = logits + e.plc_bias.index_select(0, et.ops);
  return logits;
}

std::pair<torch::Tensor, torch::Tensor> net_impl::joint_log_probs(const encoded& e, const episode_tensors& et,
                                                                  double tau) {
  const auto t = et.ops.size(0), d = et.dev_valid.size(1), r = et.pad_idx.size(1);
  auto dev_term = plc_w_dev(torch::relu(plc_dev(read_columns(et.pair_feat))));  // [K, D, m]
  auto op_term = e.op_part.index_select(0, et.pair_op).unsqueeze(1);         // [K, 1, m]
  auto onehot = torch::one_hot(et.devs, d).to(torch::kFloat).unsqueeze(2);   // [T, D, 1]
  auto contrib = onehot * e.sum_part.index_select(0, et.ops).unsqueeze(1);   // [T, D, m]
  auto before = (contrib.cumsum(0) - contrib).index_select(0, et.pair_step); // [K, D, m]
  auto logits = plc_out(torch::relu(dev_term + op_term + before)).squeeze(2) / tau;  // [K, D]
  auto padded = torch::cat({logits, torch::zeros({1, d})}, 0).index_select(0, et.pad_idx.flatten()).view({t, r * d});
  return masked_log_softmax(padded, et.pad_mask);
}

torch::Tensor net_impl::sel_step_logits(const encoded& e, const episode_tensors& et) {
  const auto t = et.ops.size(0), n = e.sel_logits.size(0);
  if (!e.sel_hidden.defined()) return e.sel_logits.unsqueeze(0).expand({t, n});
  if (!et.ready_op.defined())
    throw error(errc::bad_argument, "learner: the episode has no SEL features (recorded by a policy without dynamic SEL)");
  // Each ready entry's logit: the all-zero-features one per op, replaced on the sparse rows by the
  // full term, plus the offsets; scattered into a [T, N] grid (entries not ready stay 0: masked).
  auto entry = sel2(torch::relu(e.sel_hidden)).squeeze(1).index_select(0, et.ready_op);  // [K]
  if (et.sel_rows.numel() > 0) {
    auto ops = et.ready_op.index_select(0, et.sel_rows);
    auto dyn = sel2(torch::relu(e.sel_hidden.index_select(0, ops) + sel_dyn(et.sel_feat))).squeeze(1);  // [R]
    entry = entry.index_copy(0, et.sel_rows, dyn);
  }
  entry = entry + e.sel_logits.index_select(0, et.ready_op);
  return torch::zeros({t * n}).index_copy(0, et.ready_step * n + et.ready_op, entry).view({t, n});
}

step_terms net_impl::terms(const encoded& e, const episode_tensors& et, double tau) {
  step_terms st;
  const auto t = et.ops.size(0);
  if (opt.kind == policy_kind::joint) {
    std::tie(st.sel_lp, st.sel_ent) = joint_log_probs(e, et, tau);
    st.sel_taken = st.sel_lp.gather(1, et.pair_taken.unsqueeze(1)).squeeze(1);
    st.plc_lp = torch::zeros({t, et.dev_valid.size(1)});
    st.plc_taken = torch::zeros({t});
    st.plc_ent = torch::zeros({t});
    return st;
  }
  auto sel = sel_step_logits(e, et) / tau;
  std::tie(st.sel_lp, st.sel_ent) = masked_log_softmax(sel, et.ready_mask);
  std::tie(st.plc_lp, st.plc_ent) = masked_log_softmax(plc_logits(e, et) / tau, et.dev_valid);
  st.sel_taken = st.sel_lp.gather(1, et.ops.unsqueeze(1)).squeeze(1);
  st.plc_taken = st.plc_lp.gather(1, et.devs.unsqueeze(1)).squeeze(1);
  return st;
}

}  // namespace doppler::learner::detail
