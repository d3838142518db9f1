// DOPPLER's policy as a learner_interface (doppler_learner.hpp).
#include <doppler/learner/doppler_learner.hpp>

#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>

#include <deque>
#include <optional>

namespace doppler::learner {

namespace {

class doppler_learner final : public learner_interface {
 public:
  doppler_learner(const learner_config& cfg, const doppler_learner_options& opt)
      : cfg_(cfg),
        opt_(opt),
        pol_(cfg.policy.empty() ? policy(policy_options(opt.policy).with_seed(cfg.seed)) : policy::load(cfg.policy)) {}
  doppler_learner(policy pol, const learner_config& cfg, const doppler_learner_options& opt)
      : cfg_(cfg), opt_(opt), pol_(std::move(pol)) {}

  std::string_view name() const noexcept override { return "doppler"; }

  placement place(const graph& g, const cluster& c, bool explore, std::uint64_t seed) override {
    auto& pb = problem_for(g, c);
    rollout_options o = explore ? rollout_options::sample(seed, opt_.temperature) : rollout_options{};
    episode ep = pol_.rollout(pb, o);
    ep.result.method = "doppler";
    placement p = ep.result;
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
    ++stats_.observed;
    const double baseline = cost_n_ == 0 ? makespan : cost_sum_ / static_cast<double>(cost_n_);
    cost_sum_ += makespan;
    ++cost_n_;
    if (measured* m = find(p)) {
      m->sum += makespan;
      ++m->n;
    } else {
      measured_.push_back({p, makespan, 1});
      if (measured_.size() > 256) measured_.pop_front();
    }
    for (auto it = handed_.begin(); it != handed_.end(); ++it) {
      if (it->result.device != p.device || it->result.order != p.order) continue;
      const double adv = baseline > 0 ? (baseline - makespan) / baseline : 0.0;
      pol_.set_learning_rate(opt_.online_lr);
      pol_.reinforce_update(pb, std::span<const episode>(&*it, 1), std::span<const double>(&adv, 1), opt_.gamma,
                            opt_.entropy);
      ++stats_.updates;
      handed_.erase(it);
      break;
    }
  }

  learner_train_report train(const graph& g, const cluster& c, int episodes) override {
    auto& pb = problem_for(g, c);
    train_options t;
    t.il_episodes = 0;
    t.rl_episodes = episodes;
    t.batch = opt_.batch;
    t.sim = cfg_.sim;
    t.seed = cfg_.seed + static_cast<std::uint64_t>(++trainings_);
    auto r = learner::train(pol_, pb, t);
    handed_.clear();  // the parameters moved: old episodes are off-policy now
    return {episodes, r.best_makespan, r.greedy_makespan};
  }

  void save(const std::string& path) const override { pol_.save(path); }
  void load(const std::string& path) override {
    pol_ = policy::load(path);
    handed_.clear();
    measured_.clear();
    problem_.reset();
  }

  doppler_learner_stats stats() const { return stats_; }

 private:
  struct measured {
    placement p;
    double sum = 0;
    int n = 0;
    double mean() const { return sum / n; }
  };
  measured* find(const placement& p) {
    for (auto& m : measured_)
      if (m.p.device == p.device && m.p.order == p.order) return &m;
    return nullptr;
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
      handed_.clear();
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
