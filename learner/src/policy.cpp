// The dual policy: cached encoding, autograd-free rollouts, batched updates, checkpoints (policy.hpp).
#include "net.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <unordered_map>

namespace doppler::learner {

namespace {

std::atomic<std::uint64_t> next_problem_key{1};

/// Copies a tensor's values into a float vector.
std::vector<float> to_vector(const torch::Tensor& t) {
  auto c = t.detach().contiguous().to(torch::kFloat);
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

}  // namespace

std::string policy_kind_name(policy_kind k) {
  switch (k) {
    case policy_kind::joint: return "joint";
    case policy_kind::placeto: return "placeto";
    case policy_kind::gdp: return "gdp";
    default: return "dual";
  }
}

policy_kind parse_policy_kind(const std::string& name) {
  for (auto k : {policy_kind::dual, policy_kind::joint, policy_kind::placeto, policy_kind::gdp})
    if (name == policy_kind_name(k)) return k;
  throw error(errc::bad_argument, "learner: unknown policy kind '" + name + "' (dual, joint, placeto, gdp)");
}

std::string policy_ablation_name(policy_ablation a) {
  switch (a) {
    case policy_ablation::sel_only: return "sel-only";
    case policy_ablation::plc_only: return "plc-only";
    default: return "none";
  }
}

policy_ablation parse_policy_ablation(const std::string& name) {
  for (auto a : {policy_ablation::none, policy_ablation::sel_only, policy_ablation::plc_only})
    if (name == policy_ablation_name(a)) return a;
  throw error(errc::bad_argument, "learner: unknown ablation '" + name + "' (none, sel-only, plc-only)");
}

namespace {

/// Head ablations: the heuristic head's terms are zeroed, so neither loss nor log π sees them.
void mask_ablation(detail::step_terms& st, policy_ablation a) {
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

}  // namespace

problem::problem(const graph& g, const cluster& c, const cost_model& cm, bool respect_memory)
    : g_(&g), c_(&c), cm_(&cm), f_(compute_features(g, c, cm)), respect_memory_(respect_memory),
      key_(next_problem_key++) {}

/// The encoder's outputs for one problem as plain floats, for the per-step rollout loop.
struct rollout_cache {
  std::uint64_t version = 0;
  std::vector<float> sel, op_part, sum_part;          // [N], [N×m], [N×m]
  std::vector<float> dev_w, dev_b, w_dev, out_w;      // [p×F], [p], [m×p], [m]
  float out_b = 0;
  std::vector<float> gdp;                             // gdp: device logits [N×D]
};

struct policy::impl {
  explicit impl(const policy_options& o) : opt(o) {
    torch::set_num_threads(1);
    torch::manual_seed(o.seed);
    model = detail::net(o);
    adam = std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(1e-3));
  }

  const detail::graph_tensors& tensors(const problem& pb) {
    auto it = graphs.find(pb.key());
    if (it == graphs.end()) {
      if (graphs.size() > 16) graphs.clear();
      it = graphs.emplace(pb.key(), detail::make_graph_tensors(pb.features())).first;
    }
    return it->second;
  }

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
    auto e = model->encode(tensors(pb), pb.g().size());
    c.sel = to_vector(e.sel_logits);
    c.op_part = to_vector(e.op_part);
    c.sum_part = to_vector(e.sum_part);
    c.dev_w = to_vector(model->plc_dev->weight);
    c.dev_b = to_vector(model->plc_dev->bias);
    c.w_dev = to_vector(model->plc_w_dev->weight);
    c.out_w = to_vector(model->plc_out->weight);
    c.out_b = model->plc_out->bias.item<float>();
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
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      adam->step();
      ++version;
    }
    return value;
  }

  void step(torch::Tensor loss) {
    adam->zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    adam->step();
    ++version;
  }

  policy_options opt;
  detail::net model{nullptr};
  std::unique_ptr<torch::optim::Adam> adam;
  std::uint64_t version = 1;
  std::unordered_map<std::uint64_t, detail::graph_tensors> graphs;
  std::unordered_map<std::uint64_t, rollout_cache> caches;
};

