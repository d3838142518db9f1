// The policies' updates (imitation, REINFORCE, PPO), log-probability recomputation, snapshots and
// checkpoints (policy.hpp); the rollouts are in policy.cpp.
#include "policy_impl.hpp"

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/op.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>

namespace doppler::learner {

namespace {

/// A LibTorch error's message without the C++ backtrace c10::Error::what() appends (a user reading
/// "cannot read checkpoint" needs the first line, not 20 frames); its first line at most.
std::string torch_reason(const std::exception& ex) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&ex);
  std::string m = c10 ? c10->what_without_backtrace() : ex.what();
  if (auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
  return m;
}

/// The checksum of a checkpoint's options (and hint name): sizes, kind and flags a damaged file
/// could change without touching the parameters.
std::int64_t options_digest(const torch::Tensor& options, const torch::Tensor& hint) {
  fnv1a h(fnv1a::learner_basis);
  detail::hash_tensor(h, options);
  if (hint.defined()) detail::hash_tensor(h, hint);
  return static_cast<std::int64_t>(h.digest());
}

/// FNV-1a over the bytes of every parameter and buffer of `m` (in registration order) and of
/// Adam's state for each parameter, then of each problem's active-search offsets and their Adam
/// state (none: the digest of a checkpoint without offsets): a checkpoint stores it, so a file whose
/// tensor bytes were damaged is refused on load (LibTorch's archive reader does not check the zip CRCs).
std::int64_t parameter_digest(const torch::nn::Module& m, const torch::optim::Adam& adam,
                              const std::map<std::uint64_t, instance_offsets>& offsets) {
  fnv1a h(fnv1a::learner_basis);
  auto mix = [&](const torch::Tensor& t) { detail::hash_tensor(h, t); };
  // Adam keys its per-parameter state by the parameter's TensorImpl address (as its own
  // serializer does), so the state is visited in parameter order.
  auto mix_adam = [&](const std::vector<torch::Tensor>& params, const torch::optim::Adam& opt) {
    for (const auto& p : params) {
      auto it = opt.state().find(c10::guts::to_string(p.unsafeGetTensorImpl()));
      if (it == opt.state().end()) {
        h.bytes("0", 1);
        continue;
      }
      const auto& st = static_cast<const torch::optim::AdamParamState&>(*it->second);
      h.value(static_cast<std::int64_t>(st.step()));
      mix(st.exp_avg());
      mix(st.exp_avg_sq());
      mix(st.max_exp_avg_sq());
    }
  };
  const auto params = m.parameters();
  for (const auto& t : params) mix(t);
  for (const auto& t : m.buffers()) mix(t);
  mix_adam(params, adam);
  for (const auto& [fp, o] : offsets) {
    h.value(fp);
    mix(o.sel);
    mix(o.plc);
    mix_adam({o.sel, o.plc}, *o.adam);
  }
  return static_cast<std::int64_t>(h.digest());
}

}  // namespace

using detail::discounts;
using detail::mask_ablation;

void policy::set_learning_rate(double lr) {
  for (auto& group : impl_->adam->param_groups())
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
}

double policy::learning_rate() const {
  return static_cast<const torch::optim::AdamOptions&>(impl_->adam->param_groups().front().options()).lr();
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
  auto e = impl_->encode(pb);
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
      auto disc = discounts(t, gamma).slice(0, t0, t1);
      auto taken = lp.gather(1, et.devs.slice(0, t0, t1).unsqueeze(1)).squeeze(1);
      return -((disc * taken).sum() * advantages[i] + entropy_weight * ent.sum());
    }, true);
  }
  auto e = impl_->encode(pb);
  torch::Tensor loss = torch::zeros({});
  for (std::size_t i = 0; i < eps.size(); ++i) {
    const auto& ep = eps[i];
    const auto t = static_cast<std::int64_t>(ep.steps());
    auto et = detail::make_episode_tensors(ep, pb.g().size(), pb.c().device_count());
    auto st = impl_->model->terms(e, et, ep.temperature);
    mask_ablation(st, impl_->opt.ablation);
    auto pg = (discounts(t, gamma) * (st.sel_taken + st.plc_taken)).sum() * advantages[i];
    auto ent = (st.sel_ent + st.plc_ent).sum();
    loss = loss - (pg + entropy_weight * ent) / static_cast<double>(std::max<std::int64_t>(t, 1));
  }
  loss = loss / static_cast<double>(eps.size());
  double value = loss.item<double>();
  impl_->step(loss);
  return value;
}

