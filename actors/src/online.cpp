// Online learning during deployment (online.hpp).

#include <doppler/actors/online.hpp>
#include <doppler/runtime/error.hpp>

#include <algorithm>

namespace doppler {

online_learning::online_learning(engine& e, learner_client l, std::shared_ptr<const graph> g, online_options opt)
    : e_(&e), l_(std::move(l)), g_(std::move(g)), opt_(std::move(opt)) {
  if (!g_) throw error(errc::bad_argument, "online learning: no graph");
  may_explore(1, 0, opt_.explore);  // validates the fraction
  if (opt_.run.repeat < 1) throw error(errc::bad_argument, "online learning: repeat must be >= 1");
}

online_step online_learning::step() {
  online_step s;
  s.run = runs_ + 1;
  s.explored = may_explore(s.run, explored_, opt_.explore);
  // SplitMix-style spread of the user's seed over the runs.
  const std::uint64_t seed = (opt_.seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(s.run)) ^ 0xd1b54a32d192ed03ULL;
  s.used = l_.place(g_, s.explored, seed);
  run_result r = e_->run(g_, s.used, opt_.run);
  s.makespan = r.mean_makespan();
  s.failovers = std::move(r.failovers);
  const bool own = s.failovers.empty();  // the makespan is the placement's
  if (opt_.learn && own) s.update = l_.observe(g_, s.used, s.makespan);
  ++runs_;
  if (s.explored) ++explored_;
  else if (own) greedy_ = s.makespan;
  if (own && s.makespan < best_) {
    best_ = s.makespan;
    best_p_ = s.used;
  }
  s.best = best_;
  s.greedy = greedy_;
  return s;
}

}  // namespace doppler
