// Phases I and II (trainer.hpp).
#include <doppler/learner/trainer.hpp>

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/tolerance.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace doppler::learner {

namespace {

/// Linear schedule from a to b over [0, 1].
double lerp(double a, double b, double x) { return a + (b - a) * std::clamp(x, 0.0, 1.0); }

/// Where a phase's schedules (learning rate, ε, entropy weight) stand for the batch whose first
/// episode is `done`: done / (episodes − 1). With batches of B the last update runs at
/// (episodes − B) / (episodes − 1) of the way, short of the `_final` values (0.996 at 2 000 episodes
/// in batches of 8, 0.53 at 16). Kept as it is: every published training was made with it and
/// reproduces to the digit (docs/learner.md, "Curriculum").
double schedule_x(int done, int episodes) {
  return episodes > 1 ? static_cast<double>(done) / (episodes - 1) : 1.0;
}

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
  if (const long long total = static_cast<long long>(o.il_episodes) + o.rl_episodes + o.real_episodes;
      total > L::max_episodes)
    throw error(errc::bad_argument, "learner: train options il_episodes + rl_episodes + real_episodes = " +
                                        std::to_string(total) + " is more than " + std::to_string(L::max_episodes));
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
  number("il_teacher_forcing", o.il_teacher_forcing, 0, 1);
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
  if (opt.checkpoint_every < 0) throw error(errc::bad_argument, "learner: checkpoint_every must be >= 0");
  if (opt.il_teacher_forcing > 0 && opt.il_episodes > 0 && pol.options().kind != policy_kind::dual)
    throw error(errc::bad_argument, "learner: il_teacher_forcing (behaviour cloning) needs a dual policy, not " +
                                        policy_kind_name(pol.options().kind));
  // The state that persists across batches (train_state): fresh, or the one to resume from.
  train_state st;
  const bool resuming = opt.resume != nullptr;
  if (resuming) {
    st = *opt.resume;
    st.policy.clear();  // the caller's policy is the state's; the copy is not needed
    const int in_phase = st.phase == 1 ? opt.il_episodes : st.phase == 2 ? opt.rl_episodes : 0;
    // One curve row per episode: the phases before the state's, and `done` of its own.
    const std::size_t rows = static_cast<std::size_t>(st.done) + (st.phase >= 2 ? opt.il_episodes : 0) +
                             (st.phase >= 3 ? opt.rl_episodes : 0);
    if (!st.sized_for(n_pb) || st.done > in_phase || st.curve.size() != rows)
      throw error(errc::bad_argument, "learner: the state to resume from was written for other problems or episode counts (" +
                                          std::to_string(st.initial_greedy.size()) + " problems, phase " +
                                          std::to_string(st.phase) + " at episode " + std::to_string(st.done) + ", " +
                                          std::to_string(st.curve.size()) + " curve rows)");
  }
  train_result res;
  res.per_problem.resize(n_pb);
  std::vector<placement> cp_of(n_pb);  // the cp teacher (seed 0) per problem: the curve's unit
  for (std::size_t k = 0; k < n_pb; ++k) {
    const problem& q = *pbs[k];
    cp_of[k] = cp_place(q.g(), q.c(), q.cm(), 0, nullptr, q.respect_memory());
    res.per_problem[k].cp_makespan = score(q, cp_of[k], opt.sim);
    // Every makespan is reported, and with several problems learned, in units of cp's: a graph that
    // takes no time (only inputs, zero-cost ops) has nothing to learn and would make them NaN.
    if (!(res.per_problem[k].cp_makespan > 0) || !std::isfinite(res.per_problem[k].cp_makespan))
      throw error(errc::bad_value, "", "",
                  "learner: graph '" + q.g().name() + "' (problem " + std::to_string(k + 1) +
                      ") takes no time under cp's placement: nothing to train on (its ops have no cost)");
    if (resuming) {
      res.per_problem[k].initial_greedy_makespan = st.initial_greedy[k];
      continue;
    }
    placement initial = pol.place(q);
    res.per_problem[k].initial_greedy_makespan = score(q, initial, opt.sim);
    st.initial_greedy.push_back(res.per_problem[k].initial_greedy_makespan);
    if (k == 0) st.best = std::move(initial);
  }
  res.cp_makespan = res.per_problem[0].cp_makespan;
  res.lower_bound = makespan_lower_bound(pb.g(), pb.c(), pb.cm(), opt.sim);
  res.initial_greedy_makespan = res.per_problem[0].initial_greedy_makespan;
  // With several problems the curve is in units of each problem's cp makespan (comparable rows).
  auto unit = [&](std::size_t k) { return n_pb > 1 ? res.per_problem[k].cp_makespan : 1.0; };
  // ... and phase III's in units of each problem's measured cp makespan.
  auto real_unit = [&](std::size_t k) { return n_pb > 1 ? res.per_problem[k].real_cp : 1.0; };
  if (!resuming) {
    st.best_makespan = res.initial_greedy_makespan;
    st.curve_best = std::numeric_limits<double>::infinity();  // the initial greedy placements count
    for (std::size_t k = 0; k < n_pb; ++k) st.curve_best = std::min(st.curve_best, res.per_problem[k].initial_greedy_makespan / unit(k));
    st.cost_sum.assign(n_pb, 0.0);
    st.ema.assign(n_pb, 0.0);
    st.self_best.assign(n_pb, std::numeric_limits<double>::infinity());
    st.cost_n.assign(n_pb, 0);
    st.self_episode.assign(n_pb, {});
    st.best_greedy = std::numeric_limits<double>::infinity();
  }
  res.curve = std::move(st.curve);  // the live curve; st.curve is refilled for every checkpoint
  // A teacher-forced episode (its placement is the teacher's) is recorded but is no best.
  auto record = [&](const episode& ep, std::size_t k, const char* phase, double loss, double agreement, double ms,
                    bool forced = false) {
    if (k == 0 && ms < st.best_makespan && !forced) {
      st.best_makespan = ms;
      st.best = ep.result;
    }
    if (!forced) st.curve_best = std::min(st.curve_best, ms / unit(k));
    train_row row{static_cast<int>(res.curve.size()) + 1, phase, ms / unit(k), st.curve_best, loss, agreement, static_cast<int>(k)};
    res.curve.push_back(row);
    if (opt.on_episode) opt.on_episode(row);
  };
  // Hands the state to on_checkpoint: after a batch once every checkpoint_every episodes, when
  // stopping (force), and after phase II. The elapsed time of the running phase is added.
  std::size_t last_checkpoint = res.curve.size();
  auto t0 = std::chrono::steady_clock::now();
  auto checkpoint = [&](int phase, int done, bool force) {
    if (!opt.on_checkpoint) return;
    const bool due = opt.checkpoint_every > 0 &&
                     res.curve.size() >= last_checkpoint + static_cast<std::size_t>(opt.checkpoint_every);
    if (!force && !due) return;
    last_checkpoint = res.curve.size();
    train_state out = st;
    out.phase = phase, out.done = done;
    out.curve = res.curve;
    if (phase == 1) out.il_seconds += seconds_since(t0);
    if (phase == 2) out.rl_seconds += seconds_since(t0);
    out.policy = pol.serialize();
    opt.on_checkpoint(out);
  };
  auto stop_now = [&] { return opt.stop && opt.stop(); };
  auto finish_stopped = [&] {
    res.stopped = true;
    res.best = st.best;
    res.best_makespan = st.best_makespan;
    return res;
  };

  // Phase I: the learner's ε-greedy rollouts, labelled with the teacher's tie sets at every visited
  // state; the update raises the log-probability of every tied teacher action. With several
  // problems the batches take turns.
  std::vector<episode> batch;
  std::vector<bool> forced;  // per episode of the batch: it followed the teacher
  // Phase I episode j follows the teacher when it brings the count of such episodes, j·f rounded
  // down, up by one: the fraction f spread evenly (f = 0.5: every second episode).
  auto forced_episode = [&](int j) {
    const double f = opt.il_teacher_forcing;
    return std::floor((j + 1) * f) > std::floor(j * f);
  };
  // Every batch but a phase's last has opt.batch episodes, so a checkpoint's batch count is done / batch.
  const bool in_il = !resuming || st.phase == 1;
  const int il_start = resuming && st.phase == 1 ? st.done : 0;
  for (int done = il_start, batch_no = il_start / opt.batch; in_il && done < opt.il_episodes; ++batch_no) {
    const std::size_t k = static_cast<std::size_t>(batch_no) % n_pb;
    const double x = schedule_x(done, opt.il_episodes);
    pol.set_learning_rate(opt.il_lr * lerp(1.0, opt.lr_final, x));
    const double eps = lerp(opt.il_epsilon, opt.il_epsilon_final, x);
    const int b = std::min(opt.batch, opt.il_episodes - done);
    batch.clear();
    forced.clear();
    for (int i = 0; i < b; ++i) {
      auto o = rollout_options::sample(mix(opt.seed * 1000003ULL + static_cast<std::uint64_t>(done + i)), 1.0, eps);
      // The policy's own greedy action (DAgger), a uniform random one with probability ε; or, in
      // the fraction il_teacher_forcing of episodes (evenly spread), the teacher's own.
      o.greedy = true;
      o.teacher = true;
      o.follow_teacher = forced_episode(done + i);
      forced.push_back(o.follow_teacher);
      batch.push_back(pol.rollout(*pbs[k], o));
    }
    double loss = pol.imitation_update(*pbs[k], batch);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto& ep = batch[i];
      record(ep, k, "il", loss, ep.steps() ? static_cast<double>(ep.both_agree) / ep.steps() : 1.0,
             score(*pbs[k], ep.result, opt.sim), forced[i]);
    }
    done += b;
    if (done < opt.il_episodes) {  // the last batch's state is phase II's start, checkpointed there
      const bool stopping = stop_now();
      checkpoint(1, done, stopping);
      if (stopping) return finish_stopped();
    }
  }
  if (in_il) {
    st.il_seconds += seconds_since(t0);
    for (const problem* q : pbs) {  // the mean over problems
      auto agree = teacher_agreement(pol, *q);
      st.agreement += agree.both / static_cast<double>(n_pb);
      st.sel_agreement += agree.sel / static_cast<double>(n_pb);
      st.plc_agreement += agree.plc / static_cast<double>(n_pb);
    }
  }
  res.il_seconds = st.il_seconds;
  res.final_agreement = st.agreement;
  res.final_sel_agreement = st.sel_agreement;
  res.final_plc_agreement = st.plc_agreement;

  // Phases II and III: REINFORCE with the running mean of all costs so far (per problem) as the
  // baseline; the advantage is relative, (baseline − cost) / baseline, so the step size does not
  // depend on the time unit. Phase II's costs come from the simulator (its state is st's, so it can
  // be checkpointed), phase III's from opt.measure (a fresh state `rs`).
  std::function<void(int)> on_update;
  // Returns false when stopped (phase II only).
  auto reinforce = [&](train_state& rs, const char* phase, int episodes, int batch_size,
                       const std::function<double(std::size_t, const placement&)>& cost, std::uint64_t stream) {
    double phase_best = std::numeric_limits<double>::infinity();
    std::vector<double> costs, adv;
    int& done = rs.done;
    int updates = done / batch_size;
    // Phase II's schedules run over its episodes; phase III (measured costs) continues at their final
    // values, with the running mean as its baseline and sampling without ε — as `doppler train`'s
    // phase III through the learner actor does (it restarted phase II's schedules, 5x the learning rate).
    const bool phase3 = stream != 0;
    while (done < episodes) {
      const std::size_t k = static_cast<std::size_t>(updates) % n_pb;
      const problem& q = *pbs[k];
      const double x = phase3 ? 1.0 : schedule_x(done, episodes);
      pol.set_learning_rate(opt.rl_lr * lerp(1.0, opt.lr_final, x));
      const int b = std::min(batch_size, episodes - done);
      batch.clear();
      costs.clear();
      for (int i = 0; i < b; ++i) {
        auto o = rollout_options::sample(mix(opt.seed * 1000003ULL + stream + static_cast<std::uint64_t>(done + i)),
                                         opt.temperature, phase3 ? 0.0 : opt.rl_epsilon);
        batch.push_back(pol.rollout(q, o));
        costs.push_back(cost(k, batch.back().result));
      }
      double batch_mean = 0;
      for (double c : costs) batch_mean += c;
      batch_mean /= static_cast<double>(costs.size());
      // The paper's running mean of every cost so far, or (baseline_decay > 0) an exponential one;
      // in phase II optionally the batch's mean or the greedy placement's cost (baseline_kind).
      double baseline = rs.cost_n[k] == 0                    ? batch_mean
                        : opt.baseline_decay > 0 && !phase3 ? rs.ema[k]
                                                              : rs.cost_sum[k] / static_cast<double>(rs.cost_n[k]);
      if (!phase3 && opt.baseline == baseline_kind::batch) baseline = batch_mean;
      if (!phase3 && opt.baseline == baseline_kind::greedy) baseline = cost(k, pol.place(q));  // self-critical
      rs.ema[k] = rs.cost_n[k] == 0 ? batch_mean : opt.baseline_decay * rs.ema[k] + (1 - opt.baseline_decay) * batch_mean;
      adv = reinforce_advantages(costs, baseline, opt.normalize_advantages, opt.advantage_floor);
      const double beta = lerp(opt.entropy, opt.entropy_final, x);
      const bool ppo = opt.ppo && !phase3;
      double loss = ppo ? pol.ppo_update(q, batch, adv, opt.gamma, beta, opt.ppo_clip, opt.ppo_epochs, opt.ppo_target_kl)
                        : pol.reinforce_update(q, batch, adv, opt.gamma, beta);
      if (ppo) {
        rs.ppo_steps += pol.last_ppo_epochs();
        ++rs.ppo_updates;
      }
      for (std::size_t i = 0; i < batch.size(); ++i) {
        rs.cost_sum[k] += costs[i];
        ++rs.cost_n[k];
        if (!phase3) {
          record(batch[i], k, phase, loss, -1, costs[i]);
        } else {  // measured costs: their own best, not mixed with simulated ones
          const double ms = costs[i] / real_unit(k);
          phase_best = std::min(phase_best, ms);
          train_row row{static_cast<int>(res.curve.size()) + 1, phase, ms, phase_best, loss, -1, static_cast<int>(k)};
          res.curve.push_back(row);
          if (opt.on_episode) opt.on_episode(row);
        }
      }
      if (opt.self_imitation > 0 && !phase3) {
        for (std::size_t i = 0; i < batch.size(); ++i)
          if (costs[i] < rs.self_best[k]) {
            rs.self_best[k] = costs[i];
            rs.self_episode[k].assign(1, self_labelled(batch[i]));
          }
        // Gated: only while the best sample beats what the greedy policy places now, by more than
        // rounding (two orders of the same work can differ in the last bits of a makespan).
        const bool fire = !rs.self_episode[k].empty() &&
                          (!opt.self_imitation_gate || clearly_less(rs.self_best[k], cost(k, pol.place(q))));
        for (int j = 0; fire && j < opt.self_imitation; ++j) pol.imitation_update(q, rs.self_episode[k]);
        if (fire) ++rs.sil_updates;
      }
      done += b;
      ++updates;
      if (on_update) on_update(updates);
      if (!phase3 && done < episodes) {  // the last batch's state is checkpointed after selection
        const bool stopping = stop_now();
        checkpoint(2, done, stopping);
        if (stopping) return false;
      }
    }
    return true;
  };
  t0 = std::chrono::steady_clock::now();
  // Model selection: the greedy placement of the parameters so far, every eval_every updates; with
  // several problems, the mean of the greedy makespans over their cp makespans.
  auto greedy_score = [&] {  // with one problem: its greedy makespan (unit 1)
    double sum = 0;
    for (std::size_t k = 0; k < n_pb; ++k) sum += score(*pbs[k], pol.place(*pbs[k]), opt.sim) / unit(k);
    return sum / static_cast<double>(n_pb);
  };
  auto evaluate = [&] {
    double g = greedy_score();
    if (g < st.best_greedy) {
      st.best_greedy = g;
      st.best_params = pol.snapshot();
    }
  };
  const bool in_rl = !resuming || st.phase <= 2;
  if (in_rl) {
    if (!resuming || st.phase == 1) {
      st.done = 0;  // phase II starts
      if (opt.eval_every > 0 && opt.rl_episodes > 0) evaluate();
    }
    on_update = [&](int updates) {
      if (opt.eval_every > 0 && updates % opt.eval_every == 0) evaluate();
    };
    const bool finished = reinforce(st, "rl", opt.rl_episodes, opt.batch,
                                    [&](std::size_t k, const placement& p) { return score(*pbs[k], p, opt.sim); }, 0);
    on_update = nullptr;
    if (!finished) return finish_stopped();
    st.selected = false;
    if (!st.best_params.empty()) {
      const double last = greedy_score();
      st.last_greedy = n_pb == 1 ? last : score(pb, pol.place(pb), opt.sim);
      if (last > st.best_greedy) pol.restore(st.best_params);
      st.selected = true;
    }
    st.rl_seconds += seconds_since(t0);
    checkpoint(3, 0, true);
  }
  const bool selected = st.selected;
  if (selected) res.last_greedy_makespan = st.last_greedy;
  res.rl_seconds = st.rl_seconds;
  if (st.ppo_updates > 0) res.ppo_epochs_mean = static_cast<double>(st.ppo_steps) / static_cast<double>(st.ppo_updates);
  res.rl_updates = (opt.rl_episodes + opt.batch - 1) / opt.batch;  // every batch of phase II is one update
  res.self_imitation_updates = st.sil_updates;
  res.best = st.best;
  res.best_makespan = st.best_makespan;
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
    train_state rs;  // phase III's own baselines (not checkpointed)
    rs.cost_sum.assign(n_pb, 0.0);
    rs.ema.assign(n_pb, 0.0);
    rs.self_best.assign(n_pb, std::numeric_limits<double>::infinity());
    rs.cost_n.assign(n_pb, 0);
    rs.self_episode.assign(n_pb, {});
    reinforce(rs, "real", opt.real_episodes, opt.real_batch, measured, 0x2545f4914f6cdd1dULL);
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
