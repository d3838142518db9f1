// The comm-planner actor (comm_planner.hpp).

#include <doppler/actors/comm_planner.hpp>
#include <doppler/comm/demand.hpp>
#include <doppler/comm/schedule.hpp>

#include <atomic>
#include <set>
#include <tuple>

namespace doppler::actors {
namespace {

struct comm_planner_state {
  std::shared_ptr<comm::multicast_planner> mp;
  std::string refine;
  std::set<std::tuple<device_index, std::vector<device_index>, double>> refining;  // started once each
  std::shared_ptr<std::atomic<std::uint64_t>> refined = std::make_shared<std::atomic<std::uint64_t>>(0);

  static inline const char* name = "doppler.comm_planner";
};

using planner_pointer = comm_planner_actor::stateful_pointer<comm_planner_state>;

/// Plans `r` with the refine method on a detached thread; keeps the result when it beats the cache
/// (or direct copies, when the cache says "direct").
void refine_in_background(planner_pointer self, const transfer_request& r) {
  auto& st = self->state;
  if (!st.refining.emplace(r.src, r.dsts, r.bytes).second) return;
  // The work travels as a spawn argument, not a capture: CAF 0.17 applies a spawned function to its
  // arguments through a tuple it leaves null when there are none (UBSan: null reference binding).
  auto job = [mp = st.mp, method = st.refine, refined = st.refined](const transfer_request& q) {
    try {
      auto better = mp->solve(q.src, q.dsts, q.bytes, method);
      auto [found, now] = mp->cached(q.src, q.dsts, q.bytes);
      // as fast as the cached plan is enough (the slower method's plan is at least as good);
      // against direct copies it must be faster
      bool keep = now ? better->planned_seconds <= now->planned_seconds
                      : better->planned_seconds < comm::direct_seconds(mp->topology(), q.src, q.dsts, q.bytes);
      if (keep) {
        mp->store(q.src, q.dsts, q.bytes, std::move(better));
        ++*refined;
      }
    } catch (const std::exception&) {
      // the fast plan stays; a refinement is an optimization, not a requirement
    }
  };
  self->spawn<caf::detached>(std::move(job), r);
}

comm_planner_actor::behavior_type comm_planner_impl(planner_pointer self, std::shared_ptr<const cluster> c,
                                                    comm_planner_config cfg) {
  self->state.mp = std::make_shared<comm::multicast_planner>(c, cfg.multicast);
  self->state.refine = cfg.refine;
  return {
      [=](plan_atom, const std::vector<transfer_request>& reqs) {
        auto& st = self->state;
        transfer_plans out;
        out.plans.reserve(reqs.size());
        for (const auto& r : reqs) {
          auto misses = st.mp->misses();
          out.plans.push_back(st.mp->plan(r.src, r.dsts, r.bytes));
          if (st.mp->misses() != misses && !st.refine.empty() && st.refine != st.mp->options().method)
            refine_in_background(self, r);
        }
        return out;
      },
      [=](plan_atom, const std::string& demand_text) -> caf::result<std::string> {
        try {
          const cluster& topo = self->state.mp->topology();
          comm::demand d = comm::parse_demand(demand_text, topo, "<plan request>");
          const auto& mo = self->state.mp->options();
          auto r = comm::plan(topo, d, comm::plan_options{}.with_method(mo.method).with_time_limit(mo.time_limit));
          return comm::to_json_text(r.sched, topo);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::invalid_argument, std::string("comm planner: ") + e.what());
        }
      },
      [=](stats_atom) {
        auto& st = self->state;
        return std::vector<std::uint64_t>{st.mp->hits(), st.mp->misses(), st.mp->failures(), st.refined->load()};
      },
  };
}

}  // namespace

comm_planner_actor spawn_comm_planner(caf::actor_system& sys, std::shared_ptr<const cluster> c,
                                      comm_planner_config cfg) {
  return sys.spawn(comm_planner_impl, std::move(c), std::move(cfg));
}

}  // namespace doppler::actors