policy::policy(const policy_options& opt) : impl_(std::make_unique<impl>(opt)) {
  if (opt.hidden < 1 || opt.steps < 0 || opt.proj < 1 || opt.mlp < 1)
    throw error(errc::bad_argument, "learner: policy sizes must be positive");
  if (opt.ablation != policy_ablation::none && opt.kind != policy_kind::dual)
    throw error(errc::bad_argument, "learner: ablation " + policy_ablation_name(opt.ablation) +
                                        " needs policy kind dual, not " + policy_kind_name(opt.kind));
}
policy::~policy() = default;
policy::policy(policy&&) noexcept = default;
policy& policy::operator=(policy&&) noexcept = default;

const policy_options& policy::options() const noexcept { return impl_->opt; }

std::size_t policy::parameter_count() const {
  std::size_t n = 0;
  for (const auto& p : impl_->model->parameters()) n += static_cast<std::size_t>(p.numel());
  return n;
}

namespace {

/// Picks among `k` candidates with logits `z` (already divided by the temperature; −inf = invalid).
/// Returns the index and log π(index) under softmax(z).
std::pair<std::size_t, double> choose(std::span<const double> z, const rollout_options& o,
                                      std::mt19937_64& rng) {
  double top = -INFINITY;
  std::size_t arg = 0, n_valid = 0;
  for (std::size_t i = 0; i < z.size(); ++i)
    if (std::isfinite(z[i])) {
      ++n_valid;
      if (z[i] > top) {
        top = z[i];
        arg = i;
      }
    }
  double norm = 0;
  for (double x : z)
    if (std::isfinite(x)) norm += std::exp(x - top);
  const double log_norm = top + std::log(norm);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (o.epsilon > 0 && n_valid > 0 && u(rng) < o.epsilon) {
    std::size_t k = std::uniform_int_distribution<std::size_t>(0, n_valid - 1)(rng);
    for (std::size_t i = 0; i < z.size(); ++i)
      if (std::isfinite(z[i]) && k-- == 0) return {i, z[i] - log_norm};
  }
  if (!o.greedy && n_valid > 0) {
    double r = u(rng) * norm, acc = 0;
    for (std::size_t i = 0; i < z.size(); ++i)
      if (std::isfinite(z[i])) {
        acc += std::exp(z[i] - top);
        arg = i;
        if (acc >= r) break;
      }
  }
  return {arg, z[arg] - log_norm};
}

}  // namespace

namespace {

/// PLC's logit for one (op, device) from the cached terms and the device's dynamic features.
double plc_logit(const rollout_cache& c, op_index v, std::size_t d, const float* feat, const std::vector<float>& dev_sum,
                 std::vector<float>& proj, int p, int m) {
  constexpr int nf = device_feature_count;
  for (int i = 0; i < p; ++i) {
    float s = c.dev_b[i];
    for (int k = 0; k < nf; ++k) s += c.dev_w[i * nf + k] * feat[k];
    proj[i] = std::max(s, 0.0f);
  }
  double logit = c.out_b;
  for (int j = 0; j < m; ++j) {
    float s = c.op_part[v * m + j] + dev_sum[d * m + j];
    for (int i = 0; i < p; ++i) s += c.w_dev[j * p + i] * proj[i];
    logit += static_cast<double>(c.out_w[j]) * std::max(s, 0.0f);
  }
  return logit;
}

/// One step of the single-policy ablation: PLC's network scores every (ready op, valid device) pair,
/// one softmax over all of them picks both.
void joint_step(assignment_env& env, const rollout_cache& c, std::size_t n_dev, int p, int m,
                std::span<const op_index> ready, std::vector<float>& dev_sum, const rollout_options& o,
                std::mt19937_64& rng, episode& ep, std::vector<op_index>& t_ops, std::vector<device_index>& t_devs) {
  const std::size_t t = env.steps();
  const int nf = device_feature_count;
  const std::size_t r = ready.size(), k0 = ep.pair_valid.size() / n_dev;
  ep.pair_feat.resize((k0 + r) * n_dev * nf);
  ep.pair_valid.resize((k0 + r) * n_dev);
  std::vector<float> proj(p);
  std::vector<double> z(r * n_dev, -INFINITY);
  const double tau = o.temperature;
  for (std::size_t i = 0; i < r; ++i) {
    std::span<float> feat(&ep.pair_feat[(k0 + i) * n_dev * nf], n_dev * nf);
    std::span<std::uint8_t> valid(&ep.pair_valid[(k0 + i) * n_dev], n_dev);
    env.device_features(ready[i], feat, valid);
    for (std::size_t d = 0; d < n_dev; ++d)
      if (valid[d]) z[i * n_dev + d] = plc_logit(c, ready[i], d, &feat[d * nf], dev_sum, proj, p, m) / tau;
  }
  if (std::none_of(z.begin(), z.end(), [](double x) { return std::isfinite(x); }))
    env.assign(ready[0], 0);  // throws errc::infeasible naming the op
  if (o.teacher) {  // every tied op with each of its tied devices
    env.teacher_ops(t_ops);
    std::vector<float> scratch(n_dev * nf);
    std::vector<std::uint8_t> sv(n_dev);
    for (op_index u : t_ops) {
      env.device_features(u, scratch, sv);
      env.teacher_devices(u, t_devs);
      for (device_index d : t_devs) {
        ep.teacher_ops.push_back(u);
        ep.teacher_devs.push_back(d);
      }
    }
  }
  auto [idx, lp] = choose(z, o, rng);
  const op_index v = ready[idx / n_dev];
  const std::size_t dev = idx % n_dev;
  ep.log_prob += lp;
  std::copy_n(&ep.pair_feat[(k0 + idx / n_dev) * n_dev * nf], n_dev * nf, &ep.dev_feat[t * n_dev * nf]);
  std::copy_n(&ep.pair_valid[(k0 + idx / n_dev) * n_dev], n_dev, &ep.dev_valid[t * n_dev]);
  if (o.teacher) {
    bool sel_ok = std::find(t_ops.begin(), t_ops.end(), v) != t_ops.end();
    std::vector<float> scratch(n_dev * nf);
    std::vector<std::uint8_t> sv(n_dev);
    env.device_features(v, scratch, sv);
    env.teacher_devices(v, t_devs);
    bool plc_ok = std::find(t_devs.begin(), t_devs.end(), dev) != t_devs.end();
    ep.sel_agree += sel_ok;
    ep.plc_agree += plc_ok;
    ep.both_agree += sel_ok && plc_ok;
    ep.teacher_op_off.push_back(static_cast<std::uint32_t>(ep.teacher_ops.size()));
    ep.teacher_dev_off.push_back(static_cast<std::uint32_t>(ep.teacher_devs.size()));
  }
  for (int j = 0; j < m; ++j) dev_sum[dev * m + j] += c.sum_part[v * m + j];
  env.assign(v, static_cast<device_index>(dev));
}

}  // namespace