double policy::ppo_update(const problem& pb, std::span<const episode> eps, std::span<const double> advantages,
                          double gamma, double entropy_weight, double clip, int epochs, double target_kl) {
  if (eps.empty()) return 0;
  if (advantages.size() != eps.size()) throw error(errc::bad_argument, "learner: one advantage per episode");
  if (epochs < 1) throw error(errc::bad_argument, "learner: PPO needs at least one epoch");
  if (!(clip > 0) || !std::isfinite(clip)) throw error(errc::bad_argument, "learner: PPO clip must be > 0");
  if (!(target_kl >= 0) || !std::isfinite(target_kl))
    throw error(errc::bad_argument, "learner: PPO target KL must be >= 0 (0: no early stopping)");
  if (is_baseline(impl_->opt.kind))
    throw error(errc::bad_argument, "learner: PPO updates the dual and joint policies only (this policy is " +
                                        policy_kind_name(impl_->opt.kind) + "; use REINFORCE)");
  // The episodes' tensors, discounts and log π_old of the taken actions, once.
  std::vector<detail::episode_tensors> ets;
  std::vector<torch::Tensor> old_lp, disc;
  ets.reserve(eps.size());
  {
    torch::NoGradGuard ng;
    auto e = impl_->encode(pb);
    for (const auto& ep : eps) {
      ets.push_back(detail::make_episode_tensors(ep, pb.g().size(), pb.c().device_count()));
      auto st = impl_->model->terms(e, ets.back(), ep.temperature);
      mask_ablation(st, impl_->opt.ablation);
      old_lp.push_back(st.sel_taken + st.plc_taken);
      disc.push_back(discounts(static_cast<std::int64_t>(ep.steps()), gamma));
    }
  }
  double first = 0;
  impl_->ppo_epochs = 0;
  for (int k = 0; k < epochs; ++k) {
    auto e = impl_->encode(pb);
    torch::Tensor loss = torch::zeros({});
    double kl_sum = 0;  // Σ over steps of r − 1 − log r (≥ 0, unbiased for KL(π_old ‖ π) on π_old's samples)
    std::int64_t kl_n = 0;
    for (std::size_t i = 0; i < eps.size(); ++i) {
      const auto t = static_cast<std::int64_t>(eps[i].steps());
      auto st = impl_->model->terms(e, ets[i], eps[i].temperature);
      mask_ablation(st, impl_->opt.ablation);
      // Clamped so that exp stays finite: an action sampled by ε at a tiny old probability can reach
      // log r > 88 (float's exp overflows, and inf·0 makes the gradient NaN). r = e^±20 is far
      // outside any clip range, so the surrogate is unchanged but for a zero gradient there.
      auto log_ratio = (st.sel_taken + st.plc_taken - old_lp[i]).clamp(-20.0, 20.0);
      auto ratio = torch::exp(log_ratio);
      if (target_kl > 0 && k > 0) {
        torch::NoGradGuard ng;
        kl_sum += (ratio - 1 - log_ratio).sum().item<double>();
        kl_n += t;
      }
      auto a = disc[i] * advantages[i];
      auto surrogate = torch::min(ratio * a, ratio.clamp(1.0 - clip, 1.0 + clip) * a).sum();
      auto ent = (st.sel_ent + st.plc_ent).sum();
      loss = loss - (surrogate + entropy_weight * ent) / static_cast<double>(std::max<std::int64_t>(t, 1));
    }
    if (kl_n > 0 && kl_sum / static_cast<double>(kl_n) > 1.5 * target_kl) break;
    loss = loss / static_cast<double>(eps.size());
    if (k == 0) first = loss.item<double>();
    impl_->step(loss);
    ++impl_->ppo_epochs;
  }
  return first;
}

