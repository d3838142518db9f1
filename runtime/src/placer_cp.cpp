// The DOPPLER critical-path teacher (docs/placers.md, "cp").
//
// Per step: among the ready ops (all producers placed) select one of maximum bottom level; place it
// on a device of minimum earliest start time
//   EST(v, d) = max(avail[d], max over producers u of end[u] + (dev[u] != d ? transfer(dev[u], d, bytes[u]) : 0))
// then end[v] = EST + op_time(v, d) and avail[d] = end[v]. With a transfer planner the transfer term
// is the planned-aware arrival of placer_arrivals.hpp instead of the per-edge route time. Ties (equal
// within a relative 1e-9) of either choice are broken by one std::mt19937_64 seeded with `seed`,
// drawing only when there is more than one candidate; every tied candidate is reported in cp_decision.

#include "placer_arrivals.hpp"

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/tolerance.hpp>

#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <random>

namespace doppler {

namespace {

struct ready_entry {
  double bl;
  op_index v;
  bool operator<(const ready_entry& o) const noexcept {  // max-heap: larger bl, then lower index first
    return bl != o.bl ? bl < o.bl : v > o.v;
  }
};

/// Tied ready ops of one exact bottom level, by index, in libstdc++'s order-statistic tree: the
/// k-th is found in O(log n), so thousands of tied ops are not popped and pushed back every step.
using tie_pool = __gnu_pbds::tree<op_index, __gnu_pbds::null_type, std::less<op_index>, __gnu_pbds::rb_tree_tag,
                                  __gnu_pbds::tree_order_statistics_node_update>;

}  // namespace

placement cp_place(const graph& g, const cluster& c, const cost_model& cm, std::uint64_t seed,
                   std::vector<cp_decision>* decisions, bool respect_memory, transfer_planner* transfers) {
  const auto n = static_cast<op_index>(g.size());
  const auto n_dev = static_cast<device_index>(c.device_count());
  detail::memory_tracker mem(g, c, respect_memory);
  mem.check_total("cp");
  detail::arrival_estimator arrivals(g, c, transfers);
  auto bl = detail::default_bottom_levels(g, c, cm);

  std::mt19937_64 rng(seed);
  auto pick = [&rng](std::size_t count) -> std::size_t {
    return count <= 1 ? 0 : std::uniform_int_distribution<std::size_t>(0, count - 1)(rng);
  };

  placement p;
  p.device.assign(n, 0);
  p.order.reserve(n);
  p.method = "cp";
  if (decisions) {
    decisions->clear();
    decisions->reserve(n);
  }
  std::vector<double> end(n, 0.0), avail(n_dev, 0.0), est(n_dev, 0.0);
  std::vector<std::uint32_t> missing(n);
  std::priority_queue<ready_entry> ready;
  for (op_index v = 0; v < n; ++v) {
    missing[v] = static_cast<std::uint32_t>(g.preds(v).size());
    if (missing[v] == 0) ready.push({bl[v], v});
  }

  std::vector<op_index> tied_ops;
  std::vector<device_index> tied_devs;
  // Ready ops live in the heap `ready`, or, once tied at the top, in `pool`: ops of bottom level
  // exactly pool_bl, the maximum of all ready ops, kept there across steps while they stay tied.
  // Nothing that becomes ready can rise above them: bl[u] = time(u) + max over consumers s of
  // (comm(u) + bl[s]) with non-negative terms, so no consumer's bottom level exceeds its producer's.
  tie_pool pool;
  double pool_bl = 0;
  while (!ready.empty() || !pool.empty()) {
    // Select: every ready op of maximum bottom level (nearly equal), one of them at random.
    const double top = pool.empty() ? ready.top().bl : pool_bl;
    pool_bl = top;
    tied_ops.clear();  // ops nearly but not exactly at top (rare): then all the tied ones, sorted
    while (!ready.empty() && nearly_equal(ready.top().bl, top)) {
      const ready_entry e = ready.top();
      ready.pop();
      if (e.bl == top && tied_ops.empty()) {
        pool.insert(e.v);
      } else {
        if (tied_ops.empty()) tied_ops.assign(pool.begin(), pool.end());
        tied_ops.push_back(e.v);
      }
    }
    op_index v;
    if (tied_ops.empty()) {  // every tied op at exactly `top`, in index order in the pool
      if (decisions) tied_ops.assign(pool.begin(), pool.end());
      auto it = pool.find_by_order(pick(pool.size()));
      v = *it;
      pool.erase(it);
    } else {  // mixed levels: the tied ops sorted by index, one drawn, the others back to the heap
      std::sort(tied_ops.begin(), tied_ops.end());
      v = tied_ops[pick(tied_ops.size())];
      for (op_index u : tied_ops)
        if (u != v) ready.push({bl[u], u});
      pool.clear();
    }

    // Place: earliest start time over the devices with room for v's output.
    double best = std::numeric_limits<double>::infinity();
    for (device_index d = 0; d < n_dev; ++d) {
      if (!mem.fits(d, v)) {
        est[d] = std::numeric_limits<double>::infinity();
        continue;
      }
      double t = avail[d];
      for (op_index u : g.preds(v)) t = std::max(t, arrivals.arrival(u, p.device[u], end[u], d));
      est[d] = t;
      best = std::min(best, t);
    }
    if (!std::isfinite(best)) mem.fail(v, "cp");
    tied_devs.clear();
    for (device_index d = 0; d < n_dev; ++d)
      if (std::isfinite(est[d]) && nearly_equal(est[d], best)) tied_devs.push_back(d);
    const device_index d = tied_devs[pick(tied_devs.size())];

    p.device[v] = d;
    p.order.push_back(v);
    mem.add(d, v);
    for (op_index u : g.preds(v)) arrivals.commit(u, p.device[u], d);
    end[v] = est[d] + cm.op_time(g[v], c[d]);
    avail[d] = end[v];
    if (decisions) decisions->push_back({v, d, tied_ops, tied_devs});
    for (op_index s : g.succs(v))
      if (--missing[s] == 0) ready.push({bl[s], s});
  }
  if (p.order.size() != n) throw error(errc::internal, "", "", "cp: not every op became ready (graph not acyclic?)");
  return p;
}

namespace detail {

namespace {

class cp_placer final : public placer {
 public:
  std::string_view name() const noexcept override { return "cp"; }
  placement place(const graph& g, const cluster& c, const cost_model& cm, const placer_options& opt) override {
    return cp_place(g, c, cm, opt.seed, nullptr, opt.respect_memory, opt.sim.transfers.get());
  }
};

}  // namespace

std::unique_ptr<placer> make_cp_placer() { return std::make_unique<cp_placer>(); }

}  // namespace detail

}  // namespace doppler
