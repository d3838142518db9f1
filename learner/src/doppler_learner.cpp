// DOPPLER's policy as a learner_interface (doppler_learner.hpp).
#include <doppler/learner/doppler_learner.hpp>

#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>

namespace doppler::learner {

namespace {

class doppler_learner final : public learner_interface {
 public:
  doppler_learner(const learner_config& cfg, const doppler_learner_options& opt)
      : cfg_(cfg),
        opt_(opt),
        pol_(cfg.policy.empty() ? policy(policy_options(opt.policy).with_seed(cfg.seed)) : policy::load(cfg.policy)) {
    check(opt);
  }
  doppler_learner(policy pol, const learner_config& cfg, const doppler_learner_options& opt)
      : cfg_(cfg), opt_(opt), pol_(std::move(pol)) {
    check(opt);
  }
  static void check(const doppler_learner_options& opt) {
    if (opt.online_batch < 1) throw error(errc::bad_argument, "doppler learner: online_batch must be >= 1");
  }

  std::string_view name() const noexcept override { return "doppler"; }

  placement place(const graph& g, const cluster& c, bool explore, std::uint64_t seed) override {
    auto& pb = problem_for(g, c);
    rollout_options o = explore ? rollout_options::sample(seed, opt_.temperature) : rollout_options{};
    episode ep = pol_.rollout(pb, o);
    ep.result.method = "doppler";
    placement p = ep.result;
    if (!explore && opt_.select_measured) {  // an observation of it evaluates these parameters
      greedy_ = p;
      greedy_update_ = stats_.updates;
    }
    if (!explore && opt_.exploit_measured) {
      const measured* mine = find(p);
      const measured* best = nullptr;
      for (const auto& m : measured_)
        if (!best || m.mean() < best->mean()) best = &m;
      if (mine && best && best->mean() < mine->mean()) {
        ++stats_.best_measured;
        p = best->p;
        p.method = "doppler:best-measured";
      }
    }
    if (explore) {  // remembered for the REINFORCE step its observation takes
      handed_.push_back(std::move(ep));
      if (handed_.size() > 64) handed_.pop_front();
    }
    return p;
  }

  void observe(const graph& g, const cluster& c, const placement& p, double makespan) override {
    auto& pb = problem_for(g, c);
    last_ = {};
    ++stats_.observed;
    cost_sum_ += makespan;
    ++cost_n_;
    if (measured* m = find(p)) {
      m->sum += makespan;
      ++m->n;
    } else {
      measured_.push_back({p, makespan, 1});
      if (measured_.size() > 256) measured_.pop_front();
    }
    if (opt_.select_measured) select_observed(p, makespan);
    for (auto it = handed_.begin(); it != handed_.end(); ++it) {
      if (!same_placement(it->result, p)) continue;
      pending_.push_back(std::move(*it));
      pending_costs_.push_back(makespan);
      handed_.erase(it);
      if (static_cast<int>(pending_.size()) >= opt_.online_batch) update(pb);
      break;
    }
  }

  learner_update last_update() const override { return last_; }

  learner_train_report train(const graph& g, const cluster& c, int episodes) override {
    auto& pb = problem_for(g, c);
    train_options t;
    t.il_episodes = 0;
    t.rl_episodes = episodes;
    t.batch = opt_.batch;
    t.sim = cfg_.sim;
    t.seed = cfg_.seed + static_cast<std::uint64_t>(++trainings_);
    auto r = learner::train(pol_, pb, t);
    forget_episodes();  // the parameters moved: old episodes are off-policy, old evaluations stale
    return {episodes, r.best_makespan, r.greedy_makespan};
  }

  void save(const std::string& path) const override {
    const evaluation* sel = selected();
    if (!sel || sel->update == stats_.updates) return pol_.save(path);
    policy older(pol_.options());  // the selected parameters, with a fresh optimizer state
    older.restore(sel->params);
    older.save(path);
  }
  void load(const std::string& path) override {
    pol_ = policy::load(path);
    forget_episodes();
    measured_.clear();
    problem_.reset();
  }

  doppler_learner_stats stats() const {
    auto st = stats_;
    st.pending = static_cast<int>(pending_.size());
    if (const evaluation* sel = selected()) st.selected_update = sel->update;
    return st;
  }

 private:
  struct measured {
    placement p;
    double sum = 0;
    int n = 0;
    double mean() const { return sum / n; }
  };
  /// Parameters whose greedy placement was measured (select_measured), after `update` updates: the
  /// measurement that evaluated them (`first`) and every later one of that placement. Only the later
  /// ones are statistics: the lowest of many noisy evaluations is partly luck, so the measurement
  /// that nominated a placement does not also judge it (measured_ forgets old placements: these are
  /// kept apart).
  struct evaluation {
    placement p;
    std::string params;
    int update = 0;
    double first = 0;
    double sum = 0, sumsq = 0;
    int n = 0;
    /// Mean of the later measurements; the first one stands in until there is one.
    double mean() const { return n ? sum / n : first; }
    /// Squared standard error of that mean (infinite below two later measurements).
    double se2() const {
      if (n < 2) return std::numeric_limits<double>::infinity();
      const double var = std::max(0.0, (sumsq - sum * sum / n) / (n - 1));
      return var / n;
    }
    void add(double x) {
      sum += x;
      sumsq += x * x;
      ++n;
    }
  };
  measured* find(const placement& p) {
    for (auto& m : measured_)
      if (same_placement(m.p, p)) return &m;
    return nullptr;
  }
  /// The selected parameters (nullptr: none evaluated). The incumbent is the first evaluated (the
  /// parameters the learner started from); another replaces it when its mean is lower by more than
  /// `select_margin` standard errors of the difference (so both re-measured at least twice; margin
  /// 0: the lowest mean).
  const evaluation* selected() const {
    if (evals_.empty()) return nullptr;
    const evaluation* inc = &evals_.front();
    const evaluation* best = inc;
    for (const auto& e : evals_) {
      if (!(e.mean() < best->mean())) continue;
      const double diff = inc->mean() - e.mean();
      if (opt_.select_margin <= 0 || diff > opt_.select_margin * std::sqrt(e.se2() + inc->se2())) best = &e;
    }
    return best;
  }