episode policy::rollout(const problem& pb, const rollout_options& o) {
  if (!(o.temperature > 0)) throw error(errc::bad_argument, "learner: temperature must be > 0");
  if (is_baseline(impl_->opt.kind)) return baseline_rollout(pb, o);
  const auto& c = impl_->cached(pb);
  const auto& g = pb.g();
  const std::size_t n_dev = pb.c().device_count();
  const int nf = device_feature_count, p = impl_->opt.proj, m = impl_->opt.mlp;
  assignment_env env(g, pb.c(), pb.cm(), pb.features(), pb.respect_memory(), pb.transfers());
  std::mt19937_64 rng(o.seed);
  const double tau = o.temperature;

  episode ep;
  ep.temperature = tau;
  ep.ready_off.reserve(g.size() + 1);
  ep.ready_off.push_back(0);
  ep.dev_feat.resize(g.size() * n_dev * nf);
  ep.dev_valid.resize(g.size() * n_dev);
  if (o.teacher) {
    ep.teacher_op_off.push_back(0);
    ep.teacher_dev_off.push_back(0);
  }
  std::vector<float> dev_sum(n_dev * m, 0.0f), proj(p), hid(m);
  const bool joint = impl_->opt.kind == policy_kind::joint;
  const policy_ablation abl = impl_->opt.ablation;
  std::vector<double> z;
  std::vector<op_index> t_ops;
  std::vector<device_index> t_devs;
  while (!env.done()) {
    const std::size_t t = env.steps();
    auto ready = env.ready();
    ep.ready.insert(ep.ready.end(), ready.begin(), ready.end());
    ep.ready_off.push_back(static_cast<std::uint32_t>(ep.ready.size()));
    if (joint) {
      joint_step(env, c, n_dev, p, m, ready, dev_sum, o, rng, ep, t_ops, t_devs);
      continue;
    }
    // SEL: static logits over the ready set (plc-only: the teacher's op, cp's order).
    op_index v = 0;
    double lp_sel = 0;
    if (abl == policy_ablation::plc_only) {
      env.teacher_ops(t_ops);
      v = t_ops.front();
    } else {
      z.resize(ready.size());
      for (std::size_t i = 0; i < ready.size(); ++i) z[i] = c.sel[ready[i]] / tau;
      auto [ri, lp] = choose(z, o, rng);
      v = ready[ri];
      lp_sel = lp;
      if (o.teacher) env.teacher_ops(t_ops);
    }
    // PLC: per-device MLP over the dynamic features plus the cached per-op and per-device terms.
    std::span<float> feat(&ep.dev_feat[t * n_dev * nf], n_dev * nf);
    std::span<std::uint8_t> valid(&ep.dev_valid[t * n_dev], n_dev);
    env.device_features(v, feat, valid);
    z.resize(n_dev);
    for (std::size_t d = 0; d < n_dev; ++d) {
      if (!valid[d]) {
        z[d] = -INFINITY;
        continue;
      }
      const double logit = plc_logit(c, v, d, &feat[d * nf], dev_sum, proj, p, m);
      z[d] = logit / tau;
    }
    if (std::none_of(valid.begin(), valid.end(), [](std::uint8_t x) { return x != 0; }))
      env.assign(v, 0);  // throws errc::infeasible naming the op
    std::size_t dev = 0;
    double lp_plc = 0;
    if (abl == policy_ablation::sel_only) {  // the teacher's device (valid, minimum EST)
      env.teacher_devices(v, t_devs);
      dev = t_devs.front();
    } else {
      std::tie(dev, lp_plc) = choose(z, o, rng);
    }
    ep.log_prob += lp_sel + lp_plc;
    if (o.teacher) {
      env.teacher_devices(v, t_devs);
      bool sel_ok = std::find(t_ops.begin(), t_ops.end(), v) != t_ops.end();
      bool plc_ok = std::find(t_devs.begin(), t_devs.end(), dev) != t_devs.end();
      ep.sel_agree += sel_ok;
      ep.plc_agree += plc_ok;
      ep.both_agree += sel_ok && plc_ok;
      ep.teacher_ops.insert(ep.teacher_ops.end(), t_ops.begin(), t_ops.end());
      ep.teacher_devs.insert(ep.teacher_devs.end(), t_devs.begin(), t_devs.end());
      ep.teacher_op_off.push_back(static_cast<std::uint32_t>(ep.teacher_ops.size()));
      ep.teacher_dev_off.push_back(static_cast<std::uint32_t>(ep.teacher_devs.size()));
    }
    for (int j = 0; j < m; ++j) dev_sum[dev * m + j] += c.sum_part[v * m + j];
    env.assign(v, static_cast<device_index>(dev));
  }
  ep.result = env.result();
  ep.result.method = joint ? "doppler-joint"
                   : abl == policy_ablation::none ? "doppler" : "doppler-" + policy_ablation_name(abl);
  return ep;
}

