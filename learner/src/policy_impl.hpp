#pragma once
// policy::impl and what policy.cpp (rollouts) and policy_update.cpp (updates, checkpoints) share.
// LibTorch: include only from learner/src.
#include "net.hpp"

#include <doppler/learner/policy.hpp>
#include <doppler/runtime/cpu_kernels.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/fnv1a.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace doppler::learner {

namespace detail {

/// A tensor's bytes into `h` ("-" for an undefined one): the checkpoint checksum.
inline void hash_tensor(fnv1a& h, const torch::Tensor& t) {
  if (!t.defined()) return h.bytes("-", 1);
  const torch::Tensor c = t.detach().contiguous();
  h.bytes(c.data_ptr(), c.nbytes());
}

/// Copies a tensor's values into a float vector.
inline std::vector<float> to_vector(const torch::Tensor& t) {
  auto c = t.detach().contiguous().to(torch::kFloat);
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

/// Head ablations: the heuristic head's terms are zeroed, so neither loss nor log π sees them.
inline void mask_ablation(detail::step_terms& st, policy_ablation a) {
  if (a == policy_ablation::plc_only) {
    st.sel_lp = torch::zeros_like(st.sel_lp);
    st.sel_taken = torch::zeros_like(st.sel_taken);
    st.sel_ent = torch::zeros_like(st.sel_ent);
  } else if (a == policy_ablation::sel_only) {
    st.plc_lp = torch::zeros_like(st.plc_lp);
    st.plc_taken = torch::zeros_like(st.plc_taken);
    st.plc_ent = torch::zeros_like(st.plc_ent);
  }
}

/// γ^(T−1−t) for t = 0..T−1: the episode's reward discounted back to earlier steps.
inline torch::Tensor discounts(std::int64_t t, double gamma) {
  return torch::pow(torch::full({t}, gamma, torch::kDouble), torch::arange(t - 1, -1, -1, torch::kDouble))
      .to(torch::kFloat);
}

}  // namespace detail

/// The encoder's outputs for one problem as plain floats, for the per-step rollout loop.
struct rollout_cache {
  std::uint64_t version = 0;
  std::vector<float> sel, op_part, sum_part;          // [N], [N×m], [N×m]
  std::vector<float> dev_w, dev_b, w_dev, out_w;      // [p×F], [p], [m×p], [m]
  float out_b = 0;
  std::vector<float> gdp;                             // gdp: device logits [N×D]
  std::vector<float> plc_bias;                        // active search: PLC offsets [N×D], or empty
  // dynamic_sel: SEL's first layer over the static input [N×m], W_s [m×sel_feature_count], w, c
  // (sel then holds the active-search offsets only); empty otherwise.
  std::vector<float> sel_hidden, sel_dyn_w, sel_out_w;
  float sel_out_b = 0;
  std::vector<double> sel_at_zero;  // [N]: Σ_j w_j relu(hidden_vj), the per-step sum when every feature is 0
};

using detail::to_vector;

/// Active search (policy_options::active_search): a problem's logit offsets, SEL [N] and PLC
/// [N, D], and their own Adam.
struct instance_offsets {
  torch::Tensor sel, plc;
  std::unique_ptr<torch::optim::Adam> adam;
};

struct policy::impl {
  explicit impl(const policy_options& o) : opt(o) {
    torch::set_num_threads(1);
    torch::manual_seed(o.seed);
    model = detail::net(o);
    adam = std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(1e-3));
  }

  /// Every pass of the network starts here: OpenBLAS (LibTorch's CPU matmuls) is pinned to one
  /// thread first, so the numbers do not depend on what else ran in the process.
  const detail::graph_tensors& tensors(const problem& pb) {
    cpu::pin_blas_to_one_thread();
    auto it = graphs.find(pb.key());
    if (it == graphs.end()) {
      if (graphs.size() > 16) graphs.clear();
      auto gt = detail::make_graph_tensors(pb.features());
      if (!opt.hint.empty() && opt.kind == policy_kind::dual) {
        const placement& h = *hint_for(pb);
        const std::size_t n = pb.g().size();
        std::vector<float> rank(n, 0.0f);
        for (std::size_t i = 0; i < h.order.size(); ++i)
          rank[h.order[i]] = static_cast<float>(i) / static_cast<float>(std::max<std::size_t>(n - 1, 1));
        gt.hint_rank = torch::tensor(torch::ArrayRef<float>(rank), torch::kFloat).view({static_cast<std::int64_t>(n), 1});
      }
      it = graphs.emplace(pb.key(), std::move(gt)).first;
    }
    return it->second;
  }