  /// select_measured: a measurement of an evaluated placement adds to its statistics; a measurement
  /// of the greedy placement of the current parameters (handed out with no update since) evaluates
  /// them: one entry per distinct placement (parameters with the same greedy placement are the same
  /// choice); the incumbent and the 15 best-measured others are kept.
  void select_observed(const placement& p, double makespan) {
    const bool evaluates = greedy_update_ == stats_.updates && same_placement(p, greedy_);
    stats_.evaluations += evaluates;
    for (auto& e : evals_)
      if (same_placement(e.p, p)) return e.add(makespan);
    if (!evaluates) return;
    evals_.push_back({p, pol_.snapshot(), stats_.updates, makespan});
    if (evals_.size() > 16)
      evals_.erase(std::max_element(evals_.begin() + 1, evals_.end(),
                                    [](const evaluation& x, const evaluation& y) { return x.mean() < y.mean(); }));
  }

  /// Drops what belongs to the current parameters: episodes handed out or pending an update, the
  /// evaluated parameters, the latest greedy placement.
  void forget_episodes() {
    handed_.clear();
    pending_.clear();
    pending_costs_.clear();
    evals_.clear();
    greedy_update_ = -1;
  }

  /// One REINFORCE step on the pending batch: the trainer's advantages against the mean of the
  /// costs observed before it.
  void update(const problem& pb) {
    double pending_sum = 0;
    for (double x : pending_costs_) pending_sum += x;
    const auto n = pending_costs_.size();
    const double baseline = cost_n_ > n ? (cost_sum_ - pending_sum) / static_cast<double>(cost_n_ - n)
                                        : pending_sum / static_cast<double>(n);
    auto adv = reinforce_advantages(pending_costs_, baseline, opt_.normalize_advantages, opt_.advantage_floor);
    pol_.set_learning_rate(opt_.online_lr);
    last_.loss = pol_.reinforce_update(pb, pending_, adv, opt_.gamma, opt_.entropy);
    last_.updated = true;
    last_.episodes = static_cast<std::int32_t>(n);
    ++stats_.updates;
    pending_.clear();
    pending_costs_.clear();
  }

  /// The problem of (g, c), rebuilt when the graph or the cluster changes (copies are kept: the
  /// problem references them). Identity: name, sizes and total FLOPs of both.
  problem& problem_for(const graph& g, const cluster& c) {
    const bool same = problem_ && g_->name() == g.name() && g_->size() == g.size() &&
                      g_->edge_count() == g.edge_count() && g_->total_flops() == g.total_flops() &&
                      c_->name() == c.name() && c_->device_count() == c.device_count();
    if (!same) {
      problem_.reset();
      g_ = std::make_unique<graph>(g);
      c_ = std::make_unique<cluster>(c);
      problem_.emplace(*g_, *c_, cfg_.costs);
      forget_episodes();
      cost_sum_ = 0;
      cost_n_ = 0;
      measured_.clear();
    }
    return *problem_;
  }

  learner_config cfg_;
  doppler_learner_options opt_;
  policy pol_;
  std::unique_ptr<graph> g_;
  std::unique_ptr<cluster> c_;
  std::optional<problem> problem_;
  std::deque<episode> handed_;   // exploring episodes awaiting their observation
  std::deque<measured> measured_;  // observed placements of the current problem, mean makespans
  std::vector<episode> pending_;     // observed exploring episodes awaiting their batch's update ...
  std::vector<double> pending_costs_;  // ... and their measured costs
  std::vector<evaluation> evals_;    // select_measured: evaluated parameters
  placement greedy_;                 // the latest greedy placement handed out ...
  int greedy_update_ = -1;           // ... after this many updates (-1: none since a reset)
  learner_update last_;
  double cost_sum_ = 0;
  std::size_t cost_n_ = 0;
  int trainings_ = 0;
  doppler_learner_stats stats_;
};

}  // namespace

std::unique_ptr<learner_interface> make_doppler_learner(const learner_config& cfg, const doppler_learner_options& opt) {
  return std::make_unique<doppler_learner>(cfg, opt);
}

std::unique_ptr<learner_interface> make_doppler_learner(policy pol, const learner_config& cfg,
                                                        const doppler_learner_options& opt) {
  return std::make_unique<doppler_learner>(std::move(pol), cfg, opt);
}

void register_doppler_learner() {
  register_learner("doppler", "DOPPLER's SEL+PLC policy (LibTorch); --policy starts from a checkpoint",
                   [](const learner_config& cfg) { return make_doppler_learner(cfg); });
}

doppler_learner_stats stats_of(const learner_interface& l) {
  if (auto* d = dynamic_cast<const doppler_learner*>(&l)) return d->stats();
  throw error(errc::bad_argument, "stats_of: '" + std::string(l.name()) + "' is not the doppler learner");
}

}  // namespace doppler::learner