/// placeto / gdp: the ops in topological order, one device choice each. gdp's logits come from the
/// cached one-shot pass; placeto re-runs its GNN on the current placement at every step.
episode policy::baseline_rollout(const problem& pb, const rollout_options& o) {
  const auto& c = impl_->cached(pb);
  const auto& g = pb.g();
  const std::size_t n = g.size(), n_dev = pb.c().device_count();
  const int nf = device_feature_count;
  const bool placeto = impl_->opt.kind == policy_kind::placeto;
  assignment_env env(g, pb.c(), pb.cm(), pb.features(), pb.respect_memory(), pb.transfers());
  std::mt19937_64 rng(o.seed);
  const double tau = o.temperature;
  episode ep;
  ep.temperature = tau;
  ep.ready_off.push_back(0);
  ep.dev_feat.resize(n * n_dev * nf);
  ep.dev_valid.resize(n * n_dev);
  if (o.teacher) {
    ep.teacher_op_off.push_back(0);
    ep.teacher_dev_off.push_back(0);
  }
  const auto topo = g.topo_order();
  std::vector<op_index> visited(topo.begin(), topo.end());
  std::vector<device_index> current(n);
  for (std::size_t v = 0; v < n; ++v) current[v] = static_cast<device_index>(detail::placeto_initial_device(v, n_dev));
  std::vector<double> z(n_dev);
  std::vector<device_index> t_devs;
  torch::NoGradGuard ng;
  for (std::size_t t = 0; t < n; ++t) {
    const op_index v = visited[t];
    ep.ready.push_back(v);
    ep.ready_off.push_back(static_cast<std::uint32_t>(ep.ready.size()));
    std::span<float> feat(&ep.dev_feat[t * n_dev * nf], n_dev * nf);
    std::span<std::uint8_t> valid(&ep.dev_valid[t * n_dev], n_dev);
    if (env.device_features(v, feat, valid) == 0) env.assign(v, 0);  // throws errc::infeasible naming the op
    const float* logits = nullptr;
    std::vector<float> step_logits;
    if (placeto) {
      step_logits = to_vector(impl_->model->baseline->placeto_logits(
          impl_->tensors(pb), detail::make_placeto_state(visited, current, n_dev, t, t + 1), n_dev));
      logits = step_logits.data();
    } else {
      logits = &c.gdp[v * n_dev];
    }
    for (std::size_t d = 0; d < n_dev; ++d) z[d] = valid[d] ? logits[d] / tau : -INFINITY;
    auto [dev, lp] = choose(z, o, rng);
    ep.log_prob += lp;
    if (o.teacher) {
      env.teacher_devices(v, t_devs);
      const bool ok = std::find(t_devs.begin(), t_devs.end(), dev) != t_devs.end();
      ep.sel_agree += 1;  // no op choice: the visited op is the only one
      ep.plc_agree += ok;
      ep.both_agree += ok;
      ep.teacher_ops.push_back(v);
      ep.teacher_devs.insert(ep.teacher_devs.end(), t_devs.begin(), t_devs.end());
      ep.teacher_op_off.push_back(static_cast<std::uint32_t>(ep.teacher_ops.size()));
      ep.teacher_dev_off.push_back(static_cast<std::uint32_t>(ep.teacher_devs.size()));
    }
    current[v] = static_cast<device_index>(dev);
    env.assign(v, static_cast<device_index>(dev));
  }
  ep.result = env.result();
  ep.result.method = placeto ? "doppler-placeto" : "doppler-gdp";
  return ep;
}