int policy::last_ppo_epochs() const { return impl_->ppo_epochs; }

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
  auto e = impl_->encode(pb);
  auto et = detail::make_episode_tensors(ep, pb.g().size(), pb.c().device_count());
  auto st = impl_->model->terms(e, et, ep.temperature);
  mask_ablation(st, impl_->opt.ablation);
  return (st.sel_taken.to(torch::kDouble).sum() + st.plc_taken.to(torch::kDouble).sum()).item<double>();
}

std::string policy::snapshot() const {
  torch::serialize::OutputArchive ar;
  impl_->model->save(ar);
  std::int64_t i = 0;
  for (const auto& [fp, o] : impl_->offsets) {  // values only: model selection keeps the optimizer
    ar.write("offset_fp_" + std::to_string(i), torch::tensor(static_cast<std::int64_t>(fp)));
    ar.write("offset_sel_" + std::to_string(i), o.sel.detach().clone());
    ar.write("offset_plc_" + std::to_string(i), o.plc.detach().clone());
    ++i;
  }
  ar.write("offset_count", torch::tensor(i));
  std::ostringstream out;
  ar.save_to(out);
  return out.str();
}

void policy::restore(const std::string& blob) {
  torch::serialize::InputArchive ar;
  std::istringstream in(blob);
  ar.load_from(in);
  impl_->model->load(ar);
  // Offsets of problems the snapshot did not have (first met after it) go back to zero.
  torch::NoGradGuard ng;
  for (auto& [fp, o] : impl_->offsets) {
    o.sel.zero_();
    o.plc.zero_();
  }
  torch::Tensor count;
  if (ar.try_read("offset_count", count)) {
    for (std::int64_t i = 0; i < count.item<std::int64_t>(); ++i) {
      torch::Tensor fp, sel, plc;
      ar.read("offset_fp_" + std::to_string(i), fp);
      ar.read("offset_sel_" + std::to_string(i), sel);
      ar.read("offset_plc_" + std::to_string(i), plc);
      auto key = static_cast<std::uint64_t>(fp.item<std::int64_t>());
      auto it = impl_->offsets.find(key);
      if (it == impl_->offsets.end())
        it = impl_->offsets.emplace(key, impl_->make_offsets(sel.size(0), plc.size(1))).first;
      it->second.sel.copy_(sel);
      it->second.plc.copy_(plc);
    }
  }
  ++impl_->version;
}

void policy::save(const std::string& path) const {
  // write_file_atomic takes "-" for stdout; a binary checkpoint there would mix with progress lines.
  if (path == "-") throw error(errc::bad_argument, path, "", "a checkpoint is written to a file, not to stdout");
  std::string blob;
  try {
    blob = serialize();
  } catch (const error& e) {
    throw error(errc::io, path, "", e.reason());
  }
  // The project's one atomic writer: a temporary file beside the target, then rename; symlinks
  // followed, FIFOs and devices written directly.
  write_file_atomic(path, blob);
}

std::string policy::serialize() const {
  std::ostringstream blob;
  try {
    torch::serialize::OutputArchive ar, net_ar, adam_ar;
    const auto& o = impl_->opt;
    ar.write("doppler_format", torch::tensor(std::int64_t{1}));
    const torch::Tensor opts = torch::tensor({std::int64_t{o.hidden}, std::int64_t{o.steps},
                                       std::int64_t{o.proj}, std::int64_t{o.mlp},
                                       std::int64_t{static_cast<int>(o.kind)},
                                       std::int64_t{static_cast<int>(o.ablation)},
                                       std::int64_t{o.hint_budget},
                                       std::int64_t{static_cast<int>(o.hint_model)},
                                       std::int64_t{o.sibling ? 1 : 0},
                                       std::int64_t{o.dynamic_sel ? 1 : 0}});
    ar.write("options", opts);
    torch::Tensor hint;
    if (!o.hint.empty()) {  // the hint placer's name, as bytes
      std::vector<std::int64_t> bytes(o.hint.begin(), o.hint.end());
      hint = torch::tensor(bytes);
      ar.write("hint", hint);
    }
    ar.write("options_digest", torch::tensor(options_digest(opts, hint)));
    impl_->model->save(net_ar);
    impl_->adam->save(adam_ar);
    ar.write("digest", torch::tensor(parameter_digest(*impl_->model, *impl_->adam, impl_->offsets)));
    ar.write("net", net_ar);
    ar.write("adam", adam_ar);
    if (o.active_search > 0 || !impl_->offsets.empty()) {
      ar.write("active_search", torch::tensor(o.active_search, torch::kDouble));
      torch::serialize::OutputArchive off_ar;
      std::int64_t i = 0;
      for (const auto& [fp, off] : impl_->offsets) {
        const auto k = std::to_string(i++);
        torch::serialize::OutputArchive opt_ar;
        off.adam->save(opt_ar);
        off_ar.write("fp_" + k, torch::tensor(static_cast<std::int64_t>(fp)));
        off_ar.write("sel_" + k, off.sel.detach());
        off_ar.write("plc_" + k, off.plc.detach());
        off_ar.write("adam_" + k, opt_ar);
      }
      off_ar.write("count", torch::tensor(i));
      ar.write("offsets", off_ar);
    }
    ar.save_to(blob);
  } catch (const std::exception& ex) {
    throw error(errc::io, "cannot write checkpoint: " + torch_reason(ex));
  }
  return blob.str();
}

