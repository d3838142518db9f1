// Phases I and II (trainer.hpp).
#include <doppler/learner/trainer.hpp>

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace doppler::learner {

namespace {

/// Linear schedule from a to b over [0, 1].
double lerp(double a, double b, double x) { return a + (b - a) * std::clamp(x, 0.0, 1.0); }

/// SplitMix64: independent rollout seeds from one training seed.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double score(const problem& pb, const placement& p, const sim_options& opt) {
  return simulate(pb.g(), pb.c(), p, pb.cm(), opt).makespan;
}

std::vector<double> reinforce_advantages(const std::vector<double>& costs, double baseline, bool normalize,
                                         double floor) {
  std::vector<double> adv;
  adv.reserve(costs.size());
  for (double c : costs) adv.push_back(baseline > 0 ? (baseline - c) / baseline : 0.0);
  if (!normalize || costs.size() < 2 || !(baseline > 0)) return adv;
  double mean = 0, var = 0;
  for (double c : costs) mean += c;
  mean /= static_cast<double>(costs.size());
  for (double c : costs) var += (c - mean) * (c - mean);
  // The batch's relative spread, floored: dividing by a tiny spread would turn the baseline offset
  // into huge same-signed advantages. All-equal costs (σ ≤ 1e-9) are left unscaled.
  const double sd = std::sqrt(var / static_cast<double>(costs.size())) / baseline;
  if (!(sd > 1e-9)) return adv;
  for (double& a : adv) a /= std::max(sd, floor);
  return adv;
}

episode self_labelled(episode ep) {
  const std::size_t t = ep.steps();
  ep.teacher_op_off.resize(t + 1);
  ep.teacher_dev_off.resize(t + 1);
  ep.teacher_ops.resize(t);
  ep.teacher_devs.resize(t);
  for (std::size_t i = 0; i <= t; ++i) ep.teacher_op_off[i] = ep.teacher_dev_off[i] = static_cast<std::uint32_t>(i);
  for (std::size_t i = 0; i < t; ++i) {
    ep.teacher_ops[i] = ep.result.order[i];
    ep.teacher_devs[i] = ep.result.device[ep.result.order[i]];
  }
  ep.sel_agree = ep.plc_agree = ep.both_agree = t;
  return ep;
}

agreement teacher_agreement(policy& pol, const problem& pb) {
  rollout_options o;
  o.teacher = true;
  auto ep = pol.rollout(pb, o);
  if (ep.steps() == 0) return {1, 1, 1};
  const auto t = static_cast<double>(ep.steps());
  return {static_cast<double>(ep.sel_agree) / t, static_cast<double>(ep.plc_agree) / t,
          static_cast<double>(ep.both_agree) / t};
}

void check_train_options(const train_options& o) {
  namespace L = train_limits;
  auto number = [](const char* field, double x, double lo, double hi) {
    if (!std::isfinite(x) || x < lo || x > hi)
      throw error(errc::bad_argument, "learner: train option " + std::string(field) + " = " + std::to_string(x) +
                                          " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  };
  auto count = [](const char* field, int x, int lo) {
    if (x < lo)
      throw error(errc::bad_argument, "learner: train option " + std::string(field) + " = " + std::to_string(x) +
                                          " must be >= " + std::to_string(lo));
  };
  count("il_episodes", o.il_episodes, 0);
  count("rl_episodes", o.rl_episodes, 0);
  count("real_episodes", o.real_episodes, 0);
  count("batch", o.batch, 1);
  count("real_batch", o.real_batch, 1);
  count("real_eval_every", o.real_eval_every, 0);
  count("real_confirm", o.real_confirm, 0);
  count("self_imitation", o.self_imitation, 0);
  if (o.self_imitation_gate && o.self_imitation == 0)
    throw error(errc::bad_argument, "learner: self_imitation_gate gates self-imitation, which is off (self_imitation 0)");
  count("eval_every", o.eval_every, 0);
  number("real_select_margin", o.real_select_margin, 0, L::select_margin_max);
  number("il_lr", o.il_lr, L::lr_min, L::lr_max);
  number("rl_lr", o.rl_lr, L::lr_min, L::lr_max);
  number("lr_final", o.lr_final, 0, 1);
  number("il_epsilon", o.il_epsilon, 0, 1);
  number("il_epsilon_final", o.il_epsilon_final, 0, 1);
  number("rl_epsilon", o.rl_epsilon, 0, 1);
  number("temperature", o.temperature, L::temperature_min, L::temperature_max);
  number("entropy", o.entropy, 0, L::entropy_max);
  number("entropy_final", o.entropy_final, 0, L::entropy_max);
  number("gamma", o.gamma, 0, 1);
  number("advantage_floor", o.advantage_floor, 0, 1);
  number("baseline_decay", o.baseline_decay, 0, L::baseline_decay_max);
  if (o.ppo) {
    number("ppo_clip", o.ppo_clip, L::ppo_clip_min, L::ppo_clip_max);
    count("ppo_epochs", o.ppo_epochs, 1);
    number("ppo_target_kl", o.ppo_target_kl, 0, L::ppo_target_kl_max);
  }
}

std::string_view baseline_name(baseline_kind k) noexcept {
  switch (k) {
    case baseline_kind::batch: return "batch";
    case baseline_kind::greedy: return "greedy";
    case baseline_kind::mean: break;
  }
  return "mean";
}

baseline_kind parse_baseline(std::string_view name) {
  for (auto k : {baseline_kind::mean, baseline_kind::batch, baseline_kind::greedy})
    if (baseline_name(k) == name) return k;
  throw error(errc::bad_argument, "unknown baseline '" + excerpt(name) + "' (mean, batch, greedy)");
}

train_result train(policy& pol, const problem& pb, const train_options& opt) {
  const problem* one = &pb;
  return train(pol, std::span<const problem* const>(&one, 1), opt);
}

train_result train(policy& pol, std::span<const problem* const> pbs, const train_options& opt) {
  if (pbs.empty()) throw error(errc::bad_argument, "learner: train needs at least one problem");
  check_train_options(opt);
  const std::size_t n_pb = pbs.size();
  const problem& pb = *pbs[0];
  if (opt.real_episodes > 0 && !opt.measure) throw error(errc::bad_argument, "learner: phase III needs a measure function");
  train_result res;
  res.per_problem.resize(n_pb);
  std::vector<placement> cp_of(n_pb);  // the cp teacher (seed 0) per problem: the curve's unit
  for (std::size_t k = 0; k < n_pb; ++k) {
    const problem& q = *pbs[k];
    placement initial = pol.place(q);
    cp_of[k] = cp_place(q.g(), q.c(), q.cm(), 0, nullptr, q.respect_memory());
    res.per_problem[k].cp_makespan = score(q, cp_of[k], opt.sim);
    res.per_problem[k].initial_greedy_makespan = score(q, initial, opt.sim);
    if (k == 0) res.best = std::move(initial);
  }
  res.cp_makespan = res.per_problem[0].cp_makespan;
  res.lower_bound = makespan_lower_bound(pb.g(), pb.c(), pb.cm(), opt.sim);
  res.best_makespan = res.initial_greedy_makespan = res.per_problem[0].initial_greedy_makespan;
  // With several problems the curve is in units of each problem's cp makespan (comparable rows).
  auto unit = [&](std::size_t k) { return n_pb > 1 ? res.per_problem[k].cp_makespan : 1.0; };
  // ... and phase III's in units of each problem's measured cp makespan.
  auto real_unit = [&](std::size_t k) { return n_pb > 1 ? res.per_problem[k].real_cp : 1.0; };
  double curve_best = std::numeric_limits<double>::infinity();  // the initial greedy placements count
  for (std::size_t k = 0; k < n_pb; ++k) curve_best = std::min(curve_best, res.per_problem[k].initial_greedy_makespan / unit(k));

  int episode_no = 0;
  auto record = [&](const episode& ep, std::size_t k, const char* phase, double loss, double agreement, double ms) {
    if (k == 0 && ms < res.best_makespan) {
      res.best_makespan = ms;
      res.best = ep.result;
    }
    curve_best = std::min(curve_best, ms / unit(k));
    train_row row{++episode_no, phase, ms / unit(k), curve_best, loss, agreement, static_cast<int>(k)};
    res.curve.push_back(row);
    if (opt.on_episode) opt.on_episode(row);
  };

  // Phase I: the learner's ε-greedy rollouts, labelled with the teacher's tie sets at every visited
  // state; the update raises the log-probability of every tied teacher action. With several
  // problems the batches take turns.
  auto t0 = std::chrono::steady_clock::now();
  std::vector<episode> batch;
  for (int done = 0, batch_no = 0; done < opt.il_episodes; ++batch_no) {
    const std::size_t k = static_cast<std::size_t>(batch_no) % n_pb;
    const double x = opt.il_episodes > 1 ? static_cast<double>(done) / (opt.il_episodes - 1) : 1.0;
    pol.set_learning_rate(opt.il_lr * lerp(1.0, opt.lr_final, x));
    const double eps = lerp(opt.il_epsilon, opt.il_epsilon_final, x);
    const int b = std::min(opt.batch, opt.il_episodes - done);
    batch.clear();
    for (int i = 0; i < b; ++i) {
      auto o = rollout_options::sample(mix(opt.seed * 1000003ULL + static_cast<std::uint64_t>(done + i)), 1.0, eps);
      // The policy's own greedy action (DAgger), a uniform random one with probability ε.
      o.greedy = true;
      o.teacher = true;
      batch.push_back(pol.rollout(*pbs[k], o));
    }
    double loss = pol.imitation_update(*pbs[k], batch);
    for (const auto& ep : batch)
      record(ep, k, "il", loss, ep.steps() ? static_cast<double>(ep.both_agree) / ep.steps() : 1.0,
             score(*pbs[k], ep.result, opt.sim));
    done += b;
  }
  res.il_seconds = seconds_since(t0);
  for (const problem* q : pbs) {  // the mean over problems
    auto agree = teacher_agreement(pol, *q);
    res.final_agreement += agree.both / static_cast<double>(n_pb);
    res.final_sel_agreement += agree.sel / static_cast<double>(n_pb);
    res.final_plc_agreement += agree.plc / static_cast<double>(n_pb);
  }

  // Phases II and III: REINFORCE with the running mean of all costs so far (per problem) as the
  // baseline; the advantage is relative, (baseline − cost) / baseline, so the step size does not
  // depend on the time unit. Phase II's costs come from the simulator, phase III's from opt.measure.
  std::function<void(int)> on_update;
  long ppo_steps = 0, ppo_updates = 0;  // phase II's PPO Adam steps and updates (ppo_epochs_mean)
  int rl_updates = 0, sil_updates = 0;  // phase II's updates, and those followed by self-imitation
  auto reinforce = [&](const char* phase, int episodes, int batch_size,
                       const std::function<double(std::size_t, const placement&)>& cost, std::uint64_t stream) {
    std::vector<double> cost_sum(n_pb, 0.0), ema(n_pb, 0.0), self_best(n_pb, std::numeric_limits<double>::infinity());
    std::vector<std::size_t> cost_n(n_pb, 0);
    std::vector<std::vector<episode>> self_ep(n_pb);  // the best episode so far, self-labelled (self_imitation)
    double phase_best = std::numeric_limits<double>::infinity();
    std::vector<double> costs, adv;
    int updates = 0;
    for (int done = 0; done < episodes;) {
      const std::size_t k = static_cast<std::size_t>(updates) % n_pb;
      const problem& q = *pbs[k];
      const double x = episodes > 1 ? static_cast<double>(done) / (episodes - 1) : 1.0;
      pol.set_learning_rate(opt.rl_lr * lerp(1.0, opt.lr_final, x));
      const int b = std::min(batch_size, episodes - done);
      batch.clear();
      costs.clear();
      for (int i = 0; i < b; ++i) {
        auto o = rollout_options::sample(mix(opt.seed * 1000003ULL + stream + static_cast<std::uint64_t>(done + i)),
                                         opt.temperature, opt.rl_epsilon);
        batch.push_back(pol.rollout(q, o));
        costs.push_back(cost(k, batch.back().result));
      }
      double batch_mean = 0;
      for (double c : costs) batch_mean += c;
      batch_mean /= static_cast<double>(costs.size());
      // The paper's running mean of every cost so far, or (baseline_decay > 0) an exponential one;
      // in phase II optionally the batch's mean or the greedy placement's cost (baseline_kind).
      double baseline = cost_n[k] == 0 ? batch_mean
                        : opt.baseline_decay > 0 ? ema[k]
                                                 : cost_sum[k] / static_cast<double>(cost_n[k]);
      if (stream == 0 && opt.baseline == baseline_kind::batch) baseline = batch_mean;
      if (stream == 0 && opt.baseline == baseline_kind::greedy) baseline = cost(k, pol.place(q));  // self-critical
      ema[k] = cost_n[k] == 0 ? batch_mean : opt.baseline_decay * ema[k] + (1 - opt.baseline_decay) * batch_mean;
      adv = reinforce_advantages(costs, baseline, opt.normalize_advantages, opt.advantage_floor);
      const double beta = lerp(opt.entropy, opt.entropy_final, x);
      const bool ppo = opt.ppo && stream == 0;
      double loss = ppo ? pol.ppo_update(q, batch, adv, opt.gamma, beta, opt.ppo_clip, opt.ppo_epochs, opt.ppo_target_kl)
                        : pol.reinforce_update(q, batch, adv, opt.gamma, beta);
      if (ppo) {
        ppo_steps += pol.last_ppo_epochs();
        ++ppo_updates;
      }
      for (std::size_t i = 0; i < batch.size(); ++i) {
        cost_sum[k] += costs[i];
        ++cost_n[k];
        if (stream == 0) {
          record(batch[i], k, phase, loss, -1, costs[i]);
        } else {  // measured costs: their own best, not mixed with simulated ones
          const double ms = costs[i] / real_unit(k);
          phase_best = std::min(phase_best, ms);
          train_row row{++episode_no, phase, ms, phase_best, loss, -1, static_cast<int>(k)};
          res.curve.push_back(row);
          if (opt.on_episode) opt.on_episode(row);
        }
      }
      if (opt.self_imitation > 0 && stream == 0) {
        for (std::size_t i = 0; i < batch.size(); ++i)
          if (costs[i] < self_best[k]) {
            self_best[k] = costs[i];
            self_ep[k].assign(1, self_labelled(batch[i]));
          }
        // Gated: only while the best sample beats what the greedy policy places now.
        const bool fire = !self_ep[k].empty() && (!opt.self_imitation_gate || self_best[k] < cost(k, pol.place(q)));
        for (int j = 0; fire && j < opt.self_imitation; ++j) pol.imitation_update(q, self_ep[k]);
        if (fire) ++sil_updates;
      }
      done += b;
      ++updates;
      if (stream == 0) ++rl_updates;
      if (on_update) on_update(updates);
    }
  };
  t0 = std::chrono::steady_clock::now();
  // Model selection: the greedy placement of the parameters so far, every eval_every updates; with
  // several problems, the mean of the greedy makespans over their cp makespans.
  auto greedy_score = [&] {  // with one problem: its greedy makespan (unit 1)
    double sum = 0;
    for (std::size_t k = 0; k < n_pb; ++k) sum += score(*pbs[k], pol.place(*pbs[k]), opt.sim) / unit(k);
    return sum / static_cast<double>(n_pb);
  };
  std::string best_params;
  double best_greedy = std::numeric_limits<double>::infinity();
  auto evaluate = [&] {
    double g = greedy_score();
    if (g < best_greedy) {
      best_greedy = g;
      best_params = pol.snapshot();
    }
  };
  if (opt.eval_every > 0 && opt.rl_episodes > 0) evaluate();
  on_update = [&](int updates) {
    if (opt.eval_every > 0 && updates % opt.eval_every == 0) evaluate();
  };
  reinforce("rl", opt.rl_episodes, opt.batch,
            [&](std::size_t k, const placement& p) { return score(*pbs[k], p, opt.sim); }, 0);
  on_update = nullptr;
  bool selected = false;
  if (!best_params.empty()) {
    const double last = greedy_score();
    res.last_greedy_makespan = n_pb == 1 ? last : score(pb, pol.place(pb), opt.sim);
    if (last > best_greedy) pol.restore(best_params);
    selected = true;
  }
  res.rl_seconds = seconds_since(t0);
  if (ppo_updates > 0) res.ppo_epochs_mean = static_cast<double>(ppo_steps) / static_cast<double>(ppo_updates);
  res.rl_updates = rl_updates;
  res.self_imitation_updates = sil_updates;
  if (opt.real_episodes > 0) {
    t0 = std::chrono::steady_clock::now();
    auto measured = [&](std::size_t k, const placement& p) {
      const double ms = opt.measure(k, p);
      if (!std::isfinite(ms) || !(ms > 0))
        throw error(errc::bad_argument, "learner: phase III's measure returned " + std::to_string(ms) +
                                            " for problem " + std::to_string(k) + " (expected a positive makespan)");
      return ms;
    };
    for (std::size_t k = 0; k < n_pb; ++k) {
      if (n_pb > 1) res.per_problem[k].real_cp = measured(k, cp_of[k]);
      res.per_problem[k].real_initial_greedy = measured(k, pol.place(*pbs[k]));
    }
    reinforce("real", opt.real_episodes, opt.real_batch, measured, 0x2545f4914f6cdd1dULL);
    for (std::size_t k = 0; k < n_pb; ++k) res.per_problem[k].real_final_greedy = measured(k, pol.place(*pbs[k]));
    res.real_initial_greedy = res.per_problem[0].real_initial_greedy;
    res.real_final_greedy = res.per_problem[0].real_final_greedy;
    res.real_seconds = seconds_since(t0);
  }
  auto greedy = pol.place(pb);
  res.per_problem[0].greedy_makespan = score(pb, greedy, opt.sim);
  for (std::size_t k = 1; k < n_pb; ++k) res.per_problem[k].greedy_makespan = score(*pbs[k], pol.place(*pbs[k]), opt.sim);
  res.greedy_makespan = res.per_problem[0].greedy_makespan;
  if (!selected) res.last_greedy_makespan = res.greedy_makespan;
  if (res.greedy_makespan < res.best_makespan) {
    res.best_makespan = res.greedy_makespan;
    res.best = greedy;
  }
  return res;
}

}  // namespace doppler::learner
