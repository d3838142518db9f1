// The Placeto-like and GDP-like baselines' network (net.hpp: baseline_net).
#include "net.hpp"

#include <doppler/runtime/error.hpp>

#include <cmath>

namespace doppler::learner::detail {

placeto_state make_placeto_state(std::span<const op_index> order, std::span<const device_index> device,
                                 std::size_t n_dev, std::size_t t0, std::size_t t1) {
  const std::size_t n = order.size(), s = t1 - t0;
  std::vector<std::int64_t> pos(n), dev(n * s), ops(s);
  std::vector<float> flags(n * s * 2, 0.0f);
  for (std::size_t t = 0; t < n; ++t) pos[order[t]] = static_cast<std::int64_t>(t);
  for (std::size_t v = 0; v < n; ++v) {
    const auto init = static_cast<std::int64_t>(placeto_initial_device(v, n_dev));
    for (std::size_t j = 0; j < s; ++j) {
      const auto t = static_cast<std::int64_t>(t0 + j);
      const bool visited = pos[v] < t;
      dev[v * s + j] = visited ? static_cast<std::int64_t>(device[v]) : init;
      flags[(v * s + j) * 2] = visited ? 1.0f : 0.0f;
      flags[(v * s + j) * 2 + 1] = pos[v] == t ? 1.0f : 0.0f;
    }
  }
  for (std::size_t j = 0; j < s; ++j) ops[j] = order[t0 + j];
  const auto ni = static_cast<std::int64_t>(n), si = static_cast<std::int64_t>(s);
  placeto_state st;
  st.dev = torch::tensor(torch::ArrayRef<std::int64_t>(dev), torch::kLong).view({ni, si});
  st.flags = torch::tensor(torch::ArrayRef<float>(flags), torch::kFloat).view({ni, si, 2});
  st.ops = torch::tensor(torch::ArrayRef<std::int64_t>(ops), torch::kLong);
  return st;
}

baseline_net_impl::baseline_net_impl(const policy_options& po) : opt(po) {
  const int h = po.hidden, m = po.mlp;
  const bool placeto = po.kind == policy_kind::placeto;
  const auto nd = static_cast<std::int64_t>(max_baseline_devices);
  in = register_module("input_proj",
                       torch::nn::Linear(node_feature_count + (placeto ? 2 : gdp_position_features), h));
  if (placeto) dev_in = register_module("dev_in", torch::nn::Embedding(nd, h));
  for (int i = 0; i < po.steps; ++i) {
    sage_self.push_back(register_module("self" + std::to_string(i), torch::nn::Linear(h, h)));
    sage_nbr.push_back(register_module("nbr" + std::to_string(i), torch::nn::Linear(torch::nn::LinearOptions(h, h).bias(false))));
  }
  if (!placeto) {
    att_q = register_module("q", torch::nn::Linear(h, h));
    att_k = register_module("k", torch::nn::Linear(h, h));
    att_v = register_module("v", torch::nn::Linear(h, h));
    att_o = register_module("o", torch::nn::Linear(h, h));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  }
  w_h = register_module("w_h", torch::nn::Linear(h, m));
  if (placeto) {
    w_g = register_module("w_g", torch::nn::Linear(torch::nn::LinearOptions(h, m).bias(false)));
    w_p = register_module("w_p", torch::nn::Linear(torch::nn::LinearOptions(h, m).bias(false)));
  }
  dev_out = register_module("dev_out", torch::nn::Embedding(nd, m));
  if (placeto) out = register_module("out", torch::nn::Linear(m, 1));
}

/// K GraphSAGE layers over h laid out [N, ..., H] (node-major: one sparse product for every step).
torch::Tensor baseline_net_impl::sage(const graph_tensors& gt, torch::Tensor h) {
  const auto n = h.size(0);
  for (std::size_t i = 0; i < sage_self.size(); ++i) {
    auto nb = torch::mm(gt.nbr_mean, h.reshape({n, -1})).view(h.sizes());
    h = torch::relu(sage_self[i](h) + sage_nbr[i](nb));
  }
  return h;
}

namespace {

void check_devices(std::size_t n_dev) {
  if (n_dev == 0 || n_dev > max_baseline_devices)
    throw error(errc::bad_argument, "learner: placeto/gdp policies place on 1 to " +
                                        std::to_string(max_baseline_devices) + " devices, not " +
                                        std::to_string(n_dev));
}

/// GDP's stand-in for its node-id features: sin and cos of 2π·2^k·v/N for k < 4 (v = the op's index).
torch::Tensor position_features(std::int64_t n) {
  auto v = torch::arange(n, torch::kFloat).unsqueeze(1) / static_cast<double>(std::max<std::int64_t>(n, 1));
  auto freq = torch::pow(2.0, torch::arange(gdp_position_features / 2, torch::kFloat)).unsqueeze(0) * (2 * M_PI);
  return torch::cat({torch::sin(v * freq), torch::cos(v * freq)}, 1);  // [N, 8]
}

}  // namespace

torch::Tensor baseline_net_impl::gdp_logits(const graph_tensors& gt, std::size_t n_dev) {
  check_devices(n_dev);
  auto h = sage(gt, torch::relu(in(torch::cat({gt.x, position_features(gt.x.size(0))}, 1))));  // [N, H]
  const double scale = 1.0 / std::sqrt(static_cast<double>(opt.hidden));
  auto att = torch::softmax(torch::mm(att_q(h), att_k(h).t()) * scale, 1);  // [N, N]
  h = norm(h + att_o(torch::mm(att, att_v(h))));  // post-norm, as in a transformer block
  // GDP's output layer: a linear map to the device logits, one row of E_out per device, no bias.
  auto e = dev_out->weight.slice(0, 0, static_cast<std::int64_t>(n_dev));  // [D, m]
  // Centred over the ops: without it the component every op shares dominates and the greedy (argmax)
  // placement of a barely trained policy puts every op on the same device.
  auto r = torch::relu(w_h(h));
  return torch::mm(r - r.mean(0, true), e.t()) / std::sqrt(static_cast<double>(opt.mlp));  // [N, D]
}

torch::Tensor baseline_net_impl::placeto_logits(const graph_tensors& gt, const placeto_state& st,
                                                std::size_t n_dev) {
  check_devices(n_dev);
  const auto n = gt.x.size(0), s = st.ops.size(0), d = static_cast<std::int64_t>(n_dev);
  auto x = torch::cat({gt.x.unsqueeze(1).expand({n, s, gt.x.size(1)}), st.flags}, 2);  // [N, S, F+2]
  auto h = sage(gt, torch::relu(in(x) + dev_in(st.dev)));                                // [N, S, H]
  auto steps = torch::arange(s, torch::kLong);
  auto hv = h.index({st.ops, steps});                                                    // [S, H]
  auto g = h.mean(0);                                                                    // [S, H]
  auto onehot = torch::one_hot(st.dev, d).to(torch::kFloat);                             // [N, S, D]
  auto pool = torch::einsum("nsd,nsh->sdh", {onehot, h}) / static_cast<double>(n);    // [S, D, H]
  auto e = dev_out->weight.slice(0, 0, d);                                               // [D, m]
  auto pre = (w_h(hv) + w_g(g)).unsqueeze(1) + w_p(pool) + e.unsqueeze(0);               // [S, D, m]
  return out(torch::relu(pre)).squeeze(2);                                               // [S, D]
}

}  // namespace doppler::learner::detail