policy policy::load(const std::string& path) {
  if (!std::filesystem::exists(path)) throw error(errc::io, path, "", "no such checkpoint file");
  std::string blob = read_file(path);  // a directory or an endless device: an error naming path
  if (!blob.starts_with("PK")) {  // a checkpoint is LibTorch's zip archive; say what the file is instead
    const bool state = path.ends_with(".resume");
    throw error(errc::bad_format_tag, path, "",
                state ? "cannot read checkpoint: this is a training's resume state, not a policy (the interrupted "
                        "`doppler train` command with --resume continues it and writes the checkpoint)"
                      : "cannot read checkpoint: not a LibTorch archive (the zip `doppler train -o` writes)");
  }
  return deserialize(blob, path);
}

policy policy::deserialize(const std::string& blob, const std::string& path) {
  try {
    torch::serialize::InputArchive ar, net_ar, adam_ar;
    std::istringstream in(blob);
    ar.load_from(in);
    torch::Tensor fmt, opts;
    if (!ar.try_read("doppler_format", fmt) || fmt.item<std::int64_t>() != 1 || !ar.try_read("options", opts) ||
        opts.numel() < 4)
      throw error(errc::bad_format_tag, path, "", "not a doppler policy checkpoint (format 1)");
    if (opts.scalar_type() != torch::kLong || opts.dim() != 1)
      throw error(errc::bad_format_tag, path, "", "not a doppler policy checkpoint (its options are not 64-bit integers)");
    auto a = opts.accessor<std::int64_t, 1>();
    // The policy's constructor checks the sizes' ranges (checked_sizes); here only that they survive
    // the cast to int (2^40 must not read as 0).
    for (int k = 0; k < 4; ++k)
      if (a[k] < 0 || a[k] > std::numeric_limits<int>::max())
        throw error(errc::bad_value, path, "", "network size " + std::to_string(a[k]) + " is not an int");
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
    if (opts.numel() > 8) {  // absent: no sibling feature (checkpoints before 2026-12-05)
      if (a[8] != 0 && a[8] != 1) throw error(errc::bad_value, path, "", "sibling flag " + std::to_string(a[8]) + " is not 0 or 1");
      o.sibling = a[8] == 1;
    }
    if (opts.numel() > 9) {  // absent: the paper's static SEL (checkpoints before 2026-12-07)
      if (a[9] != 0 && a[9] != 1) throw error(errc::bad_value, path, "", "dynamic SEL flag " + std::to_string(a[9]) + " is not 0 or 1");
      o.dynamic_sel = a[9] == 1;
    }
    torch::Tensor hint;
    const bool has_hint = ar.try_read("hint", hint);
    torch::Tensor odigest;  // absent in checkpoints written before 2026-12-06 (session 12)
    if (ar.try_read("options_digest", odigest) &&
        (odigest.numel() != 1 || odigest.item<std::int64_t>() != options_digest(opts, has_hint ? hint : torch::Tensor())))
      throw error(errc::bad_value, path, "", "the options do not match the checkpoint's checksum: the file is damaged");
    if (has_hint) {  // absent: no hint
      auto h = hint.accessor<std::int64_t, 1>();
      for (std::int64_t i = 0; i < hint.numel(); ++i) {
        if (h[i] <= 0 || h[i] > 127) throw error(errc::bad_value, path, "", "the hint placer's name is not ASCII");
        o.hint.push_back(static_cast<char>(h[i]));
      }
      if (opts.numel() < 8) throw error(errc::bad_value, path, "", "a hint without its budget and model");
      if (o.hint.empty()) throw error(errc::bad_value, path, "", "an empty hint name");
      if (a[6] < 1 || a[6] > std::numeric_limits<int>::max())
        throw error(errc::bad_value, path, "", "hint budget " + std::to_string(a[6]) + " out of range");
      o.hint_budget = static_cast<int>(a[6]);
      if (a[7] != static_cast<int>(sim_model::simple) && a[7] != static_cast<int>(sim_model::wc))
        throw error(errc::bad_value, path, "", "unknown hint model " + std::to_string(a[7]));
      o.hint_model = static_cast<sim_model>(a[7]);
    }
    std::optional<policy> made;
    try {
      made.emplace(o);
    } catch (const error& e) {  // e.g. a hint placer this build does not have
      throw error(e.code(), path, "", e.reason());
    }
    policy pol = std::move(*made);
    ar.read("net", net_ar);
    // Module::load adopts each stored tensor's shape; the kernels index by the options' sizes, so a
    // parameter that does not have the shape the options give is a damaged file, not a policy.
    std::vector<shape_t> shapes;
    for (const auto& t : pol.impl_->model->parameters()) shapes.push_back(t.sizes().vec());
    pol.impl_->model->load(net_ar);
    const auto params = pol.impl_->model->parameters();
    for (std::size_t k = 0; k < params.size(); ++k)
      if (params[k].sizes().vec() != shapes[k])
        throw error(errc::bad_value, path, "",
                    "parameter " + std::to_string(k) + " has shape " + doppler::to_string(params[k].sizes().vec()) +
                        ", its options give " + doppler::to_string(shapes[k]) + ": the file is damaged");
    if (ar.try_read("adam", adam_ar)) pol.impl_->adam->load(adam_ar);
    torch::Tensor lr;  // absent: no active search (checkpoints before 2026-12-04 too)
    if (ar.try_read("active_search", lr)) {
      const double v = lr.item<double>();
      try {
        pol.set_active_search(v);
      } catch (const error& e) {
        throw error(errc::bad_value, path, "", e.reason());
      }
      torch::serialize::InputArchive off_ar;
      torch::Tensor count;
      ar.read("offsets", off_ar);
      off_ar.read("count", count);
      for (std::int64_t i = 0; i < count.item<std::int64_t>(); ++i) {
        const auto k = std::to_string(i);
        torch::Tensor fp, sel, plc;
        off_ar.read("fp_" + k, fp);
        off_ar.read("sel_" + k, sel);
        off_ar.read("plc_" + k, plc);
        if (sel.dim() != 1 || plc.dim() != 2 || plc.size(0) != sel.size(0))
          throw error(errc::bad_value, path, "", "active-search offsets " + k + " have inconsistent shapes");
        auto off = pol.impl_->make_offsets(sel.size(0), plc.size(1));
        {
          torch::NoGradGuard ng;
          off.sel.copy_(sel);
          off.plc.copy_(plc);
        }
        torch::serialize::InputArchive opt_ar;
        off_ar.read("adam_" + k, opt_ar);
        off.adam->load(opt_ar);
        pol.impl_->offsets.emplace(static_cast<std::uint64_t>(fp.item<std::int64_t>()), std::move(off));
      }
    }
    torch::Tensor digest;  // absent in checkpoints written before 2026-12-02
    if (ar.try_read("digest", digest) &&
        digest.item<std::int64_t>() != parameter_digest(*pol.impl_->model, *pol.impl_->adam, pol.impl_->offsets))
      throw error(errc::bad_value, path, "", "the parameters do not match the checkpoint's checksum: the file is damaged");
    return pol;
  } catch (const error&) {
    throw;
  } catch (const std::exception& ex) {
    throw error(errc::bad_value, path, "", "cannot read checkpoint: " + torch_reason(ex));
  }
}
}  // namespace doppler::learner
