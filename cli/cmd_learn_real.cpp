// Phase III of `doppler train` through the learner actor (learn_real.hpp). doppler-learn only, and
// only with the actor layer (DOPPLER_HAVE_ACTORS); cmd_learn.cpp refuses phase III without it.

#include "learn_real.hpp"
#include "run_setup.hpp"
#include "summary.hpp"

#ifdef DOPPLER_HAVE_ACTORS

#include <doppler/actors/engine.hpp>
#include <doppler/actors/online.hpp>
#include <doppler/learner/doppler_learner.hpp>
#include <doppler/runtime/placer.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <memory>

namespace doppler::cli {

namespace {

/// A distinct evaluation of the parameters: their greedy placement of every graph, measured. A
/// measurement of a placement counts for every evaluation that has it (parameters can share one
/// graph's placement and differ on another's).
struct evaluated {
  std::vector<placement> p;  // per graph
  std::vector<double> sum;
  std::vector<int> n;
  double mean(std::size_t k) const { return sum[k] / n[k]; }
  /// Mean over the graphs of this evaluation's mean makespan in units of `inc`'s (one graph: the
  /// ordering of the means).
  double ratio(const evaluated& inc) const {
    double r = 0;
    for (std::size_t k = 0; k < p.size(); ++k) r += mean(k) / inc.mean(k);
    return r / static_cast<double>(p.size());
  }
};

}  // namespace

real_phase_result run_real_phase(learner::policy pol, const std::vector<graph>& graphs,
                                 const std::function<const cluster&(std::size_t)>& cluster_of, std::size_t n_clusters,
                                 const cost_model& cm, const learner::train_options& t, const real_phase_options& o,
                                 const std::string& out, std::vector<learner::train_row>& curve) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = graphs.size();
  real_phase_result res;
  res.graphs.resize(n);
  // One engine per cluster (with that cluster's stragglers); the learner actor
  // lives in the first engine's actor system and serves every graph, through a client per cluster.
  std::vector<std::unique_ptr<engine>> engines;
  for (std::size_t k = 0; k < n_clusters; ++k) {
    engine_options eo = with_named_backend(engine_options{}, o.backend, cluster_of(k).device_count(), "--real-backend");
    if (k < o.stragglers.size()) eo.stragglers = o.stragglers[k];
    engines.push_back(
        std::make_unique<engine>(cluster_of(k), eo.with_network(!o.workers.empty()).with_busy_wait(busy_wait_flag(o.busy_wait))));
  }
  // one cluster when there are workers (cmd_learn.cpp checks)
  attach_workers(*engines.front(), cluster_of(0), o.workers, "--real-workers", o.token, &std::cerr, "phase III: ");
  auto engine_of = [&](std::size_t k) -> engine& { return *engines[n_clusters == 1 ? 0 : k]; };
  learner_config lc;
  lc.costs = cm;
  lc.sim = t.sim;
  lc.seed = t.seed;
  learner::doppler_learner_options lo;
  lo.online_lr = t.rl_lr * t.lr_final;  // phase II's final learning rate
  lo.temperature = t.temperature;
  lo.gamma = t.gamma;
  lo.entropy = t.entropy_final;
  lo.online_batch = t.real_batch;
  lo.normalize_advantages = t.normalize_advantages;
  lo.advantage_floor = t.advantage_floor;
  lo.exploit_measured = false;  // the greedy placement reported is the policy's
  lo.select_measured = t.real_eval_every > 0;
  lo.select_margin = t.real_select_margin;
  const learner_client base = engines.front()->spawn_learner(learner::make_doppler_learner(std::move(pol), lc, lo));
  std::vector<learner_client> clients;
  std::vector<std::shared_ptr<const graph>> shared;
  for (std::size_t k = 0; k < n; ++k) {
    clients.push_back(k == 0 || n_clusters == 1 ? base : base.on(std::make_shared<const cluster>(cluster_of(k))));
    shared.push_back(std::make_shared<const graph>(graphs[k]));
  }
  const auto ro = run_options{}.with_repeat(std::max(1, o.repeat)).with_trace(false);
  auto run = [&](std::size_t k, const placement& p) { return engine_of(k).run(shared[k], p, ro).mean_makespan(); };
  // One discarded run of every graph first: an engine's first run pays one-time costs (threads
  // starting, pages faulting in), which would make the initial greedy measurement look slower.
  for (std::size_t k = 0; k < n; ++k) engine_of(k).run(shared[k], clients[k].place(shared[k]), run_options{}.with_trace(false));
  // Several graphs: the curve is in units of each graph's cp placement, measured.
  if (n > 1)
    for (std::size_t k = 0; k < n; ++k) res.graphs[k].cp = run(k, cp_place(graphs[k], cluster_of(k), cm, 0));
  auto unit = [&](std::size_t k) { return n > 1 ? res.graphs[k].cp : 1.0; };

