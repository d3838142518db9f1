// DOPPLER's policy as a learner_interface (doppler_learner.hpp).
#include <doppler/learner/doppler_learner.hpp>

#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/error.hpp>

#include <doppler/runtime/fnv1a.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>

namespace doppler::learner {

namespace {

/// What identifies a problem: the content of the graph (every op's kind, shape, inputs, FLOPs and
/// output bytes) and of the cluster (every device's kind, FLOP/s and memory, every link), not their
/// names — a graph and its bf16 copy (same name, sizes and FLOPs, half the bytes) are two problems;
/// the same graph under another name is one.
std::uint64_t content_of(const graph& g, const cluster& c) {
  fnv1a h(fnv1a::learner_basis);
  h.value(g.size());
  for (const op& o : g.ops()) {
    h.value(o.kind);
    h.values(o.shape);
    h.values(o.inputs);
    h.value(o.flops);
    h.value(o.bytes);
  }
  h.value(c.device_count());
  for (const device& d : c.devices()) {
    h.value(d.kind);
    h.value(d.flops);
    h.value(d.memory);
  }
  h.value(c.links().size());
  for (const link& l : c.links()) {
    h.value(l.src);
    h.value(l.dst);
    h.value(l.bandwidth);
    h.value(l.latency);
  }
  return h.digest();
}

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
    auto& st = state_for(g, c);
    rollout_options o = explore ? rollout_options::sample(seed, opt_.temperature) : rollout_options{};
    episode ep = pol_.rollout(*st.pb, o);
    ep.result.method = "doppler";
    placement p = ep.result;
    if (!explore && opt_.select_measured) {  // an observation of it evaluates these parameters
      st.greedy = p;
      st.greedy_update = stats_.updates;
    }
    if (!explore && opt_.exploit_measured) {
      const measured* mine = st.find(p);
      const measured* best = nullptr;
      for (const auto& m : st.seen)
        if (!best || m.mean() < best->mean()) best = &m;
      if (mine && best && best->mean() < mine->mean()) {
        ++stats_.best_measured;
        p = best->p;
        p.method = "doppler:best-measured";
      }
    }
    if (explore) {  // remembered for the REINFORCE step its observation takes
      st.handed.push_back(std::move(ep));
      if (st.handed.size() > 64) st.handed.pop_front();
    }
    return p;
  }

  void observe(const graph& g, const cluster& c, const placement& p, double makespan) override {
    auto& st = state_for(g, c);
    last_ = {};
    ++stats_.observed;
    st.cost_sum += makespan;
    ++st.cost_n;
    if (measured* m = st.find(p)) {
      m->sum += makespan;
      ++m->n;
    } else {
      st.seen.push_back({p, makespan, 1});
      if (st.seen.size() > 256) st.seen.pop_front();
    }
    if (opt_.select_measured) select_observed(st, p, makespan);
    for (auto it = st.handed.begin(); it != st.handed.end(); ++it) {
      if (!same_placement(it->result, p)) continue;
      st.pending.push_back(std::move(*it));
      st.pending_costs.push_back(makespan);
      st.handed.erase(it);
      if (static_cast<int>(st.pending.size()) >= opt_.online_batch) update(st);
      break;
    }
  }

  learner_update last_update() const override { return last_; }

  learner_train_report train(const graph& g, const cluster& c, int episodes) override {
    auto& st = state_for(g, c);
    train_options t;
    t.il_episodes = 0;
    t.rl_episodes = episodes;
    t.batch = opt_.batch;
    t.sim = cfg_.sim;
    t.seed = cfg_.seed + static_cast<std::uint64_t>(++trainings_);
    auto r = learner::train(pol_, *st.pb, t);
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
    evals_.clear();
    states_.clear();  // the problems' episodes, measurements and hints belonged to the old policy
  }