  /// New zero offsets for a problem of n ops and d devices.
  instance_offsets make_offsets(std::int64_t n, std::int64_t d) const {
    instance_offsets o;
    o.sel = torch::zeros({n}).set_requires_grad(true);
    o.plc = torch::zeros({n, d}).set_requires_grad(true);
    o.adam = std::make_unique<torch::optim::Adam>(std::vector<torch::Tensor>{o.sel, o.plc},
                                                  torch::optim::AdamOptions(opt.active_search));
    return o;
  }

  /// The encoder's outputs for pb, with pb's active-search offsets when it has some (created by
  /// the first update on pb when active search is on; rollouts and placements create none).
  detail::encoded encode(const problem& pb) {
    auto e = model->encode(tensors(pb), pb.g().size());
    if (opt.kind != policy_kind::dual) return e;
    auto it = offsets.find(pb.fingerprint());
    if (it == offsets.end()) {
      if (!(opt.active_search > 0) || !torch::GradMode::is_enabled()) return e;
      it = offsets.emplace(pb.fingerprint(), make_offsets(static_cast<std::int64_t>(pb.g().size()),
                                                          static_cast<std::int64_t>(pb.c().device_count()))).first;
    }
    e.sel_logits = e.sel_logits + it->second.sel;
    e.plc_bias = it->second.plc;
    return e;
  }

  /// The hint placement of pb (policy::hint_for).
  const placement* hint_for(const problem& pb);

  const rollout_cache& cached(const problem& pb) {
    auto& c = caches[pb.key()];
    if (c.version == version && !c.sel.empty()) return c;
    if (caches.size() > 16) {
      caches.clear();
      return cached(pb);
    }
    torch::NoGradGuard ng;
    c.version = version;
    if (is_baseline(opt.kind)) {
      c.sel.assign(1, 0.0f);  // marks the entry filled
      if (opt.kind == policy_kind::gdp) c.gdp = to_vector(model->baseline->gdp_logits(tensors(pb), pb.c().device_count()));
      return c;
    }
    auto e = encode(pb);
    c.sel = to_vector(e.sel_logits);
    c.plc_bias = e.plc_bias.defined() ? to_vector(e.plc_bias) : std::vector<float>();
    c.op_part = to_vector(e.op_part);
    c.sum_part = to_vector(e.sum_part);
    c.dev_w = to_vector(model->plc_dev->weight);
    c.dev_b = to_vector(model->plc_dev->bias);
    c.w_dev = to_vector(model->plc_w_dev->weight);
    c.out_w = to_vector(model->plc_out->weight);
    c.out_b = model->plc_out->bias.item<float>();
    if (e.sel_hidden.defined()) {
      c.sel_hidden = to_vector(e.sel_hidden);
      c.sel_dyn_w = to_vector(model->sel_dyn->weight);
      c.sel_out_w = to_vector(model->sel2->weight);
      c.sel_out_b = model->sel2->bias.item<float>();
      // Most ready ops of a wide graph (its weights: no producers, ready from the start) have all
      // features 0 at most steps; their logit is this one, not a per-step MLP (bench_learner).
      const auto m = static_cast<std::size_t>(opt.mlp);
      const std::size_t n = c.sel_hidden.size() / m;
      c.sel_at_zero.assign(n, 0.0);
      for (std::size_t v = 0; v < n; ++v)
        for (std::size_t j = 0; j < m; ++j)
          c.sel_at_zero[v] += static_cast<double>(c.sel_out_w[j]) * std::max(c.sel_hidden[v * m + j], 0.0f);
    }
    return c;
  }

  /// The loss of steps [t0, t1) of episode i, given log π over devices [S, D] (0 where masked), the
  /// entropy per step [S] and the episode's tensors.
  using baseline_loss = std::function<torch::Tensor(std::size_t i, const torch::Tensor& lp,
                                                    const torch::Tensor& ent, const detail::episode_tensors& et,
                                                    std::int64_t t0, std::int64_t t1)>;

