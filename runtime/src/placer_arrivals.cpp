// Arrival estimates for the list schedulers' EST (placer_arrivals.hpp).

#include "placer_arrivals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace doppler::detail {

arrival_estimator::arrival_estimator(const graph& g, const cluster& c, transfer_planner* planner)
    : g_(g), c_(c), tt_(c), planner_(planner) {
  if (planner_) {
    sent_to_.resize(g.size());
    memo_.assign(g.size() * c.device_count(), std::numeric_limits<double>::quiet_NaN());
  }
}

double arrival_estimator::arrival(op_index u, device_index du, double end_u, device_index d) {
  if (du == d) return end_u;
  const double bytes = g_[u].bytes;
  const double route = tt_.time(du, d, bytes);
  if (!planner_) return end_u + route;
  double& memo = memo_[static_cast<std::size_t>(u) * c_.device_count() + d];
  if (std::isnan(memo)) memo = planned_offset(u, du, d, bytes, route);
  return end_u + memo;
}

double arrival_estimator::planned_offset(op_index u, device_index du, device_index d, double bytes, double route) {
  const auto& sent = sent_to_[u];
  dsts_.assign(sent.begin(), sent.end());
  auto at = std::lower_bound(dsts_.begin(), dsts_.end(), d);
  if (at == dsts_.end() || *at != d) dsts_.insert(at, d);
  if (!wants_plan(c_, du, dsts_)) return route;
  auto plan = planner_->plan(du, dsts_, bytes);
  return plan ? replay(plan, bytes)[d] : route;
}

const std::vector<double>& arrival_estimator::replay(const std::shared_ptr<const transfer_plan>& p, double bytes) {
  auto [it, fresh] = replays_.try_emplace(p.get());
  replayed& r = it->second;
  if (!fresh) return r.at;
  r.plan = p;
  r.at.assign(c_.device_count(), 0.0);
  const double chunk = bytes / std::max<std::uint32_t>(1, p->chunks);
  std::vector<double> done(p->hops.size(), 0.0), link_free(c_.links().size(), 0.0);
  for (std::size_t h = 0; h < p->hops.size(); ++h) {
    const transfer_hop& hop = p->hops[h];
    const link& l = c_.links()[hop.link];
    const double start = std::max(hop.after < 0 ? 0.0 : done[static_cast<std::size_t>(hop.after)], link_free[hop.link]);
    done[h] = link_free[hop.link] = start + l.latency + chunk / l.bandwidth;
    if (l.dst < c_.device_count()) r.at[l.dst] = std::max(r.at[l.dst], done[h]);
  }
  return r.at;
}

void arrival_estimator::commit(op_index u, device_index du, device_index d) {
  if (!planner_ || du == d) return;
  auto& sent = sent_to_[u];
  auto at = std::lower_bound(sent.begin(), sent.end(), d);
  if (at != sent.end() && *at == d) return;
  sent.insert(at, d);  // a new set: every candidate's arrival changes
  const std::size_t n_dev = c_.device_count();
  std::fill_n(memo_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(u) * n_dev),
              n_dev, std::numeric_limits<double>::quiet_NaN());
}

}  // namespace doppler::detail