void policy::set_learning_rate(double lr) {
  for (auto& group : impl_->adam->param_groups())
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
}

double policy::imitation_update(const problem& pb, std::span<const episode> eps) {
  if (eps.empty()) return 0;
  if (is_baseline(impl_->opt.kind)) {
    for (const auto& ep : eps)
      if (ep.teacher_op_off.empty()) throw error(errc::bad_argument, "learner: imitation needs teacher labels");
    return impl_->baseline_pass(pb, eps, [](std::size_t, const torch::Tensor& lp, const torch::Tensor&,
                                            const detail::episode_tensors& et, std::int64_t t0, std::int64_t t1) {
      return -(lp * et.teacher_devs.slice(0, t0, t1).to(torch::kFloat)).sum();
    }, true);
  }
  auto e = impl_->model->encode(impl_->tensors(pb), pb.g().size());
  torch::Tensor loss = torch::zeros({});
  for (const auto& ep : eps) {
    if (ep.teacher_op_off.empty()) throw error(errc::bad_argument, "learner: imitation needs teacher labels");
    auto et = detail::make_episode_tensors(ep, pb.g().size(), pb.c().device_count());
    auto st = impl_->model->terms(e, et, 1.0);
    mask_ablation(st, impl_->opt.ablation);
    auto l = et.teacher_pairs.defined()
                 ? (st.sel_lp * et.teacher_pairs.to(torch::kFloat)).sum()
                 : (st.sel_lp * et.teacher_ops.to(torch::kFloat)).sum() +
                       (st.plc_lp * et.teacher_devs.to(torch::kFloat)).sum();
    loss = loss - l / static_cast<double>(std::max<std::size_t>(ep.steps(), 1));
  }
  loss = loss / static_cast<double>(eps.size());
  double value = loss.item<double>();
  impl_->step(loss);
  return value;
}