  int episode = curve.empty() ? 0 : curve.back().episode;
  double best = std::numeric_limits<double>::infinity(), loss = 0;
  std::vector<double> best_greedy(n, best);
  std::vector<evaluated> evals;  // the first: the parameters phase II left
  auto record = [&](std::size_t k, const placement& p, double ms) {
    for (auto& e : evals)
      if (same_placement(e.p[k], p)) {
        e.sum[k] += ms;
        ++e.n[k];
      }
  };
  auto measure = [&](std::size_t k, const placement& p) {  // observed: the learner's model selection sees it
    const double ms = run(k, p);
    clients[k].observe(shared[k], p, ms);
    record(k, p, ms);
    return ms;
  };
  auto measure_greedy = [&] {  // an evaluation of the current parameters: every graph's greedy placement
    std::vector<placement> ps;
    for (std::size_t k = 0; k < n; ++k) ps.push_back(clients[k].place(shared[k]));
    const bool known = std::any_of(evals.begin(), evals.end(), [&](const evaluated& e) {
      for (std::size_t k = 0; k < n; ++k)
        if (!same_placement(e.p[k], ps[k])) return false;
      return true;
    });
    if (!known) evals.push_back({ps, std::vector<double>(n, 0.0), std::vector<int>(n, 0)});
    ++res.evaluations;
    std::vector<double> ms(n);
    for (std::size_t k = 0; k < n; ++k) {
      ms[k] = measure(k, ps[k]);
      best_greedy[k] = std::min(best_greedy[k], ms[k] / unit(k));
      curve.push_back({episode, "real-greedy", ms[k] / unit(k), best_greedy[k], loss, -1, static_cast<int>(k)});  // after episode `episode`
    }
    return ms;
  };
  const auto initial = measure_greedy();
  for (std::size_t k = 0; k < n; ++k) res.graphs[k].initial_greedy = initial[k];
  for (int e = 1; e <= o.episodes; ++e) {
    const auto k = static_cast<std::size_t>((e - 1) / t.real_batch) % n;  // a batch of one graph, in turns
    placement p = clients[k].place(shared[k], true, t.seed * 1000003ULL + static_cast<std::uint64_t>(e));
    const double ms = run(k, p);
    learner_update u = clients[k].observe(shared[k], p, ms);
    if (u.updated) {
      loss = u.loss;
      ++res.updates;
    }
    best = std::min(best, ms / unit(k));
    learner::train_row row{++episode, "real", ms / unit(k), best, loss, -1, static_cast<int>(k)};
    curve.push_back(row);
    if (t.on_episode) t.on_episode(row);
    if (u.updated && t.real_eval_every > 0 && res.updates % t.real_eval_every == 0) measure_greedy();
  }
  if (t.real_eval_every > 0 && res.updates % t.real_eval_every != 0) measure_greedy();  // the last parameters
  // Confirmation: the best of many noisy evaluations is partly luck, so the initial evaluation and
  // the two best-measured others are measured `real_confirm` more times, interleaved; the learner's
  // means (and so its selection) include these measurements.
  if (t.real_eval_every > 0 && t.real_confirm > 0 && evals.size() > 1) {
    std::vector<const evaluated*> rest;
    for (std::size_t i = 1; i < evals.size(); ++i) rest.push_back(&evals[i]);
    std::sort(rest.begin(), rest.end(),
              [&](const evaluated* a, const evaluated* b) { return a->ratio(evals.front()) < b->ratio(evals.front()); });
    std::vector<std::vector<placement>> cand{evals.front().p};
    for (std::size_t i = 0; i < rest.size() && i < 2; ++i) cand.push_back(rest[i]->p);
    for (int r = 0; r < t.real_confirm; ++r)
      for (const auto& ps : cand)
        for (std::size_t k = 0; k < n; ++k) measure(k, ps[k]);
    res.confirmed = static_cast<int>(cand.size());
  }
  // The selected parameters: the learner writes them; read them back for the final check.
  base.save(out);
  base.load(out);
  // Final check: phase II's greedy placement and the written parameters' greedy placement, each
  // measured `o.check` more times, interleaved, and not shown to the learner. The measurements
  // that chose the parameters are biased low (the best of many noisy evaluations is partly luck),
  // and one final run is one noisy sample; fresh interleaved means are what the report compares.
  res.kept_initial = true;
  res.check = std::max(1, o.check);
  for (std::size_t k = 0; k < n; ++k) {
    auto& r = res.graphs[k];
    r.greedy = clients[k].place(shared[k]);
    const placement& before = evals.front().p[k];
    const bool same = same_placement(before, r.greedy);
    res.kept_initial = res.kept_initial && same;
    std::vector<double> a, b;
    for (int i = 0; i < res.check; ++i) {
      a.push_back(run(k, before));
      b.push_back(same ? a.back() : run(k, r.greedy));
    }
    const auto sa = summarize(a), sb = summarize(b);
    r.initial_greedy = sa.mean, r.initial_se = sa.se();
    r.final_greedy = sb.mean, r.final_se = sb.se();
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace doppler::cli

#endif  // DOPPLER_HAVE_ACTORS
