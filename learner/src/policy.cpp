// The policies: construction, cached encoding and autograd-free rollouts of every kind (policy.hpp);
// the updates and checkpoints are in policy_update.cpp, the shared state in policy_impl.hpp.
#include "policy_impl.hpp"

#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/sim.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>

namespace doppler::learner {

namespace {

std::atomic<std::uint64_t> next_problem_key{1};

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

std::uint64_t fingerprint_of(const graph& g, const cluster& c, const cost_model& cm, const graph_features& f,
                             const placement* hint) {
  fnv1a h(fnv1a::learner_basis);
  h.value(g.size());
  h.value(c.device_count());
  h.values(f.raw);
  h.values(f.edge_cost);
  h.values(f.msg_src);
  h.values(f.msg_dst);
  for (op_index v = 0; v < g.size(); ++v)
    for (device_index d = 0; d < c.device_count(); ++d) h.value(cm.op_time(g[v], c[d]));
  if (hint) h.values(hint->device);
  return h.digest();
}

}  // namespace

problem::problem(const graph& g, const cluster& c, const cost_model& cm, bool respect_memory)
    : g_(&g), c_(&c), cm_(&cm), f_(compute_features(g, c, cm)), respect_memory_(respect_memory),
      key_(next_problem_key++), fingerprint_(fingerprint_of(g, c, cm, f_, nullptr)) {}

problem& problem::with_hint(std::shared_ptr<const placement> h) {
  if (h) check_placement(*h, *g_, *c_);
  hint_ = std::move(h);
  key_ = next_problem_key++;
  fingerprint_ = fingerprint_of(*g_, *c_, *cm_, f_, hint_.get());
  return *this;
}

namespace {

/// The sizes are checked before the network is allocated (LibTorch would fail on a negative or
/// overflowing dimension with a backtrace).
const policy_options& checked_sizes(const policy_options& opt) {
  auto width = [](const char* name, int x) {
    if (x < 1 || x > policy_options::max_width)
      throw error(errc::bad_argument, "learner: policy " + std::string(name) + " = " + std::to_string(x) +
                                          " must be in [1, " + std::to_string(policy_options::max_width) + "]");
  };
  width("hidden", opt.hidden);
  width("proj", opt.proj);
  width("mlp", opt.mlp);
  if (opt.steps < 0 || opt.steps > policy_options::max_steps)
    throw error(errc::bad_argument, "learner: policy steps = " + std::to_string(opt.steps) + " must be in [0, " +
                                        std::to_string(policy_options::max_steps) + "]");
  return opt;
}

}  // namespace

policy::policy(const policy_options& opt) : impl_(std::make_unique<impl>(checked_sizes(opt))) {
  if (opt.ablation != policy_ablation::none && opt.kind != policy_kind::dual)
    throw error(errc::bad_argument, "learner: ablation " + policy_ablation_name(opt.ablation) +
                                        " needs policy kind dual, not " + policy_kind_name(opt.kind));
  if (!opt.hint.empty()) {
    if (is_baseline(opt.kind))
      throw error(errc::bad_argument, "learner: a hint placement feeds PLC's device features; policy kind " +
                                          policy_kind_name(opt.kind) + " has none (dual or joint)");
    if (opt.hint != "auto" && !is_placer(opt.hint))
      throw error(errc::unknown_kind, "learner: unknown hint placer '" + opt.hint + "' (auto, " + placer_list() + ")");
    if (opt.hint_budget < 1) throw error(errc::bad_argument, "learner: the hint budget must be >= 1");
  }
  if (opt.sibling && is_baseline(opt.kind))
    throw error(errc::bad_argument, "learner: the sibling feature is one of PLC's device features; policy kind " +
                                        policy_kind_name(opt.kind) + " has none (dual or joint)");
  if (opt.dynamic_sel && !opt.has_sel_head())
    throw error(errc::bad_argument, "learner: dynamic SEL features feed SEL's head; policy kind " +
                                        policy_kind_name(opt.kind) + (opt.kind == policy_kind::dual ? " with ablation plc-only" : "") +
                                        " has none (dual, without plc-only)");
  set_active_search(opt.active_search);
}

void policy::set_active_search(double lr) {
  if (!(lr >= 0) || !(lr <= policy_options::max_active_search))
    throw error(errc::bad_argument, "learner: active search learning rate " + std::to_string(lr) + " must be in [0, " +
                                        std::to_string(policy_options::max_active_search) + "] (0: off)");
  if (lr > 0 && impl_->opt.kind != policy_kind::dual)
    throw error(errc::bad_argument, "learner: active search offsets SEL's and PLC's logits; policy kind " +
                                        policy_kind_name(impl_->opt.kind) + " has no such heads (dual only)");
  impl_->opt.active_search = lr;
  for (auto& [fp, o] : impl_->offsets)
    for (auto& group : o.adam->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
}

std::size_t policy::offset_problems() const { return impl_->offsets.size(); }

const placement* policy::hint_for(const problem& pb) { return impl_->hint_for(pb); }

namespace {

/// The hint placement of pb for opt.hint (policy_options: seed 0, the hint's budget and model, the
/// problem's transfers); auto: the fastest candidate that places the graph (the first on ties).
placement compute_hint(const policy_options& opt, const problem& pb) {
  placer_options po;
  po.seed = 0;
  po.budget = opt.hint_budget;
  po.sim.model = opt.hint_model;
  po.sim.transfers = pb.shared_transfers();
  po.respect_memory = pb.respect_memory();
  auto run = [&](const std::string& name) {
    try {
      placement p = make_placer(name)->place(pb.g(), pb.c(), pb.cm(), po);
      check_placement(p, pb.g(), pb.c());
      return p;
    } catch (const error& e) {
      throw error(e.code(), "learner: hint placer '" + name + "': " + e.what());
    }
  };
  if (opt.hint != "auto") return run(opt.hint);
  placement best;
  double best_ms = INFINITY;
  std::string failures;
  for (const char* name : hint_auto_candidates) {
    try {
      placement p = run(name);
      const double ms = simulate(pb.g(), pb.c(), p, pb.cm(), po.sim).makespan;
      if (best.device.empty() || ms < best_ms) {
        best_ms = ms;
        best = std::move(p);
      }
    } catch (const error& e) {
      failures += (failures.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (best.device.empty()) throw error(errc::infeasible, "learner: hint auto: no candidate placed the graph (" + failures + ")");
  return best;
}

}  // namespace

const placement* policy::impl::hint_for(const problem& pb) {
  if (opt.hint.empty()) return nullptr;
  if (pb.hint()) return pb.hint();
  if (auto it = hints.find(pb.key()); it != hints.end()) return &it->second;
  if (hints.size() >= 256) hints.clear();
  return &hints.emplace(pb.key(), compute_hint(opt, pb)).first->second;
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
/// Returns the index and log π(index) under softmax(z). A NaN or +inf logit, or no valid candidate
/// (the callers refuse a state with none before), means the network broke: an error, never index 0.
std::pair<std::size_t, double> choose(std::span<const double> z, const rollout_options& o,
                                      std::mt19937_64& rng) {
  double top = -INFINITY;
  std::size_t arg = 0, n_valid = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    if (std::isnan(z[i]) || z[i] == INFINITY)
      throw error(errc::internal, "learner: the policy's logit for candidate " + std::to_string(i) + " of " +
                                      std::to_string(z.size()) + " is not finite (" + std::to_string(z[i]) +
                                      "): its parameters hold NaN or inf");
    if (std::isfinite(z[i])) {
      ++n_valid;
      if (z[i] > top) {
        top = z[i];
        arg = i;
      }
    }
  }
  if (n_valid == 0) throw error(errc::internal, "learner: every candidate of a step is masked");
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
/// `cols` = the columns the network reads (policy_options::device_columns).
double plc_logit(const rollout_cache& c, op_index v, std::size_t d, const float* feat, const std::vector<float>& dev_sum,
                 std::vector<float>& proj, int p, int m, std::span<const int> cols) {
  const auto nin = cols.size();
  for (int i = 0; i < p; ++i) {
    float s = c.dev_b[i];
    for (std::size_t k = 0; k < nin; ++k) s += c.dev_w[i * nin + k] * feat[cols[k]];
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

/// SEL's logit for ready op v with its dynamic features s (policy_options::dynamic_sel); s = null
/// when they are all 0: the sum cached per episode (bit for bit the same: a = hidden exactly).
double sel_logit(const rollout_cache& c, op_index v, const float* s, int m) {
  double acc = 0;
  if (!s) {
    acc = c.sel_at_zero[v];
  } else {
    for (int j = 0; j < m; ++j) {
      float a = c.sel_hidden[v * m + j];
      for (int k = 0; k < sel_feature_count; ++k) a += c.sel_dyn_w[j * sel_feature_count + k] * s[k];
      acc += static_cast<double>(c.sel_out_w[j]) * std::max(a, 0.0f);
    }
  }
  return static_cast<double>(c.sel[v]) + static_cast<double>(c.sel_out_b) + acc;
}

/// One step of the single-policy ablation: PLC's network scores every (ready op, valid device) pair,
/// one softmax over all of them picks both.
void joint_step(assignment_env& env, const rollout_cache& c, std::size_t n_dev, int p, int m, std::span<const int> cols,
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
      if (valid[d]) z[i * n_dev + d] = plc_logit(c, ready[i], d, &feat[d * nf], dev_sum, proj, p, m, cols) / tau;
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
  if (!(o.temperature >= train_limits::temperature_min && o.temperature <= train_limits::temperature_max))
    throw error(errc::bad_argument, "learner: temperature must be in [" + std::to_string(train_limits::temperature_min) +
                                        ", " + std::to_string(train_limits::temperature_max) + "], got " +
                                        std::to_string(o.temperature));
  if (o.follow_teacher && impl_->opt.kind != policy_kind::dual)
    throw error(errc::bad_argument, "learner: following the teacher (behaviour cloning) needs a dual policy, not " +
                                        policy_kind_name(impl_->opt.kind));
  if (is_baseline(impl_->opt.kind)) return baseline_rollout(pb, o);
  const auto& c = impl_->cached(pb);
  const auto& g = pb.g();
  const std::size_t n_dev = pb.c().device_count();
  const int nf = device_feature_count, p = impl_->opt.proj, m = impl_->opt.mlp;
  const auto cols = impl_->opt.device_columns();
  assignment_env env(g, pb.c(), pb.cm(), pb.features(), pb.respect_memory(), pb.transfers(), pb.teacher(),
                     hint_for(pb), pb.teacher_symmetry());
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
  const bool dynamic = impl_->opt.dynamic_sel;
  constexpr std::size_t sf = sel_feature_count;
  std::vector<float> sel_buf;
  ep.dynamic_sel = dynamic;
  std::vector<double> z;
  std::vector<op_index> t_ops;
  std::vector<device_index> t_devs;
  while (!env.done()) {
    const std::size_t t = env.steps();
    auto ready = env.ready();
    ep.ready.insert(ep.ready.end(), ready.begin(), ready.end());
    ep.ready_off.push_back(static_cast<std::uint32_t>(ep.ready.size()));
    if (joint) {
      joint_step(env, c, n_dev, p, m, cols, ready, dev_sum, o, rng, ep, t_ops, t_devs);
      continue;
    }
    // SEL: static logits over the ready set (plc-only: cp's order, as when the policy places).
    op_index v = 0;
    double lp_sel = 0;
    op_index sel_own = 0;  // following the teacher: what SEL itself would have chosen (agreement)
    if (abl == policy_ablation::plc_only) {
      env.cp_ops(t_ops);
      v = sel_own = t_ops.front();
    } else {
      z.resize(ready.size());
      if (dynamic) {  // the per-step term on top of SEL's cached first layer (net.hpp)
        const std::size_t k0 = ep.ready.size() - ready.size();  // this step's first entry in ep.ready
        sel_buf.resize(ready.size() * sf);
        env.sel_features(sel_buf);
        for (std::size_t i = 0; i < ready.size(); ++i) {
          const float* s = &sel_buf[i * sf];
          const bool nonzero = std::any_of(s, s + sf, [](float x) { return x != 0.0f; });
          z[i] = sel_logit(c, ready[i], nonzero ? s : nullptr, m) / tau;
          if (nonzero) {  // recorded sparsely: episode::sel_rows
            ep.sel_rows.push_back(static_cast<std::uint32_t>(k0 + i));
            ep.sel_feat.insert(ep.sel_feat.end(), s, s + sf);
          }
        }
      } else {
        for (std::size_t i = 0; i < ready.size(); ++i) z[i] = c.sel[ready[i]] / tau;
      }
      auto [ri, lp] = choose(z, o, rng);
      v = sel_own = ready[ri];
      lp_sel = lp;
      if (o.teacher || o.follow_teacher) env.teacher_ops(t_ops);
      if (o.follow_teacher) {
        v = t_ops.front();
        lp_sel = 0;
      }
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
      double logit = plc_logit(c, v, d, &feat[d * nf], dev_sum, proj, p, m, cols);
      if (!c.plc_bias.empty()) logit += c.plc_bias[v * n_dev + d];
      z[d] = logit / tau;
    }
    if (std::none_of(valid.begin(), valid.end(), [](std::uint8_t x) { return x != 0; }))
      env.assign(v, 0);  // throws errc::infeasible naming the op
    std::size_t dev = 0, dev_own = 0;  // dev_own: what PLC itself would have chosen
    double lp_plc = 0;
    if (abl == policy_ablation::sel_only) {  // cp's device (valid, minimum EST), as when it places
      env.cp_devices(v, t_devs);
      dev = dev_own = t_devs.front();
    } else {
      std::tie(dev, lp_plc) = choose(z, o, rng);
      dev_own = dev;
      if (o.follow_teacher) {
        env.teacher_devices(v, t_devs);
        dev = t_devs.front();
        lp_plc = 0;
      }
    }
    ep.log_prob += lp_sel + lp_plc;
    if (o.teacher) {
      env.teacher_devices(v, t_devs);
      bool sel_ok = std::find(t_ops.begin(), t_ops.end(), sel_own) != t_ops.end();
      bool plc_ok = std::find(t_devs.begin(), t_devs.end(), dev_own) != t_devs.end();
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
  assignment_env env(g, pb.c(), pb.cm(), pb.features(), pb.respect_memory(), pb.transfers(), pb.teacher(),
                     nullptr, pb.teacher_symmetry());
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

}  // namespace doppler::learner