double policy::reinforce_update(const problem& pb, std::span<const episode> eps,
                                std::span<const double> advantages, double gamma, double entropy_weight) {
  if (eps.empty()) return 0;
  if (advantages.size() != eps.size())
    throw error(errc::bad_argument, "learner: one advantage per episode");
  if (is_baseline(impl_->opt.kind)) {
    return impl_->baseline_pass(pb, eps, [&](std::size_t i, const torch::Tensor& lp, const torch::Tensor& ent,
                                             const detail::episode_tensors& et, std::int64_t t0, std::int64_t t1) {
      const auto t = static_cast<std::int64_t>(eps[i].steps());
      auto disc = torch::pow(torch::full({t1 - t0}, gamma, torch::kDouble),
                             torch::arange(t - 1 - t0, t - 1 - t1, -1, torch::kDouble)).to(torch::kFloat);
      auto taken = lp.gather(1, et.devs.slice(0, t0, t1).unsqueeze(1)).squeeze(1);
      return -((disc * taken).sum() * advantages[i] + entropy_weight * ent.sum());
    }, true);
  }
  auto e = impl_->model->encode(impl_->tensors(pb), pb.g().size());
  torch::Tensor loss = torch::zeros({});
  for (std::size_t i = 0; i < eps.size(); ++i) {
    const auto& ep = eps[i];
    const auto t = static_cast<std::int64_t>(ep.steps());
    auto et = detail::make_episode_tensors(ep, pb.g().size(), pb.c().device_count());
    auto st = impl_->model->terms(e, et, ep.temperature);
    mask_ablation(st, impl_->opt.ablation);
    // γ^(T−1−t): the episode's reward is discounted back to earlier steps.
    auto disc = torch::pow(torch::full({t}, gamma, torch::kDouble),
                           torch::arange(t - 1, -1, -1, torch::kDouble)).to(torch::kFloat);
    auto pg = (disc * (st.sel_taken + st.plc_taken)).sum() * advantages[i];
    auto ent = (st.sel_ent + st.plc_ent).sum();
    loss = loss - (pg + entropy_weight * ent) / static_cast<double>(std::max<std::int64_t>(t, 1));
  }
  loss = loss / static_cast<double>(eps.size());
  double value = loss.item<double>();
  impl_->step(loss);
  return value;
}

double policy::ppo_update(const problem& pb, std::span<const episode> eps, std::span<const double> advantages,
                          double gamma, double entropy_weight, double clip, int epochs) {
  if (eps.empty()) return 0;
  if (advantages.size() != eps.size()) throw error(errc::bad_argument, "learner: one advantage per episode");
  if (epochs < 1) throw error(errc::bad_argument, "learner: PPO needs at least one epoch");
  if (!(clip > 0) || !std::isfinite(clip)) throw error(errc::bad_argument, "learner: PPO clip must be > 0");
  if (is_baseline(impl_->opt.kind))
    throw error(errc::bad_argument, "learner: PPO updates the dual and joint policies only (this policy is " +
                                        policy_kind_name(impl_->opt.kind) + "; use REINFORCE)");
  // The episodes' tensors, discounts and log π_old of the taken actions, once.
  std::vector<detail::episode_tensors> ets;
  std::vector<torch::Tensor> old_lp, disc;
  ets.reserve(eps.size());
  {
    torch::NoGradGuard ng;
    auto e = impl_->model->encode(impl_->tensors(pb), pb.g().size());
    for (const auto& ep : eps) {
      ets.push_back(detail::make_episode_tensors(ep, pb.g().size(), pb.c().device_count()));
      auto st = impl_->model->terms(e, ets.back(), ep.temperature);
      mask_ablation(st, impl_->opt.ablation);
      old_lp.push_back(st.sel_taken + st.plc_taken);
      const auto t = static_cast<std::int64_t>(ep.steps());
      disc.push_back(torch::pow(torch::full({t}, gamma, torch::kDouble), torch::arange(t - 1, -1, -1, torch::kDouble))
                         .to(torch::kFloat));
    }
  }
  double first = 0;
  for (int k = 0; k < epochs; ++k) {
    auto e = impl_->model->encode(impl_->tensors(pb), pb.g().size());
    torch::Tensor loss = torch::zeros({});
    for (std::size_t i = 0; i < eps.size(); ++i) {
      const auto t = static_cast<std::int64_t>(eps[i].steps());
      auto st = impl_->model->terms(e, ets[i], eps[i].temperature);
      mask_ablation(st, impl_->opt.ablation);
      auto ratio = torch::exp(st.sel_taken + st.plc_taken - old_lp[i]);
      auto a = disc[i] * advantages[i];
      auto surrogate = torch::min(ratio * a, ratio.clamp(1.0 - clip, 1.0 + clip) * a).sum();
      auto ent = (st.sel_ent + st.plc_ent).sum();
      loss = loss - (surrogate + entropy_weight * ent) / static_cast<double>(std::max<std::int64_t>(t, 1));
    }
    loss = loss / static_cast<double>(eps.size());
    if (k == 0) first = loss.item<double>();
    impl_->step(loss);
  }
  return first;
}