  doppler_learner_stats stats() const {
    auto st = stats_;
    for (const auto& s : states_) st.pending += static_cast<int>(s->pending.size());
    st.problems = static_cast<int>(states_.size());
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
  /// What the learner keeps per problem (graph, cluster) it is asked about: the problem itself,
  /// the phase-III episodes of its placements, their measurements, its cost baseline.
  struct problem_state {
    int id = 0;                  // evaluations refer to the problem by it
    std::uint64_t content = 0;   // content_of(g, c): the problem's identity
    std::uint64_t used = 0;      // when last asked about (least recently used goes first)
    std::unique_ptr<graph> g;    // copies: the problem references them
    std::unique_ptr<cluster> c;
    std::optional<problem> pb;
    std::deque<episode> handed;   // exploring episodes awaiting their observation
    std::deque<measured> seen;    // observed placements of this problem, mean makespans (256 most recent)
    std::vector<episode> pending;   // observed exploring episodes awaiting their batch's update ...
    std::vector<double> pending_costs;  // ... and their measured costs
    placement greedy;               // the latest greedy placement handed out ...
    int greedy_update = -1;         // ... after this many updates (-1: none since a reset)
    double cost_sum = 0;            // the running-mean baseline of observed costs
    std::size_t cost_n = 0;

    measured* find(const placement& p) {
      for (auto& m : seen)
        if (same_placement(m.p, p)) return &m;
      return nullptr;
    }
  };
  /// The greedy placement of evaluated parameters on one problem and its measurements: the one
  /// that evaluated them (`first`) and every later one. Only the later ones are statistics: the
  /// lowest of many noisy evaluations is partly luck, so the measurement that nominated a
  /// placement does not also judge it.
  struct scored {
    int problem = 0;  // problem_state::id
    placement p;
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
  /// Parameters whose greedy placements were measured (select_measured), after `update` updates:
  /// one `scored` per problem measured so far. Kept apart from the problems' `seen` lists,
  /// which forget old placements.
  struct evaluation {
    std::string params;
    int update = 0;
    std::vector<scored> on;
    const scored* at(int problem) const {
      for (const auto& s : on)
        if (s.problem == problem) return &s;
      return nullptr;
    }
  };
  /// How e compares with the incumbent `inc` on the problems inc was measured on: the mean over
  /// them of e's mean / inc's mean (1 for inc itself), and the squared standard error of
  /// 1 − that ratio (each problem's difference of means in units of inc's mean). Empty when e
  /// lacks one of inc's problems. With one problem this is the plain difference of means, scaled.
  /// With several problems also the largest excess of e's mean over inc's on one of them, in
  /// standard errors of that difference (`worst_z`, 0 where a standard error is still infinite),
  /// and whether e is slower on any (`slower`).
  struct ratio {
    double mean = 0, se2 = 0;
    double worst_z = -std::numeric_limits<double>::infinity();
    bool slower = false;
  };
  static std::optional<ratio> compare(const evaluation& e, const evaluation& inc) {
    if (inc.on.empty()) return std::nullopt;
    ratio r;
    for (const auto& i : inc.on) {
      const scored* x = e.at(i.problem);
      if (!x) return std::nullopt;
      r.mean += x->mean() / i.mean();
      r.se2 += (x->se2() + i.se2()) / (i.mean() * i.mean());
      if (inc.on.size() > 1) {
        const double diff = x->mean() - i.mean(), se = std::sqrt(x->se2() + i.se2());
        r.slower = r.slower || diff > 0;
        if (diff > 0) r.worst_z = std::max(r.worst_z, se > 0 ? diff / se : std::numeric_limits<double>::infinity());
      }
    }
    const double k = static_cast<double>(inc.on.size());
    r.mean /= k;
    r.se2 /= k * k;
    return r;
  }
  /// The selected parameters (nullptr: none evaluated). The incumbent is the first evaluated (the
  /// parameters the learner started from); another replaces it when its mean ratio to the
  /// incumbent (compare) is below 1 by more than `select_margin` of its standard errors (so both
  /// re-measured at least twice; margin 0: the lowest mean ratio) and, with several problems, it
  /// is not slower on any of them by more than `select_margin` standard errors of that problem's
  /// difference (margin 0: not slower on any) — a gain on one graph does not pay for a loss on
  /// another.
  const evaluation* selected() const {
    if (evals_.empty()) return nullptr;
    const evaluation* inc = &evals_.front();
    const evaluation* best = inc;
    double best_ratio = 1;
    for (const auto& e : evals_) {
      auto r = compare(e, *inc);
      if (!r || !(r->mean < best_ratio)) continue;
      if (opt_.select_margin <= 0 ? r->slower : r->worst_z > opt_.select_margin) continue;  // no graph pays for another
      if (opt_.select_margin <= 0 || 1 - r->mean > opt_.select_margin * std::sqrt(r->se2)) {
        best = &e;
        best_ratio = r->mean;
      }
    }
    return best;
  }

  /// select_measured: a measurement of an evaluated placement adds to its statistics wherever it
  /// appears; a measurement of the greedy placement of the current parameters (handed out with no
  /// update since) evaluates them on that problem. Parameters whose greedy placements equal another
  /// evaluation's on every problem are the same choice (one entry); the incumbent and the 15
  /// best-measured others are kept.
  void select_observed(const problem_state& st, const placement& p, double makespan) {
    const bool evaluates = st.greedy_update == stats_.updates && same_placement(p, st.greedy);
    stats_.evaluations += evaluates;
    std::optional<scored> known;
    for (auto& e : evals_)
      for (auto& s : e.on)
        if (s.problem == st.id && same_placement(s.p, p)) {
          s.add(makespan);
          known = s;
        }
    if (!evaluates) return;
    auto cur = std::find_if(evals_.begin(), evals_.end(), [&](const evaluation& e) { return e.update == stats_.updates; });
    if (cur != evals_.end() && cur->at(st.id)) return;  // evaluated on this problem already
    if (cur == evals_.end()) cur = evals_.insert(evals_.end(), evaluation{pol_.snapshot(), stats_.updates, {}});
    // A placement measured before shares its statistics (this measurement already added to them).
    cur->on.push_back(known ? *known : scored{st.id, p, makespan});
    const auto same_choice = [&](const evaluation& e) {
      return &e != &*cur && e.on.size() == cur->on.size() &&
             std::all_of(cur->on.begin(), cur->on.end(), [&](const scored& s) {
               const scored* x = e.at(s.problem);
               return x && same_placement(x->p, s.p);
             });
    };
    if (std::any_of(evals_.begin(), evals_.end(), same_choice)) {
      evals_.erase(cur);
      return;
    }
    if (evals_.size() > 16) {  // drop the worst-measured other than the incumbent
      auto worst = evals_.end();
      double worst_ratio = -1;
      for (auto it = evals_.begin() + 1; it != evals_.end(); ++it) {
        auto r = compare(*it, evals_.front());
        // Incomplete: the current parameters, still being measured, stay; older ones never
        // complete (entries are only added for the current parameters) and go first.
        if (!r && it->update == stats_.updates) continue;
        const double x = r ? r->mean : std::numeric_limits<double>::infinity();
        if (x > worst_ratio) worst_ratio = x, worst = it;
      }
      if (worst != evals_.end()) evals_.erase(worst);
    }
  }

  /// Drops what belongs to the current parameters: episodes handed out or pending an update, the
  /// evaluated parameters, the latest greedy placements.
  void forget_episodes() {
    for (auto& s : states_) {
      s->handed.clear();
      s->pending.clear();
      s->pending_costs.clear();
      s->greedy_update = -1;
    }
    evals_.clear();
  }

  /// One REINFORCE step on a problem's pending batch: the trainer's advantages against the mean
  /// of that problem's costs observed before it.
  void update(problem_state& st) {
    double pending_sum = 0;
    for (double x : st.pending_costs) pending_sum += x;
    const auto n = st.pending_costs.size();
    const double baseline = st.cost_n > n ? (st.cost_sum - pending_sum) / static_cast<double>(st.cost_n - n)
                                          : pending_sum / static_cast<double>(n);
    auto adv = reinforce_advantages(st.pending_costs, baseline, opt_.normalize_advantages, opt_.advantage_floor);
    pol_.set_learning_rate(opt_.online_lr);
    last_.loss = pol_.reinforce_update(*st.pb, st.pending, adv, opt_.gamma, opt_.entropy);
    last_.updated = true;
    last_.episodes = static_cast<std::int32_t>(n);
    ++stats_.updates;
    st.pending.clear();
    st.pending_costs.clear();
  }

  /// The state of (g, c), made on first use. At most `doppler_learner_max_problems` are kept: a new one beyond
  /// that replaces the least recently used, whose measurements leave the evaluations with it.
  problem_state& state_for(const graph& g, const cluster& c) {
    ++clock_;
    const std::uint64_t content = content_of(g, c);
    for (auto& s : states_)
      if (s->content == content) {
        s->used = clock_;
        return *s;
      }
    if (states_.size() >= doppler_learner_max_problems) {
      auto lru = std::min_element(states_.begin(), states_.end(), [](const auto& a, const auto& b) { return a->used < b->used; });
      const int gone = (*lru)->id;
      states_.erase(lru);
      for (auto& e : evals_)
        e.on.erase(std::remove_if(e.on.begin(), e.on.end(), [&](const scored& s) { return s.problem == gone; }), e.on.end());
    }
    auto st = std::make_unique<problem_state>();
    st->id = next_id_++;
    st->content = content;
    st->used = clock_;
    st->g = std::make_unique<graph>(g);
    st->c = std::make_unique<cluster>(c);
    st->pb.emplace(*st->g, *st->c, cfg_.costs);
    return *states_.emplace_back(std::move(st));
  }

  learner_config cfg_;
  doppler_learner_options opt_;
  policy pol_;
  std::vector<std::unique_ptr<problem_state>> states_;
  std::vector<evaluation> evals_;  // select_measured: evaluated parameters (the first: the incumbent)
  learner_update last_;
  int trainings_ = 0;
  int next_id_ = 0;
  std::uint64_t clock_ = 0;
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