  /// placeto / gdp: Σ over episodes and steps of `loss_of`, divided by each episode's steps and by
  /// the episodes. With `train`, one optimizer step (placeto: backward per chunk of steps, so memory
  /// stays O(chunk × N × H) whatever the graph). Returns the loss value.
  double baseline_pass(const problem& pb, std::span<const episode> eps, const baseline_loss& loss_of, bool train) {
    const auto& gt = tensors(pb);
    const std::size_t n = pb.g().size(), n_dev = pb.c().device_count();
    auto& net = model->baseline;
    if (train) adam->zero_grad();
    std::optional<torch::NoGradGuard> ng;
    if (!train) ng.emplace();
    const bool placeto = opt.kind == policy_kind::placeto;
    torch::Tensor all = placeto ? torch::Tensor() : net->gdp_logits(gt, n_dev);
    torch::Tensor acc = torch::zeros({});
    double value = 0;
    const auto chunk = static_cast<std::int64_t>(std::max<std::size_t>(1, 32768 / std::max<std::size_t>(n, 1)));
    for (std::size_t i = 0; i < eps.size(); ++i) {
      const auto& ep = eps[i];
      const auto t = static_cast<std::int64_t>(ep.steps());
      auto et = detail::make_episode_tensors(ep, n, n_dev);
      const double scale = 1.0 / (static_cast<double>(std::max<std::int64_t>(t, 1)) * static_cast<double>(eps.size()));
      for (std::int64_t t0 = 0; t0 < t; t0 += placeto ? chunk : t) {
        const std::int64_t t1 = placeto ? std::min(t, t0 + chunk) : t;
        auto logits = placeto ? net->placeto_logits(gt, detail::make_placeto_state(ep.result.order, ep.result.device,
                                                                                    n_dev, t0, t1), n_dev)
                              : all.index_select(0, et.ops.slice(0, t0, t1));
        auto [lp, ent] = detail::masked_log_softmax(logits / ep.temperature, et.dev_valid.slice(0, t0, t1));
        auto l = loss_of(i, lp, ent, et, t0, t1) * scale;
        value += l.item<double>();
        if (train && placeto) l.backward();
        else acc = acc + l;
      }
    }
    if (train) {
      if (!placeto) acc.backward();
      clip_gradient();
      adam->step();
      ++version;
    }
    return value;
  }

  /// Clips the gradient to norm 1. A non-finite norm (a NaN or inf loss or gradient) is an error
  /// before Adam would write NaN into every parameter.
  void clip_gradient() {
    const double norm = torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    if (!std::isfinite(norm))
      throw error(errc::internal, "learner: an update's gradient is not finite (norm " + std::to_string(norm) +
                                      "); the step is refused, the parameters are those before it");
  }

  void step(torch::Tensor loss) {
    adam->zero_grad();
    // Offsets' gradients are reset to undefined, not zeroed, so only the offsets this loss used
    // get a step (Adam skips an undefined gradient but would move a zero one by its momentum).
    for (auto& [fp, o] : offsets) {
      o.sel.mutable_grad().reset();
      o.plc.mutable_grad().reset();
    }
    loss.backward();
    clip_gradient();
    adam->step();
    for (auto& [fp, o] : offsets)
      if (o.sel.grad().defined() || o.plc.grad().defined()) o.adam->step();
    ++version;
  }

  policy_options opt;
  detail::net model{nullptr};
  std::unique_ptr<torch::optim::Adam> adam;
  std::uint64_t version = 1;
  int ppo_epochs = 0;  // Adam steps of the last ppo_update (policy::last_ppo_epochs)
  std::unordered_map<std::uint64_t, detail::graph_tensors> graphs;
  std::unordered_map<std::uint64_t, rollout_cache> caches;
  std::unordered_map<std::uint64_t, placement> hints;  // policy_options::hint's placement per problem
  std::map<std::uint64_t, instance_offsets> offsets;  // active search, by problem::fingerprint (ordered: checkpoints)
};

}  // namespace doppler::learner