double policy::recompute_log_prob(const problem& pb, const episode& ep) {
  if (is_baseline(impl_->opt.kind)) {
    return -impl_->baseline_pass(pb, std::span<const episode>(&ep, 1),
                                 [&](std::size_t, const torch::Tensor& lp, const torch::Tensor&,
                                     const detail::episode_tensors& et, std::int64_t t0, std::int64_t t1) {
                                   auto taken = lp.gather(1, et.devs.slice(0, t0, t1).unsqueeze(1)).squeeze(1);
                                   return -taken.to(torch::kDouble).sum();
                                 }, false) * static_cast<double>(std::max<std::size_t>(ep.steps(), 1));
  }
  torch::NoGradGuard ng;
  auto e = impl_->model->encode(impl_->tensors(pb), pb.g().size());
  auto et = detail::make_episode_tensors(ep, pb.g().size(), pb.c().device_count());
  auto st = impl_->model->terms(e, et, ep.temperature);
  mask_ablation(st, impl_->opt.ablation);
  return (st.sel_taken.to(torch::kDouble).sum() + st.plc_taken.to(torch::kDouble).sum()).item<double>();
}

std::string policy::snapshot() const {
  torch::serialize::OutputArchive ar;
  impl_->model->save(ar);
  std::ostringstream out;
  ar.save_to(out);
  return out.str();
}

void policy::restore(const std::string& blob) {
  torch::serialize::InputArchive ar;
  std::istringstream in(blob);
  ar.load_from(in);
  impl_->model->load(ar);
  ++impl_->version;
}

void policy::save(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  try {
    torch::serialize::OutputArchive ar, net_ar, adam_ar;
    const auto& o = impl_->opt;
    ar.write("doppler_format", torch::tensor(std::int64_t{1}));
    ar.write("options", torch::tensor({std::int64_t{o.hidden}, std::int64_t{o.steps},
                                       std::int64_t{o.proj}, std::int64_t{o.mlp},
                                       std::int64_t{static_cast<int>(o.kind)},
                                       std::int64_t{static_cast<int>(o.ablation)}}));
    impl_->model->save(net_ar);
    impl_->adam->save(adam_ar);
    ar.write("net", net_ar);
    ar.write("adam", adam_ar);
    ar.save_to(tmp);
    std::filesystem::rename(tmp, path);
  } catch (const std::exception& ex) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw error(errc::io, path, "", std::string("cannot write checkpoint: ") + ex.what());
  }
}

policy policy::load(const std::string& path) {
  if (!std::filesystem::exists(path)) throw error(errc::io, path, "", "no such checkpoint file");
  try {
    torch::serialize::InputArchive ar, net_ar, adam_ar;
    ar.load_from(path);
    torch::Tensor fmt, opts;
    if (!ar.try_read("doppler_format", fmt) || fmt.item<std::int64_t>() != 1 || !ar.try_read("options", opts) ||
        opts.numel() < 4)
      throw error(errc::bad_format_tag, path, "", "not a doppler policy checkpoint (format 1)");
    auto a = opts.accessor<std::int64_t, 1>();
    policy_options o;
    o.hidden = static_cast<int>(a[0]);
    o.steps = static_cast<int>(a[1]);
    o.proj = static_cast<int>(a[2]);
    o.mlp = static_cast<int>(a[3]);
    if (opts.numel() > 4) {  // absent: dual
      if (a[4] < 0 || a[4] > static_cast<std::int64_t>(policy_kind::gdp))
        throw error(errc::bad_value, path, "", "unknown policy kind " + std::to_string(a[4]));
      o.kind = static_cast<policy_kind>(a[4]);
    }
    if (opts.numel() > 5) {  // absent: none
      if (a[5] < 0 || a[5] > static_cast<std::int64_t>(policy_ablation::plc_only))
        throw error(errc::bad_value, path, "", "unknown ablation " + std::to_string(a[5]));
      o.ablation = static_cast<policy_ablation>(a[5]);
    }
    policy pol(o);
    ar.read("net", net_ar);
    pol.impl_->model->load(net_ar);
    if (ar.try_read("adam", adam_ar)) pol.impl_->adam->load(adam_ar);
    return pol;
  } catch (const error&) {
    throw;
  } catch (const std::exception& ex) {
    throw error(errc::bad_value, path, "", std::string("cannot read checkpoint: ") + ex.what());
  }
}

}  // namespace doppler::learner
